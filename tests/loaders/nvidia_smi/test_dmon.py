"""dmon and pmon captures: a time-of-day-only file dated from the incident, midnight, a cut last line."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
from support.captures import columnar_and_lines, only_report, rows, ts, write

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


def _dmon_variants(dmon: list[str], pmon: list[str]) -> dict[str, tuple[str, bool]]:
    """Captures made from the bundled dmon and pmon as a user's file may be: (text, read by the
    columnar path)."""
    bad_index = dmon[2].replace("       0 ", "       x ", 1)
    idle = "    1          -     -      -      -      -      -      -      -      -      -    -"
    return {
        "stream": ("\n".join(dmon) + "\n", True),
        "bad_gpu_index": ("\n".join([*dmon[:5], bad_index, *dmon[5:]]) + "\n", True),
        "pmon_idle_rows": ("\n".join([*pmon[:3], idle, *pmon[3:], idle]) + "\n", True),
        "cut_last_line": ("\n".join(dmon) + "\n" + dmon[2][:20], False),
        "blank_line": ("\n".join([*dmon[:6], "", *dmon[6:]]) + "\n", False),
        "error_line": ("\n".join([*dmon[:6], "Failed to initialize NVML: Driver/library version mismatch",
                                  *dmon[6:]]) + "\n", False),
        "tabs": ("\n".join(dmon).replace("       0 ", "\t0 ") + "\n", False),
        # a second run's command line, as many words as a sample has columns (11)
        "command_line": ("\n".join([*dmon[:6], "nvidia-smi dmon -s um -o T -d 1 -i 0,1 -c", *dmon[6:]]) + "\n", False),
    }


@pytest.mark.parametrize("variant", ["stream", "bad_gpu_index", "pmon_idle_rows", "cut_last_line", "blank_line",
                                     "error_line", "tabs", "command_line"])
def test_columnar_read_equals_the_line_by_line_read(variant, bundled_dir, tmp_path, monkeypatch):
    """A plain dmon/pmon stream is cut into columns by Arrow in one pass; its frames and load
    report are what the line-by-line reader gives, and anything else goes line by line."""
    from dflash_postmortem.loaders.nvidia_smi import dmon
    from dflash_postmortem.loaders.registry import LoadContext

    text, columnar = _dmon_variants((bundled_dir / "logs" / "dmon_um.txt").read_text().splitlines(),
                                    (bundled_dir / "snap" / "pmon_um.txt").read_text().splitlines())[variant]
    path = tmp_path / "gpu.log"
    path.write_text(text)
    fast, took = columnar_and_lines(dmon, path, lambda: LoadContext(date=dt.date(2026, 11, 30)), monkeypatch)
    assert took == columnar
    rep = fast.load_report.files[0]
    if variant == "stream":
        assert rep.read == 604 and rep.skipped == {"header line": 2, "repeated header line": 26} and rep.parsed == 576
        assert fast.gpus["time"].iloc[-1] == ts("2026-11-30 05:25:10")
    if variant == "bad_gpu_index":
        reason = "expected a GPU index (and a PID) in the first columns"
        assert rep.parsed == 576 and len(fast.gpus) == 576 and rep.examples[reason] == [6]
    if variant == "pmon_idle_rows":
        assert rep.skipped["pmon row with no process on the GPU"] == 2
        assert rep.examples["pmon row with no process on the GPU"] == [4, 8]
        assert list(fast.gpu_processes["line"]) == [3, 5, 6, 7]


@pytest.mark.parametrize("texts", [
    ["13:54:35", "00:00:00", "23:59:59", "99:00:00"],  # read from the bytes
    ["13:54:35", "12:60:00"], ["1:02:03", "13:54:35"], ["13:54:35", None], ["ab:cd:ef"], [],  # through pandas
])
def test_times_of_day_are_what_to_timedelta_reads(texts):
    from dflash_postmortem.loaders.nvidia_smi.dmon import _times_of_day

    text = pd.Series(texts, dtype="string")
    pd.testing.assert_series_equal(_times_of_day(text), pd.to_timedelta(text, errors="coerce"))
