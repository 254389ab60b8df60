"""Which opaque placeholders a kernel text holds (sources.python.units.opaque_in).

A Python file's extractor keeps one ``origins`` map for all its placeholders; each kernel
string keeps the entries its text holds. Asking every origin of the file whether the text
holds it was quadratic: a 125 KB fuzzed file (tests/fuzz/slow/python__2816d639cd, 5,256
kernel strings) spent 30 of its 37 s CPU there (issue 25)."""
from __future__ import annotations

import random

from cudalint.sources.python.units import OPAQUE_PREFIX, opaque_in


def _tok(n: int) -> str:
    return f"{OPAQUE_PREFIX}{n}__"


def test_same_entries_in_the_same_order_as_asking_each_origin():
    rng = random.Random(7)
    for _ in range(2000):
        origins = {_tok(n): f"origin {n}" for n in range(rng.randrange(1, 30))}
        pieces = list(origins) + [_tok(n) for n in range(30, 34)] + \
            ["_", "x", "7", "__", " ", OPAQUE_PREFIX, "3__"]
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        want = {t: o for t, o in origins.items() if t in text}
        got = opaque_in(text, origins)
        assert list(got.items()) == list(want.items()), text


def test_tokens_that_share_underscores_are_all_found():
    # origins are made in token order (resolve._Opaque.token)
    origins = {_tok(1): "a", _tok(2): "b", _tok(12): "c"}
    text = _tok(12)[:-2] + _tok(2)          # ..._12__cudalint_opaque_2__: both, overlapping
    assert list(opaque_in(text + _tok(1), origins).items()) == \
        [(_tok(1), "a"), (_tok(2), "b"), (_tok(12), "c")]


class _NoScan(dict):
    """An origins map that may be looked up but not walked through."""

    def items(self):
        raise AssertionError("every origin of the file asked for one kernel text")

    __iter__ = items


def test_reads_the_tokens_of_the_text_not_every_origin():
    origins = _NoScan({_tok(n): f"o{n}" for n in range(20000)})
    assert opaque_in(f"int x = {_tok(5)} + {_tok(19999)};", origins) == \
        {_tok(5): "o5", _tok(19999): "o19999"}
    assert opaque_in("no placeholder here", origins) == {}
