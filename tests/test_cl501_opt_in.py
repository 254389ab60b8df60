"""CL501 is off by default and never asks to pad the input of a small 3x3 stem (issue 20).

Measured on an H100 (bench/triage/gpu/results-newcorpus2/layers.json): padding a stem's
3-channel input to 4 gains only in FP16 channels-last, which cudalint cannot see from an
nn.Conv2d call, and a 3x3, 16-output stride-2 stem got slower in every precision."""
from __future__ import annotations

import json

from cudalint.cli import main
from cudalint.rule import all_rules

MODEL = """import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.small = nn.Conv2d(in_channels=3, out_channels=16, kernel_size=3, stride=2, padding=1)
        self.resnet = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3)
        self.proj = nn.Conv2d(64, 100, 3)
"""


def _run(capsys, path, *argv):
    code = main([str(path), "--output-format", "json", "--no-cache", *argv])
    out = capsys.readouterr().out
    return code, sorted((d["code"], d["location"]["row"]) for d in json.loads(out))


def test_cl501_is_off_by_default(tmp_path, capsys):
    assert not all_rules()["CL501"].default_enabled
    (tmp_path / "net.py").write_text(MODEL)
    code, found = _run(capsys, tmp_path / "net.py")
    assert [f for f in found if f[0] == "CL501"] == []


def test_selected_cl501_skips_the_small_3x3_stem(tmp_path, capsys):
    (tmp_path / "net.py").write_text(MODEL)
    code, found = _run(capsys, tmp_path / "net.py", "--select", "CL501")
    assert code == 1
    assert found == [("CL501", 8), ("CL501", 9)]      # 7x7 stem, 100 outputs; not line 7
