"""nvitop -1: GPUs in the two-line and compact layouts, processes, the host from the header."""

from __future__ import annotations

import dflash_postmortem as pm

COMPACT = """\
Thu Dec 14 00:34:36 2023
╒═════════════════════════════════════════════════════════════════════════════╕
│ NVITOP 1.3.2        Driver Version: 570.144       CUDA Driver Version: 12.8 │
├───────────────────────────────┬──────────────────────┬──────────────────────┤
│ GPU Fan Temp Perf Pwr:Usg/Cap │         Memory-Usage │ GPU-Util  Compute M. │
╞═══════════════════════════════╪══════════════════════╪══════════════════════╪════════════════════════════════════════╕
│   0 30%  35C  P8   14W / 300W │  22.69MiB / 47.99GiB │      0%      Default │ MEM: ▏ 0.0%                            │
├───────────────────────────────┼──────────────────────┼──────────────────────┼────────────────────────────────────────┤
│   1 30%  36C  P8   11W / 300W │  17.38MiB / 47.99GiB │     97%      Default │ MEM: ▏ 0.0%                            │
╘═══════════════════════════════╧══════════════════════╧══════════════════════╧════════════════════════════════════════╛
╒══════════════════════════════════════════════════════════════════════════════════════════════════╕
│ Processes:                                                                         user@node16   │
│ GPU     PID      USER  GPU-MEM %SM  %CPU  %MEM  TIME  COMMAND                                    │
╞══════════════════════════════════════════════════════════════════════════════════════════════════╡
│   1  205220 C ikissa+   497MiB  98   0.0   0.3  0:42  python3 ex4.py                             │
╘══════════════════════════════════════════════════════════════════════════════════════════════════╛
"""


def test_compact_rows_and_processes(tmp_path):
    (tmp_path / "nvitop.txt").write_text(COMPACT)
    inc = pm.load_incident(tmp_path)
    g = inc.gpus.set_index("gpu")
    assert g.loc[1, "util_gpu_pct"] == 97.0 and g.loc[0, "fan_pct"] == 30.0
    assert round(g.loc[0, "memory_total_mib"], 2) == 49141.76 and round(g.loc[0, "memory_used_mib"], 2) == 22.69
    assert set(g["host"]) == {"node16"} and str(g["time"].iloc[0]) == "2023-12-14 00:34:36+00:00"
    p = inc.gpu_processes.iloc[0]
    assert (p["gpu"], p["pid"], p["user"], p["used_memory_mib"], p["sm_pct"], p["process_name"]) == (
        1, 205220, "ikissa+", 497.0, 98.0, "python3 ex4.py")
    rep = inc.load_report.files[0]
    assert rep.format == "nvitop" and rep.balanced
