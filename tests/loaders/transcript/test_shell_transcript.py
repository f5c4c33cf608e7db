"""Operator transcripts (shell_transcript.py): the bundled relaunch, launches and the evidence of their
log files, the session's clocks, kills and job reports read in their session."""

from __future__ import annotations

import os
import subprocess
import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.transcript.shell_transcript import sniff_transcript
from dflash_postmortem.shell_words import parse_launch

T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


@pytest.fixture(scope="module")
def incident(bundled_dir):
    return pm.load_incident(bundled_dir)


@pytest.fixture(scope="module")
def ops(incident):
    ev = incident.events
    return ev[ev["source"] == "logs/operator.log"].reset_index(drop=True)


def test_both_launches_of_the_relaunch(ops):
    launches = ops[(ops["kind"] == "launch") & (ops["run"] == "fixed")]
    assert launches["time"].tolist() == [T("2026-11-30 05:23:01.707"), T("2026-11-30 05:23:16.774")]
    failed, ok = launches.iloc[0], launches.iloc[1]
    assert failed["log_path"] == "/workspace/train_opt2.log" and failed["launcher"] == "nohup"
    assert pd.isna(failed["pid"])  # the session printed none (the attempt model joins ps's: tests/model)
    assert ok["log_path"] == "/tmp/capture2/logs/train_opt2.log" and ok["launcher"] == "setsid"
    assert pd.isna(ok["pid"])  # ps saw it; joining the two is the model's (tests/model/test_log_files.py)
    assert ok["args"] == "--run-name fixed --seconds 90 --pid-file /tmp/capture2/run/fixed.pid"
    assert ok["ref"] == "logs/operator.log:17"


def test_regressed_launch_args(ops):
    r = ops[(ops["kind"] == "launch") & (ops["run"] == "regressed")].iloc[0]
    assert r["args"].startswith("--run-name regressed --fast-linear-attn 0 --use-reentrant 0")
    assert r["background"]


def test_failed_redirect_and_missing_log(ops):
    red = ops[ops["kind"] == "redirect_failed"].iloc[0]
    assert red["path"] == "/workspace/train_opt2.log" and red["ref"] == "logs/operator.log:9"
    assert red["time"] == T("2026-11-30 05:23:01.707")
    miss = ops[ops["kind"] == "log_missing"].iloc[0]
    assert miss["ref"] == "logs/operator.log:16" and miss["time"] == T("2026-11-30 05:23:16.770")
    # the reader concludes nothing beside the session: whether the log was ever created is the
    # model's (tests/model/test_log_files.py)
    assert not ops["kind"].isin(["log_never_created", "log_empty"]).any()


def test_operator_checks_one_process_and_zero_mib(ops, incident):
    counts = ops[ops["kind"] == "process_count"]
    assert counts["count"].tolist() == [0, 1]
    assert counts["pattern"].tolist() == ["trainer.py", "python3"]
    g = incident.gpus[incident.gpus["source"] == "logs/operator.log"]
    at = g[g["time"] == T("2026-11-30 05:23:16.730")]
    assert at.sort_values("gpu")["memory_used_mib"].tolist() == [0.0, 0.0]
    later = g[g["time"] == T("2026-11-30 05:24:18.783")].sort_values("gpu")
    assert later["memory_used_mib"].tolist() == [4439.0, 4155.0]
    assert later["util_gpu_pct"].tolist() == [74.0, 99.0]


def test_every_command_is_an_event_with_output(ops, incident):
    cmds = ops[ops["kind"] == "command"]
    assert len(cmds) == 10
    kill = cmds[cmds["message"].str.startswith("kill -TERM")].iloc[0]
    assert kill["output"] == "Terminated\n0"
    assert incident.load_report["logs/operator.log"].balanced


