"""`ps` and `top` in the forms the corpus holds (tests/fixtures/real-world/ps, top): LSTART headed
STARTED, two command columns, rows cut short, top's wide view and iterations, BusyBox; and
snapshot separators of any kind."""

from __future__ import annotations

import warnings

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem.loaders.ps_snapshots import parse_start, sniff_ps

T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_ps_snapshots(path, **kw)


def test_lstart_headed_started_and_elapsed_with_days(fixtures_dir):
    inc = _load(fixtures_dir / "ps" / "supportconfig-ps-eo-lstart-etime-days.txt")
    p = inc.processes.set_index("pid")
    assert p.loc[1, "started"] == T("2025-06-16 14:23:09") and p.loc[8, "command"] == "[kworker/0:0H-events_highpri]"
    rep = inc.load_report.files[0]
    assert rep.skipped["comment line"] == 1 and rep.skipped["markdown fence"] == 1 and rep.balanced


def test_a_command_column_that_is_not_the_last(fixtures_dir):
    p = _load(fixtures_dir / "ps" / "centreon-etime-comm-and-args-two-command-columns.txt").processes.set_index("pid")
    assert p.loc[1, "command"] == "/usr/lib/systemd/systemd --switched-root --system --deserialize 22"  # args, not comm
    q = _load(fixtures_dir / "ps" / "moler-ps-ef-cmd-before-time-column.txt").processes.set_index("pid")
    assert q.loc[3598, "command"] == "avahi-autoipd: [ens4] callout dispatcher" and q.loc[3598, "ppid"] == 3597


def test_a_row_cut_short_keeps_its_pid(fixtures_dir):
    p = _load(fixtures_dir / "ps" / "docker-exec-ps-aux-httpd-cut.txt").processes.set_index("pid")
    assert list(p.index) == [1, 7, 8, 9]
    assert pd.isna(p.loc[9, "command"]) and p.loc[9, "user"] == "apache"  # missing, not empty


def test_top_iterations_dated_by_the_incident(fixtures_dir):
    p = _load(fixtures_dir / "top" / "jc-centos77-top-b-n3-three-iterations.txt", date="2019-10-26").processes.set_index("pid")
    assert (p.loc[1, "first_seen"], p.loc[1, "last_seen"], p.loc[1, "snapshots"]) == (
        T("2019-10-26 11:24:50"), T("2019-10-26 11:24:56"), 3)
    assert p.loc[465, "first_seen"] == p.loc[465, "last_seen"] == T("2019-10-26 11:24:53")


def test_top_wide_view_and_scaled_sizes(fixtures_dir):
    p = _load(fixtures_dir / "top" / "jc-centos77-top-allfields-wide.txt").processes.set_index("pid")
    assert (p.loc[2225, "command"], p.loc[2225, "ppid"], p.loc[2225, "rss_kib_max"]) == ("top", 1884, 2.2 * 1024)


def test_busybox_ps(fixtures_dir):
    p = _load(fixtures_dir / "ps" / "busybox-ps-root-prompt-braced-names.txt").processes.set_index("pid")
    assert p.loc[51, "command"].startswith("{tigervncserver} /usr/bin/perl") and p.loc[36, "user"] == "daemon"


def test_snapshot_separators_of_any_kind(tmp_path):
    head = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND"
    row = "root        4242 99.0  1.0 912345 401234 ?       Rl   03:00   1:00 python train.py"
    (tmp_path / "ps.txt").write_text(
        f"Tue Dec  1 03:04:05 UTC 2026\n{head}\n{row}\n"
        "==========\n"
        f"--- 03:05:05 ---\n{head}\n{row}\n\n"
        f"1796094365\n{head}\n{row}\n")  # date +%s: 2026-12-01 03:06:05 UTC
    inc = _load(tmp_path / "ps.txt")
    p = inc.processes.iloc[0]
    assert (p["first_seen"], p["last_seen"], p["snapshots"]) == (T("2026-12-01 03:04:05"), T("2026-12-01 03:06:05"), 3)
    assert p["started"] == T("2026-12-01 03:00")
    assert inc.load_report.files[0].balanced


def test_threads_of_ps_eLf_are_one_process(tmp_path):
    (tmp_path / "eLf.txt").write_text(
        "UID          PID    PPID     LWP  C NLWP STIME TTY          TIME CMD\n"
        "root        4242       1    4242 99    3 03:00 ?        00:01:00 python train.py\n"
        "root        4242       1    4243  0    3 03:00 ?        00:00:00 python train.py\n"
        "root        4242       1    4244  0    3 03:00 ?        00:00:00 python train.py\n")
    p = _load(tmp_path / "eLf.txt").processes
    assert len(p) == 1 and p["snapshots"].iloc[0] == 3 and p["ppid"].iloc[0] == 1


def test_start_forms():
    assert parse_start("10:11AM", T("2026-12-01 12:00"), "UTC")[0] == T("2026-12-01 10:11")
    assert parse_start("8Dec20", None, "UTC")[0] == T("2020-12-08")


def test_a_session_that_kills_is_a_transcript_not_a_listing(fixtures_dir):
    path = fixtures_dir / "terminal" / "pwn-college-ps-aux-then-kill-decoy.txt"
    assert sniff_ps(path, path.read_bytes()) < 0.5
    path = fixtures_dir / "ps" / "runc-ps-ef-two-prompts-same-container.txt"
    assert sniff_ps(path, path.read_bytes()) >= 0.8
