"""dmon and pmon captures: a time-of-day-only file dated from the incident, midnight, a cut last line."""

from __future__ import annotations

import datetime as dt

import pandas as pd
from support.captures import only_report, rows, ts, write

import dflash_postmortem as pm


def test_dmon_time_of_day_takes_date_from_incident(incident):
    df = rows(incident.gpus, "logs/dmon_um.txt")
    rep = incident.load_report["logs/dmon_um.txt"]
    assert rep.read == 604 and rep.skipped["repeated header line"] == 26 and rep.parsed == 576
    assert any("date 2026-11-30" in a for a in rep.assumptions)
    assert df.iloc[0]["time"] == ts("2026-11-30 05:20:20")
    last = df.iloc[-1]
    assert last["time"] == ts("2026-11-30 05:25:10")
    assert (last["gpu"], last["util_gpu_pct"], last["util_mem_pct"], last["memory_used_mib"], last["dmon_bar1"]) == (1, 81, 55, 4155, 4156)


def test_dmon_truncated_and_midnight(tmp_path, bundled_dir):
    lines = (bundled_dir / "logs" / "dmon_um.txt").read_text().splitlines()
    late = [ln.replace(" 05:", " 23:", 1) for ln in lines[2:6]]
    early = [ln.replace(" 05:", " 00:", 1) for ln in lines[6:8]]
    p = write(tmp_path, "dmon.txt", lines[:2] + late + early + [lines[8][:20]])  # " 05:20:23       0   "
    inc = pm.load_nvidia_smi(p, date=dt.date(2026, 11, 29))
    rep = only_report(inc)
    assert rep.parsed == 7
    cut = inc.gpus.iloc[-1]  # the killed capture's last line keeps its time and GPU
    assert (cut["gpu"], cut["line"]) == (0, 9) and pd.isna(cut["util_gpu_pct"])
    assert inc.gpus.iloc[0]["time"] == pd.Timestamp("2026-11-29 23:20:20", tz="UTC")
    assert inc.gpus.iloc[-2]["time"] == pd.Timestamp("2026-11-30 00:20:22", tz="UTC")
    assert any("midnight" in a for a in rep.assumptions)


def test_pmon_whose_later_header_lost_its_pid_column(tmp_path, fixtures_dir):
    """A pmon capture whose second header came out garbled (the pid column gone, as a cut or a
    flipped byte leaves it): its rows are read under the header they have, nothing raises."""
    lines = (fixtures_dir / "smi-dmon" / "h200-590.48.01-pmon-load-dash-util.txt").read_text().splitlines()
    garbled = lines[0].replace("pid", "pxd", 1)
    p = write(tmp_path, "pmon.txt", lines[:5] + [garbled, lines[1], "    0      10291     C      -      -      -      -      -      -    memhog"])
    inc = pm.load_nvidia_smi(p, date=dt.date(2026, 11, 29))
    rep = only_report(inc)
    # two headers, each with its units line; three rows under the first, one under the garbled one
    assert (rep.read, rep.skipped["header line"], rep.parsed) == (8, 4, 4)
