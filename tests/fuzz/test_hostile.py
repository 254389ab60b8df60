"""A few hostile inputs of issue 25 (``hostile.py``) in CI, with fixed seeds: huge launch
shapes, doubling macro chains (24 and 40 levels included), Python templates, notebooks,
and their fixes. The long campaign runs them at random (``fuzz/README.md``)."""
from __future__ import annotations

import random

import pytest

import fuzzlib as fl
import hostile


@pytest.mark.parametrize("seed", range(3))
def test_launch_shapes(seed):
    data = hostile.gen_launch(random.Random(seed)).encode()
    fl.check_cuda(data)
    fl.check_fix(data, "cuda")


@pytest.mark.parametrize("depth", [16, 24, 40])
def test_macro_chains(depth):
    for form_seed in range(2):
        data = hostile.gen_macro_chain(random.Random(form_seed), depth).encode()
        fl.check_cuda(data)


@pytest.mark.parametrize("seed", range(3))
def test_python_templates(seed):
    data = hostile.gen_template_python(random.Random(seed)).encode()
    fl.check_python(data)
    fl.check_fix(data, "python")


@pytest.mark.parametrize("seed", range(3))
def test_notebooks(seed, tmp_path):
    fl.check_notebook(hostile.gen_notebook(random.Random(seed)), tmp_path)


def test_corrupt_is_deterministic():
    seeds = fl.CUDA_SEEDS[:5]
    a = hostile.corrupt(random.Random(7), seeds[0], seeds)
    assert a == hostile.corrupt(random.Random(7), seeds[0], seeds)
