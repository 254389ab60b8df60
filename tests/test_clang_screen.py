"""The macro budget in front of libclang (issue 25, isolation) counts every `#define` that
clang reads, however it is spelled: fuzz seed 28 hid one level of an 18-level doubling
chain behind `#\\fdefine`, the count stayed at 512 tokens and libclang segfaulted."""
from __future__ import annotations

import pytest

from cudalint.analysis.fp.clang_session import (MACRO_TOKENS_MAX, libclang_available,
                                                macro_expansion)

CHAIN = b"#define M0 -1\n" + b"".join(b"#define M%d M%d M%d\n" % (i, i - 1, i - 1)
                                      for i in range(1, 19))
# each spelling of the level-9 definition that clang 18 reads as `#define M9 M8 M8`
# (checked against libclang in test_each_spelling_is_a_define_to_clang)
SPELLINGS = {
    "form feed after #": (b"#define M9", b"#\x0cdefine M9"),
    "vertical tab": (b"#define M9", b"\x0b#\x0bdefine\x0bM9"),
    "comments": (b"#define M9", b"#/* a */define/**/M9"),
    "line splice": (b"#define M9", b"#de\\\nfine M9"),
    "line splice, blanks and CR LF": (b"#define M9", b"# \\  \r\ndefine M9"),
    "digraph": (b"#define M9", b"%:define M9"),
    "NUL": (b"#define M9", b"#\0define M9"),
    "lone CR line ends": (b"\n", b"\r"),
    "dollar in names": (b"M9", b"M$9"),
    "UTF-8 names": (b"M9", "M\u00e9".encode()),
    "UCN names": (b"M10 M9 M9", b"M10 M\\u00e9 M\\U000000E9"),
}


def _spelled(how: str) -> bytes:
    old, new = SPELLINGS[how]
    src = CHAIN.replace(old, new)
    if how == "UCN names":
        src = src.replace(b"#define M9", "#define M\u00e9".encode())
    return src


def test_the_plain_chain_is_over_budget():
    name, tokens = macro_expansion(CHAIN)
    assert name is not None and tokens > MACRO_TOKENS_MAX


@pytest.mark.parametrize("how", sorted(SPELLINGS))
def test_every_spelling_of_define_is_counted(how):
    name, tokens = macro_expansion(_spelled(how))
    assert name is not None and tokens > MACRO_TOKENS_MAX, (name, tokens)


def test_literals_and_comments_hide_nothing():
    # `"/*"` opens no comment; a real comment hides its text (`#define` inside it is none)
    assert macro_expansion(b'const char* s = "/*";\n' + CHAIN)[0] is not None
    hidden = CHAIN.replace(b"#define M9 M8 M8\n", b"/*\n#define M9 M8 M8\n*/\n")
    assert macro_expansion(hidden) == (None, 512)   # M9 unknown: one token
    # a trigraph `??=` is not `#` with C++17 (clang ignores it): that chain is no chain
    assert macro_expansion(CHAIN.replace(b"#define M9", b"??=define M9"))[0] is None


@pytest.mark.skipif(not libclang_available(), reason="libclang not installed")
@pytest.mark.parametrize("how", sorted(SPELLINGS))
def test_each_spelling_is_a_define_to_clang(how):
    """The spellings above are definitions to clang itself: levels 0 to 9 only (512
    terms, safe to parse), and `M9` (as spelled) must be -512."""
    from cudalint.analysis.fp.clang_session import _index, _parse
    src = _spelled(how)
    unit = src[:src.index(b"#define M10")]
    name = {"UTF-8 names": "M\u00e9", "UCN names": "M\\u00e9",
            "dollar in names": "M$9"}.get(how, "M9")
    unit += f"\nstatic_assert(({name}) == -512, \"\");\n".encode()
    _, idx = _index()
    errors = [d.spelling for d in _parse(idx, unit).diagnostics if d.severity >= 3]
    assert not errors, errors
