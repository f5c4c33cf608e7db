"""ps/top listings: lifetimes on the bundled capture, the real-world fixtures, odd forms."""

from __future__ import annotations

import tomllib
import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.ps_snapshots import (
    format_columns,
    parse_etime,
    parse_start,
    sniff_ps,
)

T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_ps_snapshots(path, **kw)


@pytest.fixture(scope="module")
def procs(bundled_dir):
    return _load(bundled_dir / "logs" / "ps_aux_snapshots.txt").processes


def test_stale_sleeper_alive_through_everything(procs):
    s = procs[procs["pid"] == 579].iloc[0]
    assert s["command"] == "python3 -c import time; time.sleep(100000)"
    assert (s["first_seen"], s["last_seen"]) == (T("2026-11-30 05:20:20"), T("2026-11-30 05:25:01"))
    assert s["snapshots"] == 29
    assert s["started"] == T("2026-11-30 05:20:00")  # START 05:20 on the snapshot's date


def test_each_trainer_lifetime(procs):
    trainers = procs[procs["command"].str.startswith("python3 /srv/dflash")].set_index("run")
    assert trainers["pid"].to_dict() == {"baseline": 598, "regressed": 971, "fixed": 1391}
    assert trainers.loc["baseline", "first_seen"] == T("2026-11-30 05:20:30")
    assert trainers.loc["baseline", "last_seen"] == T("2026-11-30 05:21:50")
    assert trainers.loc["regressed", "last_seen"] == T("2026-11-30 05:22:50")
    assert trainers.loc["fixed", "first_seen"] == T("2026-11-30 05:23:20")
    # no trainer between the kill and the relaunch: the only python left is the sleeper
    gap = T("2026-11-30 05:23:10")
    alive = procs[(procs["first_seen"] <= gap) & (procs["last_seen"] >= gap)]
    assert alive["pid"].tolist() == [579]


def test_report_balanced(bundled_dir):
    rep = _load(bundled_dir / "logs" / "ps_aux_snapshots.txt").load_report.files[0]
    assert rep.balanced and rep.read == 141 and rep.skipped["header line"] == 29


def test_huge_vsz_columns_shift_but_rows_parse(fixtures_dir):
    inc = _load(fixtures_dir / "ps" / "ps-aux-grep-python-huge-vsz.txt")
    p = inc.processes.set_index("pid")
    assert len(p) == 7
    assert p.loc[86177, "command"] == "python mcp_rl_training.py"
    assert p.loc[86177, "rss_kib_max"] == 22108948.0 and p.loc[86177, "state"] == "Sl+"
    rep = inc.load_report.files[0]
    assert rep.skipped["shell prompt line"] == 1 and rep.balanced


def test_zh_locale_start_with_a_date(fixtures_dir):
    inc = _load(fixtures_dir / "ps" / "ps-aux-grep-python-zh-locale-start.txt")
    assert len(inc.processes) == 5
    assert any("7月24" in a for a in inc.load_report.files[0].assumptions)  # reported, not crashed
    t, _ = parse_start("7月24", T("2025-08-01 12:00"), "UTC")
    assert t == T("2025-07-24")


def test_forest_parents_and_defunct(fixtures_dir):
    p = _load(fixtures_dir / "ps" / "ps-forest-defunct-torch-distributed.txt").processes.set_index("pid")
    assert len(p) == 17
    assert p.loc[2816, "ppid"] == 2791 and p.loc[2970, "ppid"] == 2835 and p.loc[6295, "ppid"] == 6294
    assert pd.isna(p.loc[2780, "ppid"])
    zombies = sorted(p.index[p["state"] == "Z"])
    assert zombies == [2834, 2836, 2837, 2964, 2971]
    assert p.loc[2834, "command"] == "python3.11"


def test_top_zombie(fixtures_dir):
    p = _load(fixtures_dir / "ps" / "top-zombie-fairseq-train.txt").processes.iloc[0]
    assert (p["pid"], p["user"], p["command"], p["state"], p["cpu_pct_max"]) == (32503, "ana", "fairseq-train", "Z", 99.7)


