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
    "no-break space": (b"#define M9", b"\xc2\xa0#\xc2\xa0define M9"),
    "ideographic space": (b"#define M9", "\u3000#define\u3000M9".encode()),
    # fuzz seed 41: clang reports "source file is not valid UTF-8" and reads the directive
    "bytes that are not UTF-8": (b"#define M9", b"\xc0\x80#define M9"),
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


def test_byte_order_marks_hide_no_define():
    # fuzz seed 33: two BOMs before the chain's first line; the text libclang got had
    # lost one, read `#define M0 (1.0)` and expanded 3 x 65,536 tokens (a hang), while
    # the screen, reading the bytes, counted M0 as an unknown name (65,536: in budget)
    chain = b"#define M0 (1.0)\n" + b"".join(b"#define M%d M%d M%d\n" % (i, i - 1, i - 1)
                                             for i in range(1, 17))
    assert macro_expansion(chain)[0] is not None
    for marks in (b"\xef\xbb\xbf", b"\xef\xbb\xbf" * 2):
        name, tokens = macro_expansion(marks + chain)
        assert name is not None and tokens > MACRO_TOKENS_MAX, (marks, name, tokens)


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
    errors = [d.spelling for d in _parse(idx, unit).diagnostics if d.severity >= 3
              and d.spelling != "source file is not valid UTF-8"]     # (and goes on)
    assert not errors, errors


def _nested(depth: int, arg: str = "-1") -> bytes:
    for _ in range(depth):
        arg = f"D({arg})"
    return arg.encode()


def test_function_like_macros_are_bounded_by_their_calls():
    """`D(D(...D(-1)...))`, 18 deep, segfaulted libclang (2**18 terms); `F_i(x) =
    F_{i-1}(F_{i-1}(x))` to F5 took it to 1.3 GB and std::bad_alloc (both kept in
    tests/fuzz/regressions/cuda/libclang_*function_macro*.cu)."""
    nested = b"#define D(x) x x\nint v = " + _nested(18) + b";\n"
    assert macro_expansion(nested)[0] == "D"
    chain = b"#define F0(x) x x\n" + b"".join(
        b"#define F%d(x) F%d(F%d(x))\n" % (i, i - 1, i - 1) for i in range(1, 6))
    assert macro_expansion(chain + b"int v = F5(-1);\n")[0] == "F5"
    # the bound is the expansion where nothing is lost: 2**k copies of one token
    assert macro_expansion(b"#define D(x) x x\nint v = " + _nested(3, "1") + b";\n") \
        == (None, 8)
    # variadic: `a` once, the rest (with their commas) twice
    assert macro_expansion(b"#define V(a, ...) a __VA_ARGS__ __VA_ARGS__\n"
                           b"int v = V(1, 2, 3, 4);\n") == (None, 11)
    # a call far into a large file is seen
    late = b"#define D(x) x x\n" + b"int a = 1;\n" * 20000 + b"int v = " + _nested(18) + b";\n"
    assert macro_expansion(late)[0] == "D"


def test_dispatch_macros_as_real_code_nests_them_stay_under_the_budget():
    """apex-style dispatch: `__VA_ARGS__` 4 times, nested three deep around a 150-token
    body (4**3 * 150 = 9,600 tokens; apex group_norm's nested dispatch macros bound at
    19,476 over /tmp/real): analysed."""
    dispatch = (b"#define DISPATCH(VALUE, NAME, ...) [&] { \\\n"
                b"  if (VALUE >= 8) { constexpr int NAME = 8; return __VA_ARGS__(); } \\\n"
                b"  if (VALUE >= 4) { constexpr int NAME = 4; return __VA_ARGS__(); } \\\n"
                b"  if (VALUE >= 2) { constexpr int NAME = 2; return __VA_ARGS__(); } \\\n"
                b"  constexpr int NAME = 1; return __VA_ARGS__(); }()\n")
    body = b"[&] { " + b"x += y; " * 37 + b"}"
    call = b"DISPATCH(a, A, [&] { DISPATCH(b, B, [&] { DISPATCH(c, C, " + body + \
        b"); }); });\n"
    name, tokens = macro_expansion(dispatch + b"void f() { " + call + b"}\n")
    assert name is None and 4 ** 3 * 150 <= tokens < 20_000


def test_a_cycle_does_not_hide_a_chain_behind_it():
    # fuzz seed 34: M12 names M16, which (through M15..M13) names M12 again. Inside M12's
    # expansion M16 is blocked; from the kernel it is not, and expands to 98,352 tokens.
    # The screen bounded M16 inside M12 (as 16 tokens) and kept that bound for the use.
    chain = b"#define M0 (1.0)\n" + b"".join(b"#define M%d M%d M%d\n" % (i, i - 1, i - 1)
                                             for i in range(1, 17))
    src = chain.replace(b"#define M12 M11 M11\n", b"#define M12 M11 M16 M15 M15\n")
    src += b"__global__ void k(float* y) { y[0] = M16; }\n"
    name, tokens = macro_expansion(src)
    assert name is not None and tokens > MACRO_TOKENS_MAX, (name, tokens)
    # a short cycle stays small (A expands to 3 tokens; a bound may count more, never
    # less, as a macro's own bound is reused inside an expansion that blocks it)
    name, tokens = macro_expansion(b"#define A B x\n#define B A y\nint a = A;\n")
    assert name is None and 3 <= tokens <= 4
