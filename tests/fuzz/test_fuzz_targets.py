"""Property-based fuzzing of every entry of cudalint (see fuzzlib.py for the properties).

Short and derandomized in CI; ``CUDALINT_FUZZ_LONG=1`` turns every test into a long,
random run (README.md).
"""
from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzlib as fl

LONG = bool(os.environ.get("CUDALINT_FUZZ_LONG"))
SCALE = fl.fuzz_scale()


def budget(ci: int):
    """Settings for a test that runs ``ci`` examples in CI."""
    if LONG:
        n = int(os.environ.get("CUDALINT_FUZZ_EXAMPLES") or 20 * ci)
        return settings(max_examples=n, deadline=None, suppress_health_check=list(HealthCheck),
                        print_blob=True)
    return settings(max_examples=ci, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


OPS = fl.ops_strategy(scale=SCALE)
seeds = st.integers(0, 1 << 30)


def pick(corpus: list[bytes], i: int) -> bytes:
    return corpus[i % len(corpus)] if corpus else b""


# ---------------------------------------------------------------------------------------
# .cu text


@budget(60)
@given(i=seeds, ops=OPS, notices=st.booleans())
def test_cuda_mutated_fixtures(i, ops, notices):
    data = fl.mutate(pick(fl.CUDA_SEEDS, i), ops, fl.CUDA_SEEDS, fl.CUDA_SNIPPETS, SCALE)
    fl.check_cuda(data, notices=notices)


@budget(60)
@given(seed=seeds, ops=fl.ops_strategy(max_ops=2, scale=SCALE), notices=st.booleans())
def test_cuda_generated_kernels(seed, ops, notices):
    src = fl.gen_kernel(random.Random(seed)).encode()
    fl.check_cuda(fl.mutate(src, ops, fl.CUDA_SEEDS, fl.CUDA_SNIPPETS, SCALE), notices=notices)


@budget(40)
@given(i=seeds, ops=OPS, extra=st.text(max_size=40), at=st.integers(0, 1 << 20))
def test_cuda_editor_buffer(i, ops, extra, at):
    """What an editor sends is a str: lone surrogates, NULs and all."""
    text = fl.mutate(pick(fl.CUDA_SEEDS, i), ops, fl.CUDA_SEEDS, fl.CUDA_SNIPPETS,
                     SCALE).decode("utf-8", "surrogateescape")
    at %= len(text) + 1
    fl.check_cuda_text(text[:at] + extra + text[at:])


@budget(40)
@given(data=st.binary(max_size=2000))
def test_cuda_random_bytes(data):
    fl.check_cuda(data)


# ---------------------------------------------------------------------------------------
# Python files with kernel strings


@budget(60)
@given(i=seeds, ops=OPS)
def test_python_mutated_fixtures(i, ops):
    data = fl.mutate(pick(fl.PYTHON_SEEDS, i), ops, fl.PYTHON_SEEDS + fl.CUDA_SEEDS,
                     fl.PY_SNIPPETS, SCALE)
    fl.check_python(data)


@budget(60)
@given(seed=seeds, cuda_from=st.integers(0, 1 << 30), ops=fl.ops_strategy(max_ops=3),
       py_ops=fl.ops_strategy(max_ops=2))
def test_python_generated_modules(seed, cuda_from, ops, py_ops):
    rng = random.Random(seed)
    if cuda_from % 3 == 0:
        cuda = fl.gen_kernel(rng)
    else:
        cuda = fl.mutate(pick(fl.CUDA_SEEDS, cuda_from), ops, fl.CUDA_SEEDS,
                         fl.CUDA_SNIPPETS).decode("utf-8", "replace").replace("\0", "")
    src = fl.gen_python(rng, cuda).encode("utf-8", "surrogatepass")
    fl.check_python(fl.mutate(src, py_ops, fl.PYTHON_SEEDS, fl.PY_SNIPPETS))


# ---------------------------------------------------------------------------------------
# ptxas logs

PTXAS_CU = [p for p in sorted(fl.FIXTURES.glob("CL30*/*.cu"))]


@budget(80)
@given(seed=seeds, i=seeds, ops=fl.ops_strategy(max_ops=4), generated=st.booleans())
def test_ptxas_log_parser(seed, i, ops, generated):
    base = fl.gen_ptxas(random.Random(seed)).encode() if generated else pick(fl.PTXAS_SEEDS, i)
    fl.check_ptxas(fl.mutate(base, ops, fl.PTXAS_SEEDS, (b"ptxas info    : ", b"'", b"\n"),
                             SCALE))


@budget(25)
@given(seed=seeds, i=seeds, ops=fl.ops_strategy(max_ops=3), generated=st.booleans())
def test_ptxas_log_rules(seed, i, ops, generated, tmp_path_factory):
    base = fl.gen_ptxas(random.Random(seed)).encode() if generated else pick(fl.PTXAS_SEEDS, i)
    cu = PTXAS_CU[seed % len(PTXAS_CU)].read_bytes()
    fl.check_ptxas(fl.mutate(base, ops, fl.PTXAS_SEEDS, (b"ptxas info    : ",)), cu=cu,
                   tmpdir=tmp_path_factory.mktemp("ptxas"))


# ---------------------------------------------------------------------------------------
# pyproject.toml / cudalint.toml

_KEYS = ["select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude",
         "respect-gitignore", "arch", "block-size", "occupancy-threshold",
         "coalescing-threshold", "severity", "ptxas", "defines", "parse-notices",
         "parse_notices", "block_size", "unknown"]
_PTXAS_KEYS = ["enabled", "log", "nvcc", "flags", "include-dirs", "bogus"]

scalars = st.one_of(
    st.integers(-(1 << 70), 1 << 70), st.integers(-3, 2000),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.sampled_from(["CL", "CL2", "CL202", "ALL", "cl104", "E501", "", "sm_90", "sm_0",
                     "compute_86", "sm_90a", "sm_", "sm_1000000000000000000000", "error",
                     "warning", "info", "**/*.cu", "[", "/", "..", "*", "fatal"]),
    st.text(max_size=12),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.sampled_from(_PTXAS_KEYS + ["CL202", "CL104", "N", "*.cu", "a b"])
                    | st.text(max_size=6), inner, max_size=4)), max_leaves=8)


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return toml_str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{toml_str(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_str(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@budget(80)
@given(table=st.dictionaries(st.sampled_from(_KEYS), values, max_size=6),
       ptxas=st.none() | st.dictionaries(st.sampled_from(_PTXAS_KEYS), values, max_size=3),
       layout=st.integers(0, 3))
def test_config_generated(table, ptxas, layout, tmp_path_factory):
    body = "".join(f"{toml_str(k)} = {toml_value(v)}\n" for k, v in table.items())
    sub = "" if ptxas is None else "".join(f"{toml_str(k)} = {toml_value(v)}\n"
                                           for k, v in ptxas.items())
    if layout == 0:
        text, name = f"[project]\nname = 'x'\n[tool.cudalint]\n{body}", "pyproject.toml"
        if ptxas is not None:
            text += f"[tool.cudalint.ptxas]\n{sub}"
    elif layout == 1:
        text, name = body + (f"[ptxas]\n{sub}" if ptxas is not None else ""), "cudalint.toml"
    elif layout == 2:
        text, name = f"[tool.cudalint]\n{body}", ".cudalint.toml"
    else:
        text, name = f"tool = {toml_value(table or 1)}\n", "cudalint.toml"
    fl.check_config(text.encode("utf-8", "surrogatepass"), name,
                    tmp_path_factory.mktemp("cfg"))


@budget(60)
@given(i=seeds, ops=fl.ops_strategy(max_ops=4), name=st.sampled_from(
    ["pyproject.toml", "cudalint.toml", ".cudalint.toml"]))
def test_config_mutated(i, ops, name, tmp_path_factory):
    seeds_ = fl.TOML_SEEDS + [b"[tool.cudalint]\nselect = [\"CL2\"]\nblock-size = [32, 8]\n"
                              b"defines = { N = 4 }\nseverity = { CL202 = \"error\" }\n"
                              b"[tool.cudalint.ptxas]\nlog = [\"*.log\"]\n"
                              b"[tool.cudalint.per-file-ignores]\n\"k.cu\" = [\"CL1\"]\n"]
    data = fl.mutate(pick(seeds_, i), ops, seeds_,
                     (b"[tool.cudalint]\n", b" = ", b"\"", b"[", b"]", b"{", b"}", b"nan",
                      b"inf", b"-1", b"99999999999999999999999", b"\n", b"'''", b"#"))
    fl.check_config(data, name, tmp_path_factory.mktemp("cfg"))


# ---------------------------------------------------------------------------------------
# --fix


@budget(40)
@given(i=seeds, ops=OPS, seed=seeds, generated=st.booleans())
def test_fix_cuda(i, ops, seed, generated):
    base = fl.gen_kernel(random.Random(seed)).encode() if generated \
        else pick(fl.CUDA_SEEDS, i)
    data = fl.mutate(base, ops, fl.CUDA_SEEDS, fl.CUDA_SNIPPETS, SCALE)
    fl.check_fix(data, "cuda")


@budget(40)
@given(i=seeds, ops=fl.ops_strategy(max_ops=4), seed=seeds, generated=st.booleans())
def test_fix_python(i, ops, seed, generated):
    rng = random.Random(seed)
    base = fl.gen_python(rng, fl.gen_kernel(rng)).encode() if generated \
        else pick(fl.PYTHON_SEEDS, i)
    data = fl.mutate(base, ops, fl.PYTHON_SEEDS, fl.PY_SNIPPETS + fl.CUDA_SNIPPETS[:60])
    fl.check_fix(data, "python")


# ---------------------------------------------------------------------------------------
# the result cache: any bytes in an entry read back as a result or as a miss


def _cache_seed() -> bytes:
    from cudalint.cache import Cache
    tmp = Path(tempfile.mkdtemp(prefix="cudalint-fuzz-"))
    src = next(p for p in fl.CUDA_SEEDS if b"__shfl" in p) if any(
        b"__shfl" in p for p in fl.CUDA_SEEDS) else fl.CUDA_SEEDS[0]
    result = fl.lint_bytes("k.cu", src, fl.ALL, "cuda")
    cache = Cache(tmp)
    cache.put("0" * 64, result)
    cache.save()
    return cache.index_path.read_bytes()


CACHE_SEED = _cache_seed()


@budget(50)
@given(ops=fl.ops_strategy(max_ops=4))
def test_cache_entry(ops, tmp_path_factory):
    data = fl.mutate(CACHE_SEED, ops, [CACHE_SEED],
                     (b"null", b"[]", b"{}", b"1", b"\"x\"", b"-1", b"1e999", b"NaN", b",",
                      b"\"lines\": []", b"\"d\": [1]", b"\"loc\": \"x\""))
    fl.check_cache_entry(data, tmp_path_factory.mktemp("cache"))


@pytest.mark.parametrize("text", [b"", b"null", b"[]", b"{}", b'{"path": 1}',
                                  b'{"path": "a", "d": [], "lines": [], "loc": 1}',
                                  b'{"path": "a", "d": [null], "lines": {}, "loc": 1}',
                                  b'{"path": "a", "d": [], "lines": {"x": "y"}, "loc": 1}'])
def test_cache_entry_shapes(text, tmp_path):
    fl.check_cache_entry(text, tmp_path)


# ---------------------------------------------------------------------------------------
# build files: setup.py, CMakeLists.txt / *.cmake, pyproject.toml

BUILD_SNIPPETS = tuple(w.encode() for w in fl.FLAG_WORDS) + (
    b"(", b")", b"[[", b"]]", b"[=[", b"]=]", b"#[[", b"\"", b"${", b"}", b"\n", b"$<",
    b">", b"[", b"]", b"{", b"'''", b'"""', b"=", b",", b"\\")


@budget(40)
@given(seed=seeds, i=seeds, ops=fl.ops_strategy(max_ops=3), generated=st.booleans(),
       name=st.sampled_from(["CMakeLists.txt", "flags.cmake"]))
def test_build_cmake(seed, i, ops, generated, name, tmp_path_factory):
    base = fl.gen_cmake(random.Random(seed)).encode() if generated or not fl.CMAKE_SEEDS \
        else pick(fl.CMAKE_SEEDS, i)
    data = fl.mutate(base, ops, fl.CMAKE_SEEDS, BUILD_SNIPPETS)
    fl.check_build(data, name, tmp_path_factory.mktemp("cmake"))


@budget(40)
@given(seed=seeds, i=seeds, ops=fl.ops_strategy(max_ops=3), generated=st.booleans())
def test_build_pyproject(seed, i, ops, generated, tmp_path_factory):
    base = fl.gen_build_toml(random.Random(seed)).encode() if generated \
        else pick(fl.BUILD_TOML_SEEDS, i)
    data = fl.mutate(base, ops, fl.BUILD_TOML_SEEDS, BUILD_SNIPPETS)
    fl.check_build(data, "pyproject.toml", tmp_path_factory.mktemp("toml"))


@budget(40)
@given(seed=seeds, i=seeds, ops=fl.ops_strategy(max_ops=3), generated=st.booleans())
def test_build_setup_py(seed, i, ops, generated, tmp_path_factory):
    base = fl.gen_setup(random.Random(seed)).encode() if generated or not fl.SETUP_SEEDS \
        else pick(fl.SETUP_SEEDS, i)
    data = fl.mutate(base, ops, fl.SETUP_SEEDS, BUILD_SNIPPETS + fl.PY_SNIPPETS)
    fl.check_build(data, "setup.py", tmp_path_factory.mktemp("setup"))


# ---------------------------------------------------------------------------------------
# the language server: editor sessions (didOpen + didChange) and initializationOptions

import server_target  # noqa: E402

needs_server = pytest.mark.skipif(not server_target.available(),
                                  reason="cudalint.server is not in this checkout")


@needs_server
@budget(25)
@given(seed=seeds)
def test_server_editor_session(seed):
    server_target.check_server_script(server_target.random_script(random.Random(seed)))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats() |
    st.text(max_size=10) | st.sampled_from(["CL1", "ALL", "sm_90", "pull", "push", "auto"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["settings", "cudalint", "select", "blockSize", "block-size",
                         "debounce", "timeout", "diagnosticMode", "unsafeFixes",
                         "configuration", "arch", "ptxas", "defines", "x"]) |
        st.text(max_size=8), inner, max_size=4), max_leaves=8)


@needs_server
@budget(60)
@given(raw=json_values)
def test_server_options(raw):
    server_target.check_options(raw)