def test_plain_paste_with_prompts(tmp_path):
    p = tmp_path / "paste.txt"
    p.write_text(
        "user@box:~/w$ nohup python train.py > run.log 2>&1 &\n[1] 4242\n"
        "user@box:~/w$ ps aux | grep train.py | grep -v grep | wc -l\n0\n"
        "user@box:~/w$ cat run.log\nTraceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
        "RuntimeError: boom\nexit=137\nKilled\n"
    )
    assert sniff_transcript(p, p.read_bytes()) > 0.5
    inc = pm.load_shell_transcript(p)
    ev = inc.events
    assert ev["time"].isna().all()
    assert (ev["kind"] == "launch").sum() == 1
    assert ev.loc[ev["kind"] == "process_count", "count"].tolist() == [0]
    # what `cat` printed is run.log's lines, read as that log (its copy: a folder's run.log would
    # be read instead), not the shell's own report of a job
    printed = ev[ev["copy_of"] == "run.log"]
    assert printed["kind"].tolist() == ["traceback", "exit", "killed"]
    assert printed["exit_code"].dropna().tolist() == [137] and printed["signal"].dropna().tolist()[-1] == "SIGKILL"
    assert set(printed["ref"]) == {f"{p}:{n}" for n in (6, 9, 10)}
    launch = ev[ev["kind"] == "launch"].iloc[0]
    assert launch["pid"] == 4242  # the job line `[1] 4242` under the launch
    assert inc.load_report.files[0].balanced


def test_a_loop_typed_at_the_prompt_is_a_launch_per_pass_each_with_the_pid_bash_reported(tmp_path):
    p = tmp_path / "paste.txt"
    p.write_text(
        "user@box:~/w$ for lr in 1e-4 3e-4; do nohup python train.py --run-name lr-$lr > logs/lr-$lr.log 2>&1 & done\n"
        "[1] 4242\n[2] 4243\n"
        "user@box:~/w$ kill 4243\n")
    ev = pm.load_shell_transcript(p).events
    launches = ev[ev["kind"] == "launch"]
    assert launches["run"].tolist() == ["lr-1e-4", "lr-3e-4"]
    assert launches["log_path"].tolist() == ["logs/lr-1e-4.log", "logs/lr-3e-4.log"]
    assert launches["pid"].tolist() == [4242, 4243]
    assert launches["loop_pass"].tolist() == [
        "nohup python train.py --run-name lr-1e-4 > logs/lr-1e-4.log 2>&1 &",
        "nohup python train.py --run-name lr-3e-4 > logs/lr-3e-4.log 2>&1 &"]
    assert set(launches["ref"]) == {f"{p}:1"}


def test_ctrl_c_echoed_under_a_foreground_loop_and_the_prompt_after_it(tmp_path):
    # The terminal echoes each Ctrl-C as `^C`; the prompt that comes back may follow the last echoes
    # on their line (tests/model/fixtures/ctrlc-sweep-cpu, line 6): the echoes are the loop's
    # output, the rest a prompt whose `date` dates what follows.
    p = tmp_path / "session.txt"
    p.write_text(
        "root@gpu-node:~# date\nSun Dec  6 23:23:51 UTC 2026\n"
        "root@gpu-node:~# for lr in 1e-4 3e-4 1e-3; do python train.py --run-name lr-$lr > logs/lr-$lr.log 2>&1; done\n"
        "^C\n"
        "^C^Croot@gpu-node:~# date\nSun Dec  6 23:25:10 UTC 2026\n"
        "root@gpu-node:~# ls logs\n")
    ev = pm.load_shell_transcript(p).events
    cmds = ev[ev["kind"] == "command"]
    assert cmds["message"].tolist()[-2:] == ["date", "ls logs"]
    assert cmds["time"].tolist()[-1] == T("2026-12-06 23:25:10")
    keys = ev[ev["kind"] == "interrupt_key"]
    assert keys["presses"].tolist() == [1, 2] and set(keys["signal"]) == {"SIGINT"}
    assert keys["ref"].tolist() == [f"{p}:4", f"{p}:5"] and set(keys["command_ref"]) == {f"{p}:3"}


