"""Wall-clock text in the forms tools print it (clock_text.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from dflash_postmortem.loaders.clock_text import parse_date_line, parse_wall_clock

T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


@pytest.mark.parametrize(("text", "utc"), [
    ("Tue Dec  1 03:04:05 UTC 2026", "2026-12-01 03:04:05"),
    ("Tue Jan  5 01:02:04 AM UTC 2021", "2021-01-05 01:02:04"),  # jc's Ubuntu 20.04 fixture
    ("Tue Mar 23 08:45:29 PM UTC 2021", "2021-03-23 20:45:29"),
    ("Di 1. Dez 03:04:05 CET 2026", "2026-12-01 02:04:05"),
    ("mar. 01 déc. 2026 03:04:05 CET", "2026-12-01 02:04:05"),
    ("2026-12-01T03:04:05+00:00", "2026-12-01 03:04:05"),
    ("Tue, 01 Dec 2026 03:04:05 +0000", "2026-12-01 03:04:05"),
    ("Mon Aug  3 09:12:51 PDT 2020", "2020-08-03 16:12:51"),  # jc's generic/date.out
    ("Wed 29 Mar 2017 09:30:20 AM EDT", "2017-03-29 13:30:20"),  # a script(1) header
])
def test_date_output_in_its_locale_forms(text, utc):
    assert parse_wall_clock(text).utc() == T(utc)


def test_a_zone_that_is_not_certain_is_left_to_the_incident():
    wall = parse_wall_clock("2026年 12月 01日 星期二 03:04:05 CST")  # China or US Central?
    assert wall.naive == pd.Timestamp("2026-12-01 03:04:05") and wall.offset_min is None and wall.utc() is None


def test_a_listing_row_is_not_a_date_line():
    assert parse_date_line("kuser01   1749  1043  0 Oct26 ?        00:00:00 -bash") is None
    assert parse_date_line("Tue Dec  1 03:04:05 UTC 2026").utc() == T("2026-12-01 03:04:05")


@pytest.mark.parametrize(("word", "month"), [
    ("kwi", 4), ("Mär", 3), ("avr.", 4), ("févr.", 2), ("ene", 1), ("giu", 6), ("out", 10), ("paź", 10),
    ("мая", 5), ("4月", 4), (" 12月", 12), ("13月", None), ("foo", None),
])
def test_month_number_reads_the_locales_abbreviations(word, month):
    from dflash_postmortem.loaders.clock_text import month_number
    assert month_number(word) == month


@pytest.mark.parametrize(("text", "seconds"), [
    ("2m3s", 123.0), ("5m", 300.0), ("19h", 68400.0), ("2d3h", 183600.0), ("44s", 44.0),  # kubectl
    ("5 minutes ago", 300.0), ("About an hour ago", 3600.0), ("Less than a second ago", 0.5),  # docker
    ("Up 2 hours", 7200.0), ("Up About a minute", 60.0), ("3 weeks ago", 1814400.0),
    ("5min ago", 300.0), ("1h 2min ago", 3720.0), ("1 weeks 2 days ago", 777600.0),  # systemd
    ("<invalid>", None), ("<unknown>", None), ("Created", None), ("5 parsecs", None),
])
def test_relative_ages(text, seconds):
    from dflash_postmortem.loaders.clock_text import parse_age

    assert parse_age(text) == seconds