def test_eo_columns_with_etime_and_dated_snapshots(tmp_path):
    f = tmp_path / "eo.txt"
    f.write_text(
        "Sun Nov 30 05:20:00 UTC 2026\n"
        "    PID    PPID    PGID     SID USER         ELAPSED STAT COMMAND\n"
        "    100       1     100     100 root      1-02:03:04 Ss   /sbin/init splash\n"
        "    200     100     200     200 alice          05:00 Rl   torchrun --nproc-per-node 2 train.py\n"
        "# 2026-11-30T05:21:00Z\n"
        "    PID    PPID    PGID     SID USER         ELAPSED STAT COMMAND\n"
        "    200     100     200     200 alice          06:00 Zl   torchrun --nproc-per-node 2 train.py\n"
        "garbage line here\n"
    )
    inc = _load(f)
    p = inc.processes.set_index("pid")
    assert p.loc[100, "started"] == T("2026-11-30 05:20:00") - pd.Timedelta("1 days 02:03:04")
    assert p.loc[200, "started"] == T("2026-11-30 05:15:00")
    assert (p.loc[200, "first_seen"], p.loc[200, "last_seen"]) == (T("2026-11-30 05:20:00"), T("2026-11-30 05:21:00"))
    assert p.loc[200, "state"] == "Zl" and p.loc[200, "ppid"] == 100 and p.loc[200, "sid"] == 200
    rep = inc.load_report.files[0]
    assert rep.balanced and sum(v for k, v in rep.skipped.items() if k.startswith("expected")) == 1


def test_parsers():
    assert parse_etime("1-02:03:04") == 93784 and parse_etime("05:00") == 300 and parse_etime("x") is None
    t, note = parse_start("Sep03", T("2025-09-10 16:00"), "UTC")
    assert t == T("2025-09-03") and note
    assert parse_start("2024", T("2025-01-01"), "UTC")[0] is None


def test_sniff(bundled_dir, fixtures_dir):
    # the corpus's ps samples the kit reads as ps listings (its manifest says which: headerless rows
    # it does not recognise are "none")
    manifest = tomllib.loads((fixtures_dir.parent / "expected" / "ps.toml").read_text(encoding="utf-8"))
    listings = [fixtures_dir / name for name, entry in manifest.items() if entry["format"] == "ps-snapshots"]
    assert len(listings) >= 10
    for path in [bundled_dir / "logs" / "ps_aux_snapshots.txt", *sorted(listings)]:
        # a lone row quoted in prose is claimed, weakly (test_a_ps_row_quoted_in_prose_is_read)
        least = 0.25 if "in-prose" in path.name else 0.8
        assert sniff_ps(path, path.read_bytes()[:65536]) >= least, path.name
    assert sniff_ps(bundled_dir / "logs" / "train.log", (bundled_dir / "logs" / "train.log").read_bytes()) == 0.0


def test_a_wrapper_that_execs_stays_one_process(tmp_path):
    """`setsid nohup python ...` is listed under the wrapper's command until it execs (same PID);
    the two forms are one process, not a vanished one and a new one. The lines are those a
    stall replay's sampler caught (tests/test_replay_scenarios.py), shortened."""
    head = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND"
    cmd = "/opt/torch/.venv/bin/python3 -m dflash_postmortem.replay.train --run-name stalled --seconds 720"
    (tmp_path / "ps.txt").write_text(
        f"# 2026-11-30T09:18:17Z\n{head}\n"
        f"root        7850  0.0  0.0   2800  1536 ?        Ss   09:18   0:00 setsid nohup {cmd}\n"
        f"# 2026-11-30T09:18:18Z\n{head}\n"
        f"root        7850 95.0  1.2 912345 401234 ?       Rsl  09:18   0:01 {cmd}\n"
        f"# 2026-11-30T09:18:31Z\n{head}\n"
        f"root        7850 12.0  1.2 912345 401234 ?       Ssl  09:18   0:09 {cmd}\n"
        # a different command under a PID is still another process (the PID was reused)
        f"# 2026-11-30T09:18:40Z\n{head}\n"
        f"root        7850  1.0  0.0  12345  2345 ?        S    09:18   0:00 python3 other.py\n")
    inc = _load(tmp_path / "ps.txt")
    p = inc.processes
    assert len(p) == 2
    trainer = p[p["command"] == cmd].iloc[0]
    assert (trainer["first_seen"], trainer["last_seen"]) == (T("2026-11-30 09:18:17"), T("2026-11-30 09:18:31"))
    assert trainer["snapshots"] == 3
    rep = inc.load_report.files[0]
    assert any(a.startswith("1 process(es) listed first as an exec wrapper") for a in rep.assumptions)


