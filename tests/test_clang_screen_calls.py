"""The macro screen's cheap paths (issue 24) say what the full count says: the calls of
function-like macros in a source are bounded by reading only their own tokens
(clang_session._largest_call), and a source with no `define` spelled, spliced or made
of universal character names is passed without reading its lines."""
from __future__ import annotations

import random

from cudalint.analysis.fp import clang_session as cs

_PIECES = [b"F(", b"G(", b"H", b"F", b"(", b")", b",", b" ", b"\n", b"x", b"1", b"FF(",
           b"aF(", b"F$(", b"F\t (", b"G (", b"__VA_ARGS__", b"'", b"\"", b"+", b"H(",
           b"U(", b"U (F("]
_DEFINES = (b"#define F(a, b) a b a\n#define G(...) __VA_ARGS__ __VA_ARGS__ G\n"
            b"#define H 1 2 3\n#define FF(x) x\n")


def _full(lines: bytes, bound, params, cap):
    """What the screen did before: every token of the source read."""
    return cs._bounded(cs._TOKEN.findall(lines), bound, params, (), cap)[2]


def _setup(cap: int):
    bound = {b"F": (1, {b"a": 2, b"b": 1}), b"G": (2, {b"__VA_ARGS__": 2}),
             b"H": (3, {}), b"FF": (0, {b"x": 1})}
    # U: function-like, its bound dropped (macro_expansion's provisional bounds)
    params = {b"F": [b"a", b"b"], b"G": [b"__VA_ARGS__"], b"FF": [b"x"], b"U": [b"x"]}
    return bound, params


def test_calls_bounded_from_their_own_tokens_as_from_every_token():
    rng = random.Random(24)
    for n in range(3000):
        lines = b"".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 60)))
        cap = rng.choice([5, 40, 1 << 16])
        bound, params = _setup(cap)
        assert cs._largest_call(lines, bound, params, cap) == \
            _full(lines, bound, params, cap), (n, lines, cap)


def test_whole_sources_count_as_before(monkeypatch):
    rng = random.Random(25)
    srcs = [_DEFINES + b"int v = " + b"".join(rng.choice(_PIECES) for _ in range(
        rng.randint(0, 80))) + b";\n" for _ in range(300)]
    now = [cs.macro_expansion(src) for src in srcs]
    monkeypatch.setattr(cs, "_largest_call", _full)
    assert now == [cs.macro_expansion(src) for src in srcs]
    assert len({largest for _, largest in now}) > 1     # calls decide some of them


def test_a_define_made_of_universal_character_names_or_a_splice_is_read():
    chain = b"#define M0 -1\n" + b"".join(b"#define M%d M%d M%d\n" % (i, i - 1, i - 1)
                                          for i in range(1, 19))
    for spelled in (b"#\\u0064efine", b"#\\U00000064efine", b"#d\\\nefine"):
        src = chain.replace(b"#define", spelled)
        assert b"define" not in src
        assert cs.macro_expansion(src)[0] is not None, spelled
    assert cs.macro_expansion(b"int a = 1; // \\\\ no splice\nint b;\n") == (None, 0)
