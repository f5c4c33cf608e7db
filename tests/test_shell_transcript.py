"""Operator transcripts: the bundled relaunch, launch parsing, and the file evidence."""

from __future__ import annotations

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.commands import parse_launch
from dflash_postmortem.loaders.transcript.shell_transcript import sniff_transcript

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
    assert pd.isna(failed["pid"]) and pd.isna(failed["log_file"])
    assert ok["log_path"] == "/tmp/capture2/logs/train_opt2.log" and ok["launcher"] == "setsid"
    assert ok["pid"] == 1391 and ok["log_file"] == "logs/train_opt2.log"
    assert ok["args"] == "--run-name fixed --seconds 90 --pid-file /tmp/capture2/run/fixed.pid"
    assert ok["ref"] == "logs/operator.log:17"


def test_regressed_launch_args(ops):
    r = ops[(ops["kind"] == "launch") & (ops["run"] == "regressed")].iloc[0]
    assert r["args"].startswith("--run-name regressed --fast-linear-attn 0 --use-reentrant 0")
    assert r["pid"] == 971 and r["background"]


def test_failed_redirect_and_missing_log(ops):
    red = ops[ops["kind"] == "redirect_failed"].iloc[0]
    assert red["path"] == "/workspace/train_opt2.log" and red["ref"] == "logs/operator.log:9"
    assert red["time"] == T("2026-11-30 05:23:01.707")
    miss = ops[ops["kind"] == "log_missing"].iloc[0]
    assert miss["ref"] == "logs/operator.log:16" and miss["time"] == T("2026-11-30 05:23:16.770")
    never = ops[ops["kind"] == "log_never_created"]
    assert never["path"].tolist() == ["/workspace/train_opt2.log"]


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


def test_parse_launch_forms():
    ssh = parse_launch("ssh node17 'cd /w && nohup torchrun --nproc-per-node 8 train.py --run-name r1 > /w/r1.log 2>&1 &'")
    assert ssh.launcher == "ssh" and ssh.run == "r1"
    tmux = parse_launch("tmux send-keys -t train 'python train.py --lr 3e-4 | tee out.log' Enter")
    assert tmux.launcher == "tmux" and tmux.log_path == "out.log"
    pct = parse_launch("pct exec 101 -- bash -c 'nohup python3 /srv/t.py --x 1 >> /root/t.log 2>&1 &'")
    assert pct.launcher == "pct exec" and pct.log_path == "/root/t.log"
    dock = parse_launch("docker exec -d trainer python train.py --epochs 3 > /logs/a.log")
    assert dock.launcher == "docker exec" and dock.args == "--epochs 3"
    assert parse_launch("ls -la /tmp") is None
    assert parse_launch("python check.py") is None  # foreground, no launcher: not a launch


def test_plain_paste_with_prompts(tmp_path):
    p = tmp_path / "paste.txt"
    p.write_text(
        "user@box:~/w$ nohup python train.py > run.log 2>&1 &\n[1] 4242\n"
        "user@box:~/w$ ps aux | grep train.py | grep -v grep | wc -l\n0\n"
        "user@box:~/w$ cat run.log\nTraceback (most recent call last):\nexit=137\nKilled\n"
    )
    assert sniff_transcript(p, p.read_bytes()) > 0.5
    inc = pm.load_shell_transcript(p)
    ev = inc.events
    assert ev["time"].isna().all()
    assert (ev["kind"] == "launch").sum() == 1
    assert ev.loc[ev["kind"] == "process_count", "count"].tolist() == [0]
    assert ev.loc[ev["kind"] == "exit", "exit_code"].tolist() == [137]
    killed = ev[ev["kind"] == "killed"]
    assert killed["signal"].tolist() == ["SIGKILL"] and killed["job_command"].tolist() == ["cat run.log"]
    launch = ev[ev["kind"] == "launch"].iloc[0]
    assert launch["pid"] == 4242  # the job line `[1] 4242` under the launch
    assert inc.load_report.files[0].balanced


