"""`top -b` whose snapshots give only a time of day (ps_snapshots.py, format top-batch): dated from
incident.toml's date, else from the other sources' times, each assumption said."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pandas as pd

import dflash_postmortem as pm

TOP = Path(__file__).resolve().parents[1] / "fixtures" / "real-world" / "top" / "jc-ubuntu2010-top-b-n1.txt"  # top - 23:06:21


def _load(folder: Path) -> pm.Incident:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(folder)


def test_dated_from_the_day_the_other_sources_span_that_holds_its_time(tmp_path):
    shutil.copyfile(TOP, tmp_path / "top.txt")
    # the other sources run from one evening past midnight: 23:06 falls on the first day
    (tmp_path / "train.log").write_text("2021-03-05 23:30:00 [r] step 1 loss 2.0 tok/s 100\n"
                                        "2021-03-06 00:10:00 [r] step 2 loss 2.0 tok/s 100\n", encoding="utf-8")
    inc = _load(tmp_path)
    rep = next(f for f in inc.load_report.files if f.path == "top.txt")
    assert rep.format == "top-batch"
    assert inc.processes["first_seen"].dropna().unique().tolist() == [pd.Timestamp("2021-03-05 23:06:21", tz="UTC")]
    assert any("the other sources' times" in a for a in rep.assumptions)


def test_incident_date_wins_and_alone_it_stays_undated(tmp_path):
    shutil.copyfile(TOP, tmp_path / "top.txt")
    assert _load(tmp_path).processes["first_seen"].isna().all()
    (tmp_path / "incident.toml").write_text('date = "2021-03-07"\n', encoding="utf-8")
    inc = _load(tmp_path)
    assert inc.processes["first_seen"].dropna().unique().tolist() == [pd.Timestamp("2021-03-07 23:06:21", tz="UTC")]