def test_a_shell_that_execs_its_last_command_is_that_process(tmp_path):
    """`bash -c 'cd /w && setsid nohup python ... > log 2>&1'` is listed under the same PID first
    as the shell, then (the shell exec'd its last command) as the trainer: one process. A stall
    replay's sampler on a loaded machine caught the shell's form (tests/replay/test_scenario_stall.py)."""
    head = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND"
    cmd = "/opt/torch/.venv/bin/python3 -m dflash_postmortem.replay.train --run-name stalled --seconds 720"
    (tmp_path / "ps.txt").write_text(
        f"# 2026-11-30T09:18:17Z\n{head}\n"
        f"root        7850  0.0  0.0   2800  1536 ?        Ss   09:18   0:00 bash -c cd /w && setsid nohup {cmd} "
        "> /w/logs/train.log 2>&1 < /dev/null\n"
        f"# 2026-11-30T09:18:18Z\n{head}\n"
        f"root        7850 95.0  1.2 912345 401234 ?       Rsl  09:18   0:01 {cmd}\n"
        # a shell whose string only mentions a word of it is another process
        f"# 2026-11-30T09:18:20Z\n{head}\n"
        "root        7900  0.0  0.0   2800  1536 ?        Ss   09:18   0:00 bash -c echo python3\n"
        f"# 2026-11-30T09:18:21Z\n{head}\n"
        "root        7900  0.0  0.0   2800  1536 ?        Ss   09:18   0:00 python3\n")
    p = _load(tmp_path / "ps.txt").processes
    trainer = p[p["pid"] == 7850]
    assert trainer["command"].tolist() == [cmd] and trainer["first_seen"].tolist() == [T("2026-11-30 09:18:17")]
    assert len(p[p["pid"] == 7900]) == 2


def test_a_process_listed_as_its_short_name_while_exiting_stays_one(tmp_path):
    """After SIGTERM the kernel drops the command line first: `ps` shows `[python3]` for a moment."""
    head = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND"
    cmd = "/opt/torch/.venv/bin/python3 -m dflash_postmortem.replay.train --run-name stalled"
    (tmp_path / "ps.txt").write_text(
        f"# 2026-11-30T09:22:40Z\n{head}\n"
        f"root        8650 10.0  1.2 912345 432784 ?       Ssl  09:22   0:09 {cmd}\n"
        f"# 2026-11-30T09:22:54Z\n{head}\n"
        f"root        8650 10.0  1.2 912345 432784 ?       Ssl  09:22   0:09 {cmd}\n"
        f"# 2026-11-30T09:22:55Z\n{head}\n"
        f"root        8650  0.0  0.0      0     0 ?        Zsl  09:22   0:09 [python3]\n")
    inc = _load(tmp_path / "ps.txt")
    p = inc.processes
    assert p["command"].tolist() == [cmd]
    assert p["last_seen"].iloc[0] == T("2026-11-30 09:22:55")
    assert any("listed as [name] while exiting" in a for a in inc.load_report.files[0].assumptions)


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


def test_fuser_v_names_each_process_once_with_the_files_it_holds(tmp_path):
    (tmp_path / "fuser.txt").write_text(
        "Cannot stat file /proc/2674/fd/1023: Permission denied\n"
        "                     USER        PID ACCESS COMMAND\n"
        "/dev/nvidia0:        root       1025 F...m Xorg\n"
        "                     bob        6943 F...m python\n"
        "/dev/nvidia-uvm:     bob        6943 F.... python\n"
        "/mnt:                root     kernel mount /mnt\n")
    inc = _load(tmp_path / "fuser.txt")
    p = inc.processes.set_index("pid")
    assert sorted(p.index) == [1025, 6943]
    assert p.loc[6943, "files"] == "/dev/nvidia-uvm,/dev/nvidia0" and p.loc[6943, "snapshots"] == 1
    assert (p.loc[1025, "user"], p.loc[1025, "command"]) == ("root", "Xorg")
    rep = inc.load_report.files[0]
    assert rep.balanced and set(rep.skipped) == {
        "fuser warning (a process it could not read)", "header line", "fuser: used by the kernel (no process)"}


