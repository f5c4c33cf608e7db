"""Terminal sessions as evidence: prompts of every shell, the clock a session states, and what
the shell and the kernel say about processes (kill failures, jobs killed, exit statuses, OOM).

Real sessions come from tests/fixtures/real-world/terminal/ (SOURCES.tsv); the few lines built
here stand for forms the brief names that no public sample we hold shows (a German `date`, a
`timeout` status, a `set -x` trace).
"""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.commands import (
    exit_meaning,
    kill_targets,
    match_prompt,
    parse_launch,
    signal_name,
    timeout_wrapper,
)
from dflash_postmortem.errors import SourceFormatError
from dflash_postmortem.loaders.clock_text import parse_date_line, parse_wall_clock
from dflash_postmortem.loaders.pid_file import load_pid_file
from dflash_postmortem.loaders.registry import LoadContext
from dflash_postmortem.loaders.terminal import screen_text
from dflash_postmortem.loaders.transcript.process_control import read_line

T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_shell_transcript(path, **kw)


def _session(tmp_path, text: str, name="session.txt"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return _load(p)


@pytest.mark.parametrize(("line", "command"), [
    ("root@gpu-node:~/w# nvidia-smi", "nvidia-smi"),
    ("user@host:~$ kill -9 -- -924", "kill -9 -- -924"),
    ("(venv) (base) user@host:~/w (main)$ python train.py", "python train.py"),
    ("[root@skl-node-1 eris]# dmesg -T", "dmesg -T"),
    ("[havb@be-lx139213:~]$ perl -wE 1", "perl -wE 1"),
    ("(venv) user@host ~ % ps aux", "ps aux"),
    ("user@host ~ $ ls", "ls"),
    ("mac:~ user$ top -l 1", "top -l 1"),
    ("bash-5.1$ echo $?", "echo $?"),
    ("❯ torchrun --nproc-per-node 8 train.py", "torchrun --nproc-per-node 8 train.py"),
    ("➜  dflash git:(main) ✗ pkill -f train.py", "pkill -f train.py"),
    ("PS C:\\Users\\me> nvidia-smi", "nvidia-smi"),
    ("$ nohup python train.py &", "nohup python train.py &"),
    ("# kill 4242", "kill 4242"),
    (" host:~ # kill -9 973", "kill -9 973"),
    ("ttyserver@ttyserver:~> kill 637", "kill 637"),
    ("hacker@processes~killing-processes:~$ kill 136", "kill 136"),
    ("    $ nvidia-smi -L", "nvidia-smi -L"),
])
def test_prompt_forms(line, command):
    p = match_prompt(line)
    assert p is not None and p.command == command and not p.trace_depth


@pytest.mark.parametrize("line", [
    "# NameTester.rb tests class Name and its operations",  # a comment is not a root prompt
    "Tasks: 112 total,   1 running",
    "        $ indented deeper than a code block",
    "root        1422  0.1  0.0      0     0 ?        Ds   Jul22  32:01 [Xorg]",
])
def test_not_prompts(line):
    assert match_prompt(line) is None


def test_set_x_trace_lines_are_commands_of_a_script():
    assert match_prompt("+ python train.py --lr 3e-4").trace_depth == 1
    assert match_prompt("++ cat /run/train.pid").command == "cat /run/train.pid"


def test_screen_text_replays_what_the_terminal_showed(fixtures_dir):
    """A real `script` recording: OSC title, colours, a typo corrected with backspaces, CRLF."""
    raw = (fixtures_dir / "terminal" / "script-2020-numeric-offset-backspaces.txt").read_bytes().decode().split("\n")[1]
    assert "\x1b" in raw and "\b" in raw and raw.endswith("\r")
    assert screen_text(raw) == "usr1@host01:~/214/labs/07$ cat NameTester.rb"
    assert screen_text("epoch 1 10%\repoch 1 100%\x1b[K") == "epoch 1 100%"


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


def test_commands_between_dates_take_the_nearest_earlier_clock(tmp_path):
    inc = _session(tmp_path, (
        "root@gpu-node:~# nvidia-smi -L\nGPU 0: NVIDIA H200 (UUID: GPU-1)\n"  # before any clock: no time
        "root@gpu-node:~# date\nDi 1. Dez 03:04:05 CET 2026\n"
        "root@gpu-node:~# kill 924\n"
        "root@gpu-node:~# date -u\nTue Dec  1 02:10:00 UTC 2026\n"
        "root@gpu-node:~# kill 925\n"))
    cmds = inc.events[inc.events["kind"] == "command"].set_index("message")
    assert pd.isna(cmds.loc["nvidia-smi -L", "time"])
    assert cmds.loc["date", "time"] == T("2026-12-01 02:04:05") and not cmds.loc["date", "time_approx"]
    assert cmds.loc["kill 924", "time"] == T("2026-12-01 02:04:05") and cmds.loc["kill 924", "time_approx"]
    assert cmds.loc["kill 925", "time"] == T("2026-12-01 02:10:00")
    rep = inc.load_report.files[0]
    assert any("dated by the latest clock" in a for a in rep.assumptions) and rep.balanced


def test_script_header_is_the_clock_of_a_recording(fixtures_dir):
    inc = _load(fixtures_dir / "terminal" / "script-2017-ampm-edt-backspaces.txt")
    cmds = inc.events[inc.events["kind"] == "command"]
    assert cmds["message"].tolist() == ["cat NameTester.rb", "ruby NameTester.rb", "exit"]
    assert (cmds["time"] == T("2017-03-29 13:30:20")).all() and cmds["time_approx"].all()


def test_kill_of_a_gone_group_names_what_it_meant_to_stop(tmp_path):
    """The group form (`kill -- -924`, note the minus) and the PID form fail differently; both
    say which target, which signal, and which command."""
    inc = _session(tmp_path, (
        "user@host:~$ kill -TERM -- -924 925\n"
        "bash: kill: (-924) - No such process\n"
        "bash: kill: (925) - Operation not permitted\n"))
    ev = inc.events[inc.events["kind"] == "kill_failed"].set_index("target_pid")
    assert bool(ev.loc[924, "target_is_group"]) and ev.loc[924, "reason"] == "no such process"
    assert not bool(ev.loc[925, "target_is_group"]) and ev.loc[925, "reason"] == "operation not permitted"
    assert (ev["signal"] == "SIGTERM").all() and ev["command_ref"].str.endswith("session.txt:1").all()
    assert ev.loc[924, "ref"].endswith("session.txt:2") and (inc.events["kind"] == "kill_sent").sum() == 0


def test_a_group_kill_of_a_pid_file_whose_process_is_gone(bundled_dir):
    """The survivor capture (a real interactive bash recorded by script): `kill -TERM --
    -$(cat run/regressed.pid)` answered `(-789) - No such process`: the group 789 named by the
    PID file was already gone, and the trainer 789 survived it."""
    inc = pm.load_incident(bundled_dir.parent / "h200-1gpu-survivor")
    ev = inc.events[inc.events["source"] == "logs/terminal.log"]
    k = ev[ev["kind"] == "kill_failed"].iloc[0]
    assert (k["target_pid"], bool(k["target_is_group"]), k["signal"]) == (789, True, "SIGTERM")
    assert k["target_expr"] == "$(cat run/regressed.pid)" and k["ref"] == "logs/terminal.log:14"
    assert k["time"] == T("2026-12-01 10:31:06") and k["time_approx"]
    killed = ev[ev["kind"] == "killed"].iloc[0]  # `timeout -s KILL 2 python ...` -> Killed, its PID from ps
    assert (killed["pid"], killed["signal"]) == (1021, "SIGKILL")
    done = ev[(ev["kind"] == "exit") & ev["job"].notna()].set_index("job")
    assert done.loc[1, "pid"] == 506 and done.loc[1, "exit_code"] == 0
    assert done.loc[2, "pid"] == 787 and done.loc[2, "signal"] == "SIGTERM"


def test_real_kill_failures(fixtures_dir):
    suse = _load(fixtures_dir / "terminal" / "moler-suse-root-kill-9-no-such-process.txt").events
    k = suse[suse["kind"] == "kill_failed"].iloc[0]
    assert (k["pid"], k["signal"], bool(k["target_is_group"])) == (973, "SIGKILL", False)
    killall = _load(fixtures_dir / "terminal" / "moler-killall-no-process-found.txt").events
    k = killall[killall["kind"] == "kill_failed"].iloc[0]
    assert k["target_pattern"] == "tshark" and k["reason"] == "no process found"


def test_job_table_gives_the_pid_of_what_was_killed(tmp_path):
    inc = _session(tmp_path, (
        "user@host:~$ nohup python train.py --run-name a > /w/a.log 2>&1 &\n"
        "[1] 4242\n"
        "nohup: ignoring input and appending output to 'nohup.out'\n"
        "user@host:~$ kill -9 %1\n"
        "[1]+  Killed                  nohup python train.py --run-name a > /w/a.log 2>&1\n"))
    ev = inc.events.set_index("kind")
    assert ev.loc["launch", "pid"] == 4242 and ev.loc["job_started", "pid"] == 4242
    assert ev.loc["nohup", "output_file"] == "nohup.out"
    assert ev.loc["killed", "pid"] == 4242 and ev.loc["killed", "signal"] == "SIGKILL"
    assert ev.loc["kill_sent", "job"] == 1 and ev.loc["kill_sent", "pid"] == 4242


def test_status_lines_with_pid_and_core_dumps():
    f = read_line("./train.sh: line 1:  7364 Killed                  python3 train_Donly.py --name=D0")
    assert (f["kind"], f["pid"], f["signal"]) == ("killed", 7364, "SIGKILL")
    f = read_line("Segmentation fault (core dumped)")
    assert (f["kind"], f["signal"], f["core_dumped"]) == ("killed", "SIGSEGV", True)
    f = read_line("[1]  + 19310 suspended  top")  # zsh's job line carries the PID
    assert (f["kind"], f["pid"], f["job"]) == ("job_stopped", 19310, 1)
    f = read_line("zsh: killed     python train.py")
    assert (f["kind"], f["job_command"]) == ("killed", "python train.py")
    assert read_line("exit=137")["signal"] == "SIGKILL"


def test_echo_status_answers_for_the_command_before_it(fixtures_dir, tmp_path):
    ev = _load(fixtures_dir / "terminal" / "dumb-init-echo-status-143-after-sigterm.txt").events
    exits = ev[ev["kind"] == "exit"]
    assert exits["exit_code"].tolist() == [143, 0] and exits["signal"].tolist()[0] == "SIGTERM"
    assert exits["job_command"].tolist()[0] == "sh -c 'kill -TERM $$'"
    inc = _session(tmp_path, "$ timeout -s KILL 2 python train.py\n$ echo $?\n137\n$ timeout 5m python eval.py\n$ echo $?\n124\n")
    launches = inc.events[inc.events["kind"] == "launch"]
    assert launches["timeout_s"].tolist() == [2.0, 300.0] and launches["timeout_signal"].tolist() == ["SIGKILL", "SIGTERM"]
    exits = inc.events[inc.events["kind"] == "exit"].set_index("exit_code")
    assert exits.loc[137, "meaning"] == "killed by SIGKILL"
    assert exits.loc[124, "meaning"] == "timed out: timeout sent its signal"


def test_oom_killer_lines_in_their_forms(fixtures_dir):
    iso = _load(fixtures_dir / "terminal" / "oom-perl-killed-then-dmesg-iso.txt").events
    k = iso[iso["kind"] == "oom_kill"].iloc[0]
    assert (k["pid"], k["process_name"], k["time"]) == (1440763, "perl", T("2024-04-29 12:55:41.679700"))
    assert k["anon_rss_kib"] == 60356340.0 and k["constraint"] == "CONSTRAINT_NONE"  # the oom-kill: line merged in
    wrapped = _load(fixtures_dir / "terminal" / "dmesg-terminal-wrapped-oom-python3.txt").events
    assert wrapped.loc[wrapped["kind"] == "oom_kill", "total_vm_kib"].tolist() == [53312244.0]
    old = read_line("[Thu Mar 14 01:57:54 2019] Out of memory: Kill process 89746 (python) score 1031 or sacrifice child")
    assert (old["kind"], old["pid"], old["score"]) == ("oom_chosen", 89746, 1031)


def test_nvidia_xid_and_a_gpu_off_the_bus(fixtures_dir):
    f = read_line("[ 4711.123456] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.")
    assert (f["kind"], f["xid"], f["pid"], f["process_name"]) == ("xid", 79, 1234, "python")
    ev = _load(fixtures_dir / "terminal" / "dmesg-nvrm-gpu-fallen-off-bus-no-xid.txt").events
    assert ev["kind"].tolist() == ["gpu_lost"] and ev["bus"].tolist() == ["0000:b3:00.0"]


def test_ps_and_pgrep_answers_inside_a_session_become_processes(fixtures_dir):
    inc = _load(fixtures_dir / "terminal" / "coolgpus-pgrep-ps-defunct-xorg-root-prompt.txt")
    p = inc.processes.set_index("pid")
    assert sorted(p.index) == [1422, 1423, 1424, 1425]
    assert p.loc[1423, "state"] == "Zsl" and p.loc[1423, "snapshots"] == 2  # pgrep and ps both saw it


def test_a_stamped_transcript_still_reads(bundled_dir):
    ev = _load(bundled_dir / "logs" / "operator.log").events
    assert not ev["time"].isna().any() and not ev.loc[ev["kind"] == "command", "time_approx"].any()


def test_command_vocabulary():
    g = kill_targets("sudo kill -9 -- -924 5")
    assert [(k.pid, k.is_group, k.signal) for k in g] == [(924, True, "SIGKILL"), (5, False, "SIGKILL")]
    assert [k.pattern for k in kill_targets('pkill -f "python train.py"')] == ["python train.py"]
    (subst,) = kill_targets("kill -9 -$(cat run/train.pid)")  # known only when it ran: the text is kept
    assert (subst.pid, subst.expr, subst.is_group) == (None, "$(cat run/train.pid)", True)
    assert timeout_wrapper(["timeout", "--signal=INT", "-k", "5", "1.5m", "python"]) == (90.0, "SIGINT")
    assert parse_launch("timeout -s KILL 2 python x.py").launcher == "timeout"
    assert signal_name("-31") == "SIGSYS" and exit_meaning(130) == ("SIGINT", "killed by SIGINT")


@pytest.mark.parametrize("content", [b"1391\n", b"  1391\r\n", b"99999999999\n", b"", b"\xff\xfe1\x002\x00", b"12\n13\n"])
def test_pid_files_never_raise_anything_but_source_format_error(tmp_path, content):
    """A PID file in an incident without ps data aborted load_incident with a TypeError."""
    p = tmp_path / "fixed.pid"
    p.write_bytes(content)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inc = load_pid_file(p, LoadContext(root=tmp_path))
    except SourceFormatError:
        return
    rep = inc.load_report.files[0]
    assert rep.balanced
    if content.strip().isdigit() and int(content) < 2**31:
        e = inc.events.iloc[0]
        assert (e["pid"], e["run"], e["kind"]) == (1391, "fixed", "pid_file") and pd.isna(e["time"])


def test_a_pid_file_alone_loads_through_load_incident(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "fixed.pid").write_text("1391\n")
    inc = pm.load_incident(tmp_path)
    assert inc.events["pid"].tolist() == [1391] and not inc.load_report.failed
