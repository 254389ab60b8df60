"""Condense run.sh's ncu CSVs and timings into one markdown table (summary.md)."""
from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

out = Path(sys.argv[1])
SHORT = {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "ld wavefronts",
         "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "st wavefronts",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "ld conflicts",
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "st conflicts",
         "smsp__inst_executed_op_shared_ld.sum": "ld instr",
         "smsp__inst_executed_op_shared_st.sum": "st instr",
         "gpu__time_duration.sum": "ns"}
rows = ["| variant | kernel | " + " | ".join(SHORT.values()) + " |",
        "|---|---|" + "---:|" * len(SHORT)]
for f in sorted(out.glob("ncu_ts_*.csv")):
    text = f.read_text()
    text = text[text.index('"ID"'):] if '"ID"' in text else ""
    kernels: dict[str, dict[str, str]] = {}
    for r in csv.DictReader(io.StringIO(text)):
        name = r["Kernel Name"].split("(")[0].replace("void ", "")
        kernels.setdefault(f'{r["ID"]} {name}', {})[r["Metric Name"]] = r["Metric Value"]
    for k, m in kernels.items():
        rows.append(f"| {f.stem[7:]} | {k.split(' ', 1)[1]} | " +
                    " | ".join(m.get(s, "?") for s in SHORT) + " |")
timings = (out / "timings.txt").read_text() if (out / "timings.txt").exists() else ""
(out / "summary.md").write_text("## ncu (one launch per kernel)\n\n" + "\n".join(rows) +
                                "\n\n## timings (ms per launch unless named)\n\n```\n" +
                                timings + "```\n")