def test_lsof_names_each_process_once_with_the_devices_it_holds(tmp_path):
    (tmp_path / "lsof.txt").write_text(
        "$ lsof -n -w /dev/nvidia*\n"
        "lsof: WARNING: can't stat() fuse.gvfsd-fuse file system /run/user/1000/gvfs\n"
        "      Output information may be incomplete.\n"
        "COMMAND    PID USER   FD   TYPE  DEVICE SIZE/OFF  NODE NAME\n"
        "python   12345  bob  mem    CHR   195,0           1234 /dev/nvidia0\n"
        "python   12345  bob   5u    CHR 195,255      0t0  1233 /dev/nvidiactl\n"
        "python   12345  bob   7u    CHR   508,0      0t0  1240 /dev/nvidia-uvm\n"
        "Xorg      1025 root   9u    CHR   195,0      0t0  1234 /dev/nvidia0\n"
        "not an lsof row\n")
    inc = _load(tmp_path / "lsof.txt")
    p = inc.processes.set_index("pid")
    assert sorted(p.index) == [1025, 12345]
    assert p.loc[12345, "files"] == "/dev/nvidia-uvm,/dev/nvidia0,/dev/nvidiactl"
    assert (p.loc[12345, "user"], p.loc[12345, "command"], p.loc[12345, "snapshots"]) == ("bob", "python", 1)
    assert (p.loc[1025, "user"], p.loc[1025, "files"]) == ("root", "/dev/nvidia0")
    rep = inc.load_report.files[0]
    assert rep.balanced and rep.parsed == 4
    assert rep.skipped["lsof warning (a file system it could not read)"] == 2
    assert sum(n for k, n in rep.skipped.items() if "lsof row" in k) == 1


def test_a_ps_row_quoted_in_prose_is_read(tmp_path):
    path = tmp_path / "issue.txt"
    path.write_text(
        "State:\n"
        "bob      13620  0.3  0.5 1394124 253628 pts/9  D    19:18   0:00 python train.py\n"
        "\n"
        "The above is my running command and status.\n")
    assert 0.2 < sniff_ps(path, path.read_bytes()) < 0.5  # above plain console text, below any log
    p = _load(path).processes
    assert (p["pid"].iloc[0], p["state"].iloc[0]) == (13620, "D")


def test_format_columns_of_a_ps_command():
    assert format_columns("ps -ostat,pid,user,group,comm,args | grep ^Z") == ["STAT", "PID", "USER", "GROUP", "COMM", "ARGS"]
    assert format_columns("sudo ps -o pid= -o etime= -o args=") == ["PID", "ETIME", "ARGS"]
    assert format_columns("ps axo pid,pcpu,wchan:32,comm") == ["PID", "%CPU", "WCHAN", "COMM"]
    assert format_columns("ps aux") is None and format_columns("ps -o foo,pid") is None


def test_headerless_rows_under_an_echoed_ps_o_loop(tmp_path):
    path = tmp_path / "loop.txt"
    path.write_text(
        " ps -ostat,pid,user,group,comm,args | grep ^Z\n"
        " sleep 1\n"
        "Sun Apr 29 07:00:01 CEST 2018\n"
        "Z     4392 root     root     sh               [sh]\n"
        "Sun Apr 29 07:00:02 CEST 2018\n"
        "Z     4392 root     root     sh               [sh]\n")
    assert sniff_ps(path, path.read_bytes()) >= 0.8
    inc = _load(path)
    p = inc.processes
    assert list(p["pid"]) == [4392]  # `sleep 1` is not a row cut short
    assert (p["state"].iloc[0], p["command"].iloc[0], p["snapshots"].iloc[0]) == ("Z", "[sh]", 2)
    assert p["last_seen"].iloc[0] == T("2018-04-29 05:00:02")


def test_busybox_top_cpu_line_percent_signs_and_core_column(tmp_path):
    (tmp_path / "top.txt").write_text(
        "Mem: 217800K used, 630044K free, 14412K shrd, 0K buff, 99832K cached\n"
        "CPU:   0% usr   2% sys   0% nic  48% idle  48% io   0% irq   0% sirq\n"
        "Load average: 0.02 0.01 0.00 1/182 1912\n"
        "  PID  PPID USER     STAT   VSZ %VSZ CPU %CPU COMMAND\n"
        " 4242     1 root     R     535m  65%   3  99% python train.py\n")
    inc = _load(tmp_path / "top.txt")
    p = inc.processes.iloc[0]
    assert (p["pid"], p["ppid"], p["cpu_pct_max"], p["command"]) == (4242, 1, 99.0, "python train.py")
    assert inc.load_report.files[0].skipped["top summary line"] == 3


