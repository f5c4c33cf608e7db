"""One clock: zones, manual offsets from incident.toml, and offsets estimated between sources."""

import shutil
import warnings

import pandas as pd

from dflash_postmortem import load_incident
from dflash_postmortem.clock import align


def test_localize_reads_wall_clock_in_zone():
    t = align.localize(pd.Series(pd.to_datetime(["2026-11-30 06:20:22"])), "Europe/Berlin")
    assert t.iloc[0] == pd.Timestamp("2026-11-30 05:20:22", tz="UTC")


def test_manual_offset_from_incident_toml(seed_dir, seed_incident, tmp_path):
    root = tmp_path / "seed"
    shutil.copytree(seed_dir, root)
    with open(root / "incident.toml", "a") as f:
        f.write('\n[offsets]\n"logs/train_opt.log" = -3.5\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = load_incident(root)
    assert inc.load_report.offsets == {"logs/train_opt.log": -3.5}

    def first(i, src):
        return i.metrics.loc[i.metrics["source"] == src, "time"].min()

    assert first(seed_incident, "logs/train_opt.log") - first(inc, "logs/train_opt.log") == pd.Timedelta(seconds=3.5)
    assert first(seed_incident, "logs/train.log") == first(inc, "logs/train.log")


def test_estimated_offsets_on_the_bundled_capture(bundled_incident):
    off = align.estimate_offsets(bundled_incident)
    same = off[off["method"].str.startswith("same train/tok_per_s")]
    # log lines print whole seconds, wandb keeps sub-seconds: one clock, ~0.5 s apart
    assert len(same) == 3 and same["seconds"].between(0.3, 0.7).all()
    assert same["samples"].min() >= 50
    rise = off[(off["method"].str.startswith("model-loading")) & (off["reference"] == "logs/smi_stream.csv")]
    # the model's first MiB land 2-3 s after "Loading target model": same clock, no offset to apply
    assert len(rise) == 1 and 1.0 < rise["seconds"].iloc[0] < 5.0


def test_no_sources_no_offsets():
    from dflash_postmortem import Incident

    assert align.estimate_offsets(Incident()).empty


def test_times_of_day_are_dated_from_the_nearest_stated_date_and_the_midnights_passed():
    import datetime as dt

    import numpy as np

    day = np.datetime64
    # dmon -o T: no reading states a date; the incident's gives the first, a drop of over 12 h is a midnight
    got = align.date_times_of_day([82800, 86000, 600, 43000], slack_s=12 * 3600, start=dt.date(2026, 11, 30))
    assert got.tolist() == [day("2026-11-30"), day("2026-11-30"), day("2026-12-01"), day("2026-12-01")]
    # a log: time-of-day stamps before the first full date count back from it, those after count on
    got = align.date_times_of_day([82800, 3600, 7200, 600], [None, None, "2026-12-02", None], slack_s=3600)
    assert got.tolist() == [day("2026-12-01"), day("2026-12-02"), day("2026-12-02"), day("2026-12-03")]
    # a date that cannot be read dates nothing; no date and no start: nothing is dated
    got = align.date_times_of_day([10, 20], ["NaT", None], stated=[True, False], slack_s=3600)
    assert np.isnat(got).all() and np.isnat(align.date_times_of_day([10, 5], slack_s=1)).all()

