"""The parse model's integer constants, as real headers write them."""
from __future__ import annotations

from cudalint.config import Settings
from cudalint.context import UnitContext
from cudalint.sources.base import SourceFile, Unit


def constants(text: str) -> dict[str, int]:
    unit = Unit(SourceFile("c.cu", text, "cuda"), text)
    return UnitContext(unit, Settings()).model.constants


def test_defines_with_comments_and_continuations():
    env = constants("#define N 4096        // matrix side\n"
                    "#define TILE (32)  /* a warp */\n"
                    "#define AREA (TILE * \\\n      TILE)\n"
                    "#define NAME \"x\"  // not an integer\n"
                    "constexpr int K = N / TILE;  // 128\n"
                    "enum { A = 3, B, C = K + 1 };\n")
    assert env["N"] == 4096 and env["TILE"] == 32 and env["AREA"] == 1024
    assert env["K"] == 128 and (env["A"], env["B"], env["C"]) == (3, 4, 129)
    assert "NAME" not in env
