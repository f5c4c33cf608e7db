"""gpustat's text output: a snapshot per header, `??` missing, processes in every form."""

from __future__ import annotations

import dflash_postmortem as pm

WATCH = """\
node07                   Thu Nov 30 05:20:58 2026  570.133.20
[0] NVIDIA H200          | 65°C,  30 %, 100 % (E:   0 %  D:   0 %),  650 / 700 W | 120000 / 143771 MB | alice:python/4242(118000M) bob(1000M)
[1] NVIDIA H200          | 40°C,  ?? %,   0 % |     1 / 143771 MB |
node07                   Thu Nov 30 05:21:00 2026  570.133.20
[0] NVIDIA H200          | 66°C,  30 %,  99 % (E:   0 %  D:   0 %),  640 / 700 W | 120000 / 143771 MB | alice:python/4242(118000M)
[1] NVIDIA H200          | 40°C,  ?? %,   0 % |     1 / 143771 MB |
"""


def test_a_watch_gives_a_snapshot_per_header(tmp_path):
    (tmp_path / "gpustat.txt").write_text(WATCH)
    (tmp_path / "incident.toml").write_text('timezone = "Europe/Berlin"\n')
    inc = pm.load_incident(tmp_path)
    g = inc.gpus.sort_values(["time", "gpu"])
    assert g["time"].astype(str).unique().tolist() == ["2026-11-30 04:20:58+00:00", "2026-11-30 04:21:00+00:00"]
    first = g.iloc[0]
    assert (first["host"], first["temp_c"], first["fan_pct"], first["util_gpu_pct"], first["power_w"],
            first["power_limit_w"], first["memory_used_mib"]) == ("node07", 65.0, 30.0, 100.0, 650.0, 700.0, 120000.0)
    assert g.iloc[1]["fan_pct"] != g.iloc[1]["fan_pct"]  # `??`: missing, never 0
    p = inc.gpu_processes
    assert p["pid"].tolist()[::2] == [4242, 4242] and p["pid"].isna().tolist() == [False, True, False]
    assert p["user"].tolist() == ["alice", "bob", "alice"] and p["process_name"].tolist()[0] == "python"
    assert p["used_memory_mib"].tolist() == [118000.0, 1000.0, 118000.0]
    assert any("read as its user" in a for r in inc.load_report.files for a in r.assumptions)
    rep = next(r for r in inc.load_report.files if r.path == "gpustat.txt")
    assert rep.format == "gpustat" and rep.balanced and rep.parsed == 6