def test_log_empty_for_60_seconds(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "slow.log").write_text("")
    (tmp_path / "ops.log").write_text(
        "[2026-11-30T05:00:00Z] $ setsid nohup python3 t.py --run-name slow > /x/logs/slow.log 2>&1 < /dev/null & disown\n"
        "[2026-11-30T05:02:00Z] $ ls -la /x/logs/slow.log\n-rw-r--r-- 1 root root 0 Nov 30 05:01 /x/logs/slow.log\n"
    )
    inc = pm.load_incident(tmp_path)
    empty = inc.events[inc.events["kind"] == "log_empty"]
    assert len(empty) == 1 and empty["time"].iloc[0] == T("2026-11-30 05:01:00")


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


def test_seed_tmux_launches_link_the_pid_ps_saw(seed_incident):
    ev = seed_incident.events
    launches = ev[(ev["kind"] == "launch") & (ev["source"] == "logs/operator.log")]
    assert launches["pid"].tolist()[:2] == [30517, 41877]
    assert launches["log_file"].tolist()[:2] == ["logs/train.log", "logs/train_opt.log"]


@pytest.mark.parametrize(("cmd", "launcher", "log_path", "args"), [
    ("nohup python train.py --lr 3e-4 > /w/a.log 2>&1 &", "nohup", "/w/a.log", "--lr 3e-4"),
    ("nohup python train.py --workers 2 > /w/a.log 2>&1 &", "nohup", "/w/a.log", "--workers 2"),
    ("setsid python3 t.py --x 1 >/w/b.log 2>/w/b.err < /dev/null & disown", "setsid", "/w/b.log", "--x 1"),
    ("python t.py --name 'my run' &>> /w/c.log &", "&", "/w/c.log", "--name my run"),
    ("ssh node17 'cd /w && nohup torchrun --nproc-per-node 8 train.py --run-name r1 > /w/r1.log 2>&1 &'",
     "ssh", "/w/r1.log", "--nproc-per-node 8 train.py --run-name r1"),
    ("pct exec 101 -- bash -c 'nohup python3 /srv/t.py --x 1 >> /root/t.log 2>&1 &'", "pct exec", "/root/t.log", "--x 1"),
    ("docker exec -d trainer bash -c \"python train.py --epochs 3 2>&1 | tee -a /logs/d.log\"",
     "docker exec", "/logs/d.log", "--epochs 3"),
    ("tmux send-keys -t train 'python train.py --lr 3e-4 | tee out.log' Enter", "tmux", "out.log", "--lr 3e-4"),
    ("tmux new -d -s t 'python train.py --lr 1 2>&1 | tee /w/t.log'", "tmux", "/w/t.log", "--lr 1"),
    ("torchrun --nproc-per-node 2 train.py --bs 8 > /w/tr.log 2>&1 &", "torchrun", "/w/tr.log", "--nproc-per-node 2 train.py --bs 8"),
    # unbalanced quote (a paste cut short): still read, nothing raised
    ("nohup python train.py --tag 'abc > /w/u.log 2>&1 &", "nohup", None, "--tag abc > /w/u.log 2>&1 &"),
])
def test_parse_launch_tokenises_with_shlex(cmd, launcher, log_path, args):
    x = parse_launch(cmd)
    assert (x.launcher, x.log_path, x.args) == (launcher, log_path, args)
    assert x.background == (log_path is not None)  # the cut-short one's `&` is inside its quote


@pytest.mark.parametrize("cmd", [
    "cd /w && dflash-postmortem launch --log /w/logs/t.log --expect-gpu -- python3 -m pkg.train --run-name fixed --lr 1",
    "cd /w && /opt/venv/bin/python3 -m dflash_postmortem.cli launch --log=/w/logs/t.log --timeout 600 -- "
    "python3 -m pkg.train --run-name fixed --lr 1",
])
def test_parse_launch_kit_launcher(cmd):
    x = parse_launch(cmd)
    assert (x.launcher, x.log_path, x.program, x.args, x.run) == (
        "dflash-postmortem launch", "/w/logs/t.log", "python3", "-m pkg.train --run-name fixed --lr 1", "fixed")
    assert x.background