def test_a_process_missing_from_the_listing_before_started_after_it(tmp_path, fixtures_dir):
    """A trainer that a listing taken every second shows at 19:56:58 and not at 19:56:57 started
    between them, though START says only `19:56` (up to 60 s later): its start is 19:56:57,
    within 1 s, not 19:56:00. Read from 19:56:00, a watch took it for a start older than the run
    before it and told a failed start (the lines of the stall replay whose watch did so,
    shortened). A process in the first listing has no listing before; a start to the second
    (LSTART) stays as read though the listing before did not show it, and where ps gives no start
    none is made up (a filtered listing shows a process once it matches the filter)."""
    head = "USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND"
    launch = "root     31246 19.2  0.4 1379860 115720 ?      Rl   19:56   0:00 /venv/bin/python -m dflash_postmortem.cli launch"
    trainer = "root     31260 55.7  0.4 1379852 113660 ?      Rsl  19:56   0:00 /venv/bin/python -m dflash_postmortem.replay.train"
    (tmp_path / "ps.txt").write_text(
        f"# 2026-12-04T19:56:56Z\n{head}\n{launch}\n# 2026-12-04T19:56:57Z\n{head}\n{launch}\n"
        f"# 2026-12-04T19:56:58Z\n{head}\n{launch}\n{trainer}\n")
    inc = _load(tmp_path / "ps.txt")
    p = inc.processes.set_index("pid")
    assert (p.loc[31260, "started"], p.loc[31260, "started_within_s"]) == (T("2026-12-04 19:56:57"), 1.0)
    assert (p.loc[31246, "started"], p.loc[31246, "started_within_s"]) == (T("2026-12-04 19:56:00"), 60.0)
    assert "1 process(es) not in the listing before their first started after it: their start is bounded " \
           "by the two listings" in inc.load_report.files[0].assumptions

    head = "  PID  PPID  PGID  SID USER                      STARTED ELAPSED S CMD"
    row = " 1251  1246  1251  1245 root     Wed Dec  2 02:34:55 2026       3 Rl   python3 -m dflash_postmortem.replay.train"
    (tmp_path / "ps.txt").write_text(f"# 2026-12-02T02:34:56Z\n{head}\n# 2026-12-02T02:34:59Z\n{head}\n{row}\n")
    p = _load(tmp_path / "ps.txt").processes.set_index("pid")
    assert (p.loc[1251, "started"], p.loc[1251, "started_within_s"]) == (T("2026-12-02 02:34:55"), 1.0)

    # a filtered loop (`ps -o ... | grep ^Z` every second): three shells listed from 07:00:01, when
    # they became zombies, not when they started; ps gives no start, and none is made up
    inc = _load(fixtures_dir / "ps" / "busybox-ps-o-headerless-zombies-date-loop.txt")
    assert inc.processes["started"].isna().all() and len(inc.processes) == 3
    assert not any("not in the listing before" in a for a in inc.load_report.files[0].assumptions)


def test_a_process_keeps_the_parent_that_started_it_once_that_parent_ends(tmp_path):
    """A supervisor loop killed while its trainer runs on: ps lists the trainer under init from
    then on. Its parent is the loop that started it (the launch it belongs to), not init."""
    head = "  PID  PPID  PGID   SID USER                      STARTED ELAPSED STAT COMMAND\n"
    row = "{pid:>5} {ppid:>5}   610   610 root     Sun Dec  6 08:16:18 2026 {el:>7} {st:<4} {cmd}\n"
    snaps = []
    for n, (t, loop_alive) in enumerate((("08:16:19", True), ("08:16:21", True), ("08:16:23", False))):
        body = row.format(pid=1118, ppid=1, el=1 + 2 * n, st="S", cmd="/bin/bash ./run.sh") if loop_alive else ""
        body += row.format(pid=1121, ppid=1118 if loop_alive else 1, el=1 + 2 * n, st="Rl", cmd="python3 train.py")
        snaps.append(f"# 2026-12-06T{t}Z\n" + head + body)
    p = tmp_path / "ps.txt"
    p.write_text("".join(snaps))
    procs = pm.load_ps_snapshots(p).processes
    assert procs.set_index("pid").loc[1121, "ppid"] == 1118