def test_a_tail_of_several_logs_gives_each_its_own_lines(tmp_path):
    # `tail` of several files (a glob) prints each under `==> file <==`: each part is a copy of
    # its own file, read as that log, none a log of the glob's name
    p = tmp_path / "session.txt"
    p.write_text(
        "root@gpu-node:~# date\nSun Dec  6 23:25:10 UTC 2026\n"
        "root@gpu-node:~# tail -n 2 logs/lr-*.log\n"
        "==> logs/lr-1e-3.log <==\n"
        "2026-12-06 23:25:05,426 INFO step 280 | loss 6.95 | 21,293 tok/s\n"
        "2026-12-06 23:25:06,447 INFO interrupted at step 301, saving checkpoint\n"
        "\n"
        "==> logs/lr-1e-4.log <==\n"
        "2026-12-06 23:24:26,054 INFO step 1360 | loss 6.93 | 40,328 tok/s\n"
        "2026-12-06 23:24:26,434 INFO interrupted at step 1376, saving checkpoint\n")
    inc = pm.load_shell_transcript(p)
    told = inc.events[inc.events["kind"] == "interrupt"]
    assert told["copy_of"].tolist() == ["logs/lr-1e-3.log", "logs/lr-1e-4.log"]
    assert told["ref"].tolist() == [f"{p}:6", f"{p}:10"]
    assert sorted(inc.metrics["copy_of"].unique()) == ["logs/lr-1e-3.log", "logs/lr-1e-4.log"]
    assert "lr-*" not in set(inc.metrics["run"].dropna())


# -- launch tokenising (shlex): the seed reconstruction's operator.log ---------------------------
def _seed_launches(seed_dir):
    lines = (seed_dir / "logs" / "operator.log").read_text().splitlines()
    cmds = [ln.split("] $ ", 1)[1] for ln in lines if "] $ " in ln]
    return [launch for c in cmds if (launch := parse_launch(c)) is not None]


SEED_ARGS = "--config configs/qwen3.6-27b-dflash.yaml --target-gpus 0,1,2,3,4,5 --drafter-gpus 6,7"


def test_seed_tmux_tee_launches_have_clean_log_path_and_args(seed_dir):
    launches = _seed_launches(seed_dir)
    assert [x.launcher for x in launches] == ["pct exec", "pct exec", "pct exec", "ssh"]
    assert [x.log_path for x in launches] == [
        "/workspace/train.log", "/workspace/train_opt.log", "/workspace/train_opt2.log", "/workspace/train_opt2.log"]
    assert [x.program for x in launches] == ["train_dflash.py"] * 4
    assert launches[0].args == SEED_ARGS + " --use-reentrant True --lm-head-opt 1 --compile-flex 0"
    assert launches[1].args == SEED_ARGS + " --use-reentrant False --lm-head-opt 1 --compile-flex 1 --drafter-threads 4"
    assert launches[3].args == launches[2].args == launches[0].args
    # tmux new -d detaches; `nohup ... &` inside bash -c / ssh puts the trainer in the background
    assert all(x.background for x in launches)


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_shell_transcript(path, **kw)


