"""fptypes (CL402-CL404) on sources that make libclang pathologically slow: the unit is
left to silence with a note, and ordinary nesting of '<' is still analysed."""
import pytest

from cudalint.analysis.fp import clang_session, fptypes

pytestmark = pytest.mark.skipif(not clang_session.libclang_available(), reason="no libclang")


def _unit(chain: str) -> bytes:
    return ("__global__ void k(float* p, float x) {\n"
            f"    p[0] = x * 0.1;\n    p[1] = {chain}x;\n}}\n").encode()


def test_long_angle_chain_not_parsed():
    # 8 undeclared `a <` in a row: clang's parse is exponential in the chain
    facts = fptypes.fp_facts(_unit("a<" * 8 + "+"))
    assert facts.promotions == [] and "not analysed" in (facts.note or "")


def test_short_angle_chain_still_analysed():
    # 4 in a row (as deep as nested templates go in real code): x * 0.1 is still found
    facts = fptypes.fp_facts(_unit("a<" * 4 + "+"))
    assert facts.note is None
    assert [p.text for p in facts.promotions] == ["0.1"]
