"""Timestamp forms of query CSV captures: what spreadsheets, `date +%s` and nvidia-smi itself write."""

from __future__ import annotations

import pandas as pd
import pytest
from support.captures import only_report, write

import dflash_postmortem as pm


def restamp(stream: list[str], fmt) -> list[str]:
    """The stream with its timestamp column rewritten by `fmt(Timestamp) -> str`."""
    out = [stream[0]]
    for line in stream[1:]:
        stamp, rest = line.split(", ", 1)
        out.append(f"{fmt(pd.Timestamp(stamp.replace('/', '-')))}, {rest}")
    return out


@pytest.mark.parametrize("form, fmt, zoned", [
    ("the form '%d.%m.%Y %H:%M:%S'", lambda t: t.strftime("%d.%m.%Y %H:%M:%S"), False),  # a German spreadsheet
    ("the form '%m/%d/%Y %I:%M:%S %p'", lambda t: t.strftime("%m/%d/%Y %I:%M:%S %p"), False),  # a US one
    ("ISO 8601", lambda t: t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3], False),
    ("epoch seconds (UTC)", lambda t: str(int(t.tz_localize("UTC").timestamp())), True),  # date +%s
    ("epoch milliseconds (UTC)", lambda t: str(int(t.tz_localize("UTC").timestamp() * 1000)), True),
])
def test_timestamp_forms(tmp_path, stream, form, fmt, zoned):
    p = write(tmp_path, "restamped.csv", restamp(stream, fmt))
    inc = pm.load_nvidia_smi(p, timezone="Europe/Berlin")
    rep = only_report(inc)
    assert len(inc.gpus) == len(stream) - 1 and inc.gpus["time"].notna().all()
    assert f"timestamps read as {form}" in rep.assumptions
    first = pd.Timestamp("2026-11-30 05:20:20", tz="Europe/Berlin" if not zoned else "UTC").tz_convert("UTC")
    assert inc.gpus["time"].iloc[0].floor("s") == first
    # A zone the stamp carries (epoch) is not overridden by the incident's.
    assert (("no time zone in file, read as Europe/Berlin" in rep.assumptions) is not zoned)


def test_a_stamp_outside_the_columns_form_is_missing_and_named(tmp_path, stream):
    lines = restamp(stream[:6], lambda t: t.strftime("%d.%m.%Y %H:%M:%S"))
    lines[3] = "yesterday" + lines[3][len("30.11.2026 05:20:21"):]
    inc = pm.load_nvidia_smi(write(tmp_path, "one-odd.csv", lines))
    only_report(inc)
    odd = inc.gpus[inc.gpus["line"] == 4].iloc[0]
    assert pd.isna(odd["time"]) and odd["state"] == "time=yesterday" and odd["memory_total_mib"] == 143771