def _session(tmp_path, text: str, name="session.txt"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return _load(p)


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
    killed = ev[ev["kind"] == "killed"].iloc[0]  # `timeout -s KILL 2 python ...` -> Killed
    assert (killed["command_ref"], killed["signal"]) == ("logs/terminal.log:15", "SIGKILL")
    done = ev[(ev["kind"] == "exit") & ev["shell_job"].notna()].set_index("shell_job")
    assert done.loc[1, "pid"] == 506 and done.loc[1, "exit_code"] == 0
    assert done.loc[2, "pid"] == 787 and done.loc[2, "signal"] == "SIGTERM"


def test_a_command_dated_by_the_clock_before_it_may_be_as_late_as_the_next_clock(bundled_dir):
    """The survivor's typescript has no stamps: its commands carry the latest `date` output
    before them, and `time_within_s` says how much later each may truly be (the gap to the next
    clock the session gives); the last ones, with no clock after them, leave it open."""
    inc = pm.load_incident(bundled_dir.parent / "h200-1gpu-survivor")
    ev = inc.events[(inc.events["source"] == "logs/terminal.log") & (inc.events["kind"] == "command")]
    ev = ev.set_index("ref")
    timeout = ev.loc["logs/terminal.log:15"]  # `timeout -s KILL 2 python ...`, dated 10:31:06
    assert timeout["time"] == T("2026-12-01 10:31:06") and timeout["time_approx"]
    assert timeout["time_within_s"] == 2.0  # the next `date` in the session printed 10:31:08
    exact = ev[~ev["time_approx"].astype(bool)]
    assert len(exact) and exact["time_within_s"].isna().all()
    assert (ev.loc[ev["time_approx"].astype(bool), "time_within_s"].dropna() >= 0).all()


def test_a_tail_of_a_log_ran_after_the_newest_line_it_printed(bundled_dir):
    """h100-1gpu-debug-env (README): `tail -n 2 logs/train2.log` was typed at 19:44:19.372, 79 s
    after the `date` before it (19:43:00) and 3 s before the next (19:44:22); it printed the
    log's lines stamped 19:44:17 and 19:44:18, so it ran no earlier than 19:44:18 (and `tail -n 3
    logs/train.log`, typed at 19:42:55.361, no earlier than its `Training failed` line,
    19:42:45). What a foreground program prints as it runs says nothing of when it was typed:
    the ctrl-z capture's `fg` (its trainer's lines after it) keeps its `date`'s time."""
    inc = pm.load_incident(bundled_dir.parent / "h100-1gpu-debug-env" / "logs" / "terminal.typescript")
    ev = inc.events[inc.events["kind"] == "command"].set_index("ref")
    tail2, tail1 = ev.loc["terminal.typescript:16"], ev.loc["terminal.typescript:6"]
    assert tail2["time"] == T("2026-12-05 19:44:18") and tail2["time_within_s"] == 4.0 and tail2["time_approx"]
    assert tail1["time"] == T("2026-12-05 19:42:45")
    # the commands after it in the same gap are no earlier (the `export` typed at 19:42:58.365)
    assert ev.loc["terminal.typescript:11", "time"] == T("2026-12-05 19:42:45")
    # (the launch between the two `date`s printed nothing stamped: it keeps 19:43:00)
    assert ev.loc["terminal.typescript:14", "time"] == T("2026-12-05 19:43:00")
    fg = pm.load_incident(bundled_dir.parent / "h200-1gpu-ctrl-z")
    typed = fg.events[(fg.events["kind"] == "command") & (fg.events["message"] == "fg")]
    assert typed["time"].tolist() == [T("2026-12-05 03:45:13")]


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
    assert ev.loc["kill_sent", "shell_job"] == 1 and ev.loc["kill_sent", "pid"] == 4242


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


def test_ps_and_pgrep_answers_inside_a_session_become_processes(fixtures_dir):
    inc = _load(fixtures_dir / "terminal" / "coolgpus-pgrep-ps-defunct-xorg-root-prompt.txt")
    p = inc.processes.set_index("pid")
    assert sorted(p.index) == [1422, 1423, 1424, 1425]
    assert p.loc[1423, "state"] == "Zsl" and p.loc[1423, "snapshots"] == 2  # pgrep and ps both saw it


def test_a_stamped_transcript_still_reads(bundled_dir):
    ev = _load(bundled_dir / "logs" / "operator.log").events
    assert not ev["time"].isna().any() and not ev.loc[ev["kind"] == "command", "time_approx"].any()


def test_prompt_clocks_run_past_midnight(tmp_path):
    """A prompt that shows the time of day is dated from the session's latest clock: the next day
    once it reads more than an hour earlier than that clock (align.date_times_of_day)."""
    inc = _session(tmp_path, (
        "user@host:~$ date -u\nTue Dec  1 23:59:00 UTC 2026\n"
        "[23:59:50] user@host:~$ kill 4242\n"
        "[00:00:10] user@host:~$ kill 4243\n"))
    cmds = inc.events[inc.events["kind"] == "command"].set_index("message")
    assert cmds.loc["kill 4242", "time"] == T("2026-12-01 23:59:50") and not cmds.loc["kill 4242", "time_approx"]
    assert cmds.loc["kill 4243", "time"] == T("2026-12-02 00:00:10")


_SMI_WITH_PROCESSES = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 410.73       Driver Version: 410.73       CUDA Version: 10.0     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GeForce GTX 108...  Off  | 00000000:01:00.0  On |                  N/A |
| 37%   48C    P0    59W / 250W |   9379MiB / 11175MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                       GPU Memory |
|  GPU       PID   Type   Process name                             Usage      |
|=============================================================================|
|    0      6943      C   python                                      9000MiB |
+-----------------------------------------------------------------------------+
"""


def test_nvidia_smi_table_in_a_session_keeps_its_processes_and_fuser_names_holders(tmp_path):
    (tmp_path / "session.txt").write_text(
        "bob@box:~$ sudo fuser -v /dev/nvidia*\n"
        "                     USER        PID ACCESS COMMAND\n"
        "/dev/nvidia0:        bob        6943 F...m python\n"
        "/dev/nvidiactl:      bob        6943 F...m python\n"
        "bob@box:~$ kill -9 6943\n"
        "bob@box:~$ nvidia-smi\n"
        "Tue Nov 13 09:45:09 2018\n" + _SMI_WITH_PROCESSES)
    inc = pm.load_shell_transcript(tmp_path / "session.txt")
    gp = inc.gpu_processes
    assert list(gp["pid"]) == [6943] and gp["used_memory_mib"].iloc[0] == 9000.0
    assert gp["line"].iloc[0] == 22  # the line in the session, not in the answer alone
    assert inc.gpus["memory_used_mib"].iloc[0] == 9379.0
    p = inc.processes.set_index("pid")
    assert p.loc[6943, "files"] == "/dev/nvidia0,/dev/nvidiactl"


def test_lsof_in_a_session_names_the_holders_of_the_gpus(tmp_path):
    (tmp_path / "session.txt").write_text(
        "bob@box:~$ date\n"
        "Tue Dec  1 03:04:05 UTC 2026\n"
        "bob@box:~$ sudo lsof -n -w /dev/nvidia*\n"
        "COMMAND   PID USER   FD   TYPE  DEVICE SIZE/OFF NODE NAME\n"
        "python   6943  bob  mem    CHR   195,0          1234 /dev/nvidia0\n"
        "python   6943  bob   5u    CHR 195,255      0t0 1233 /dev/nvidiactl\n"
        "bob@box:~$ kill -9 6943 6943\n")
    inc = pm.load_shell_transcript(tmp_path / "session.txt")
    p = inc.processes.set_index("pid")
    assert list(p.index) == [6943]
    assert (p.loc[6943, "user"], p.loc[6943, "command"]) == ("bob", "python")
    assert p.loc[6943, "files"] == "/dev/nvidia0,/dev/nvidiactl"
    assert p.loc[6943, "first_seen"] == pd.Timestamp("2026-12-01 03:04:05", tz="UTC")
    assert inc.load_report.files[0].balanced


def test_ps_o_without_header_in_a_session_reads_the_columns_it_names(tmp_path):
    (tmp_path / "session.txt").write_text(
        "$ date\n"
        "Tue Dec  1 03:04:05 UTC 2026\n"
        "$ ps -o pid=,etime=,args= -C python\n"
        " 4242  1-02:03:04 python train.py\n"
        "$ kill 4242\n")
    p = pm.load_shell_transcript(tmp_path / "session.txt").processes
    assert (p["pid"].iloc[0], p["command"].iloc[0]) == (4242, "python train.py")
    assert p["started"].iloc[0] == pd.Timestamp("2026-11-30 01:01:01", tz="UTC")


def test_a_paste_wrapped_in_single_backticks_is_a_session(tmp_path):
    (tmp_path / "issue.txt").write_text(
        "Running it, then `pgrep fio`, you can see:\n"
        "`[root@box ~]# pgrep -l fio`\n"
        "`4180 dm_bufio_cache\n"
        "6700 fio`\n"
        "`[root@box ~]# kill 6700`\n")
    inc = pm.load_incident(tmp_path)
    assert inc.load_report.files[0].format == "shell-transcript"
    assert sorted(inc.processes["pid"]) == [4180, 6700]
    assert list(inc.events.loc[inc.events["kind"] == "command", "message"]) == ["pgrep -l fio", "kill 6700"]


def test_a_trainer_run_in_the_foreground_is_read_from_the_session(tmp_path):
    """`python train.py --run-name fg 2>&1 | tee logs/train.log` typed at 09:05:19 (the `date`
    before it), its step lines and its CUDA out-of-memory traceback on the terminal, the prompt
    back by 09:06:19, and no logs/train.log beside the session: the session said nothing of the
    run ("No training seen"); its output is the run's log (a copy of logs/train.log), cited at the
    session's lines, and the run died of the OOM at 09:05:27."""
    (tmp_path / "session.txt").write_text(
        "user@gpu01:~$ date\nThu Aug 16 09:05:19 UTC 2018\n"
        "user@gpu01:~$ python train.py --run-name fg 2>&1 | tee logs/train.log\n"
        "2018-08-16 09:05:21 [fg] Loading dataset ...\n"
        + "".join(f"2018-08-16 09:05:{24 + k} [fg] step {5 * k} loss {9.2 - k / 10:.1f} tok/s {21000 + k} queue 2\n"
                  for k in (1, 2, 3))
        + "Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n    loss.backward()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "user@gpu01:~$ date\nThu Aug 16 09:06:19 UTC 2018\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    m = inc.metrics
    assert list(m.loc[m["metric"] == "train/tok_per_s", "value"]) == [21001, 21002, 21003]
    assert set(m["copy_of"]) == {"logs/train.log"} and set(m["run"]) == {"fg"}
    assert list(m.loc[m["metric"] == "train/tok_per_s", "ref"]) == ["session.txt:5", "session.txt:6", "session.txt:7"]
    assert "line 3: the output of train.py read as a training log (9 metric rows, 3 events)" in \
        inc.load_report.files[0].notes
    found = pm.detect(inc)
    assert list(found["kind"]) == ["training_died"]
    assert pm.what_happened(inc, found) == [
        "At 09:05:27 UTC run fg died while training: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "2.00 GiB. Nothing started it again."]


def test_a_folders_long_listing_names_its_files_with_the_folder(repo_dir):
    """`ls -la logs/` in the buffered-log capture (04:08:37.708, 04:08:59.343) lists `train.log`
    at 0 bytes: the file the launch wrote to as `logs/train.log`, named without its folder, as ls
    names a folder's entries. `.` and `..` are the folder itself, no file of it."""
    inc = pm.load_incident(repo_dir / "data" / "incidents" / "h200-1gpu-buffered-log" / "logs" / "operator.log")
    checks = inc.events[inc.events["kind"] == "file_check"]
    train = checks[checks["path"] == "logs/train.log"]
    assert train["time"].tolist() == [T("2026-12-06 04:08:37.708"), T("2026-12-06 04:08:59.343")]
    assert train["ref"].tolist() == ["operator.log:32", "operator.log:42"] and train["size_bytes"].tolist() == [0, 0]
    assert set(checks["path"]) == {f"logs/{n}" for n in ("operator.log", "ps.txt", "smi_apps.csv", "smi.csv", "train.log")}


def test_a_files_long_listing_keeps_its_path(tmp_path):
    """`ls -l` of one file prints the path as typed, and no `total` line: taken as printed; `ll`
    (the distributions' alias of `ls -alF`, with SELinux's `.` after the mode as GPT-SoVITS#1661
    printed it) lists a folder as `ls -l` does."""
    (tmp_path / "ops.log").write_text(
        "[2026-11-30T05:02:00Z] $ ls -la logs/slow.log\n-rw-r--r-- 1 root root 0 Nov 30 05:01 logs/slow.log\n"
        "[2026-11-30T05:03:00Z] $ ls -l logs\ntotal 4\n-rw-r--r-- 1 root root 12 Nov 30 05:02 slow.log\n"
        "[2026-11-30T05:04:00Z] $ ll logs/\ntotal 8\ndrwxr-xr-x. 2 abc abc 24 Nov 30 05:02 ./\n"
        "-rw-r--r--. 1 abc abc 30 Nov 30 05:03 slow.log\n")
    checks = pm.load_incident(tmp_path / "ops.log").events.query("kind == 'file_check'")
    assert checks["path"].tolist() == ["logs/slow.log"] * 3 and checks["size_bytes"].tolist() == [0, 12, 30]


def test_a_long_listing_of_several_folders_names_each_ones_files_with_it(tmp_path):
    """`ls -l logs runs/ top.txt` as GNU ls prints it here: the file operand first, as typed, then
    each folder's entries under its name as typed (`logs:`, `runs/:`): each entry is that folder's
    file. They were named without their folder, as files of the session's own folder."""
    work = tmp_path / "work"
    for folder, name, text in (("logs", "a.log", "hi\n"), ("runs", "b.log", "")):
        (work / folder).mkdir(parents=True)
        (work / folder / name).write_text(text)
    (work / "top.txt").write_text("x\n")
    listed = subprocess.run(["ls", "-l", "logs", "runs/", "top.txt"], cwd=work, capture_output=True, text=True,
                            env={"LC_ALL": "C", "PATH": os.environ["PATH"]}, check=True).stdout
    assert "\nlogs:\n" in listed and "\nruns/:\n" in listed
    (tmp_path / "ops.log").write_text("[2026-11-30T05:05:00Z] $ ls -l logs runs/ top.txt\n" + listed)
    checks = pm.load_incident(tmp_path / "ops.log").events.query("kind == 'file_check'")
    assert dict(zip(checks["path"], checks["size_bytes"], strict=True)) == {"top.txt": 2, "logs/a.log": 3, "runs/b.log": 0}


def test_a_long_listing_in_every_time_style_and_with_sizes_ls_rounded_names_its_files(tmp_path):
    """`ls -lh`, `ls -l --full-time`, `ls -lh --time-style=long-iso` and `ls -la --time-style=iso`
    as GNU ls prints them here: each lists the empty log at 0 bytes and the others at their size
    (as `-h` rounds it: 1.3K). Only `ls -l`'s default `Dec  6 08:43` was read: an empty log listed
    with `-h` or an ISO time showed nothing."""
    logs = tmp_path / "work" / "logs"
    logs.mkdir(parents=True)
    (logs / "a.log").write_bytes(b"x" * 1300)
    (logs / "b.log").write_bytes(b"")
    session = []
    for n, flags in enumerate((["-lh"], ["-l", "--full-time"], ["-lh", "--time-style=long-iso"], ["-la", "--time-style=iso"])):
        listed = subprocess.run(["ls", *flags, "logs"], cwd=logs.parent, capture_output=True, text=True,
                                env={"LC_ALL": "C", "PATH": os.environ["PATH"]}, check=True).stdout
        session.append(f"[2026-11-30T05:0{n}:00Z] $ ls {' '.join(flags)} logs\n{listed}")
    (tmp_path / "ops.log").write_text("".join(session))
    checks = pm.load_incident(tmp_path / "ops.log").events.query("kind == 'file_check'")
    assert checks["path"].tolist() == ["logs/a.log", "logs/b.log"] * 4
    assert checks["size_bytes"].tolist() == [1331, 0, 1300, 0, 1331, 0, 1300, 0]  # 1.3K: 1.3 x 1024


def test_a_listing_with_a_size_no_ls_prints_keeps_the_rest_of_the_session(tmp_path):
    """A size of 400 digits before a unit (no `ls -h` prints one) was read as a float, infinite,
    and the whole transcript failed to load: now that entry is no listed file, and the rest stays."""
    (tmp_path / "ops.log").write_text(
        "[2026-11-30T05:00:00Z] $ ls -lh logs\ntotal 4\n"
        f"-rw-r--r-- 1 root root {'9' * 400}K Nov 30 05:02 a.log\n-rw-r--r-- 1 root root 0 Nov 30 05:02 b.log\n")
    inc = pm.load_incident(tmp_path / "ops.log")
    assert not inc.load_report.failed
    assert inc.events.query("kind == 'file_check'")["path"].tolist() == ["logs/b.log"]


def test_a_stamped_session_that_printed_an_nvidia_smi_table_is_a_session(tmp_path):
    """h100-1gpu-port-in-use's operator.log up to its `nvidia-smi` table: four stamped prompts, the
    table most of the lines. The table's sniffer and the transcript's tied (0.9 each) and the
    table's, registered first, won: the session's launches and kills were never read."""
    from pathlib import Path

    from dflash_postmortem.loaders import registry

    src = Path(__file__).resolve().parents[3] / "data/incidents/h100-1gpu-port-in-use/logs/operator.log"
    p = tmp_path / "operator.log"
    p.write_text("".join(src.read_text().splitlines(keepends=True)[:40]))
    fmt, score = registry.sniff(p)
    assert fmt.name == "shell-transcript" and score > 0.9
