"""Unit byte offsets -> file character offsets (what every finding's position goes through)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cudalint.sources.base import SourceFile, Unit


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab\n\t ") + ["é", "Ω", "🙂", "\u2028", "\x00"]),
               max_size=80))
def test_char_offset_matches_a_full_table(text):
    unit = Unit(file=SourceFile("x.cu", text, "cuda"), text=text)
    table = []
    for i, ch in enumerate(text):
        table.extend([i] * len(ch.encode("utf-8")))
    table.append(len(text))
    for b in range(len(table) + 2):
        assert unit.char_offset(b) == table[min(b, len(table) - 1)]
