"""The loop end to end on CPU: capture-format step lines, thread failures stop the run."""

from __future__ import annotations

import io
import re

import pytest

torch = pytest.importorskip("torch")

from dflash_postmortem.replay.settings import ReplayConfig  # noqa: E402
from dflash_postmortem.replay.train import (  # noqa: E402
    add_train_arguments,
    config_from_args,
    train,
)

# The capture's line form, e.g. `2026-11-30 05:20:58 [baseline] step 5 loss 11.9410 tok/s 11958 queue 4`
STEP_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[(?P<run>[^\]]+)\] step (?P<step>\d+) "
                       r"loss (?P<loss>[\d.]+) tok/s (?P<tok>\d+) queue (?P<q>\d+)$")
TINY = dict(vocab=509, hidden=32, layers=4, heads=2, seq=64, batch=2, draft_heads=2, num_anchors=6,
            block_size=4, chunk_blocks=4, dataset_tokens=4096, wandb=False, seconds=60)


def run(**knobs) -> tuple[int, str]:
    out = io.StringIO()
    rc = train(ReplayConfig(**{**TINY, **knobs}), stream=out)
    return rc, out.getvalue()


def test_step_lines_have_the_capture_form(bundled_dir, tmp_path):
    captured = (bundled_dir / "logs" / "train.log").read_text().splitlines()
    assert STEP_LINE.match(captured[7]), "the regex must describe the real capture first"
    pid_file = tmp_path / "run.pid"
    rc, log = run(run_name="unit", max_steps=10, pid_file=str(pid_file))
    assert rc == 0
    lines = log.splitlines()
    stages = [line.split("] ", 1)[1] for line in lines if not STEP_LINE.match(line)]
    assert stages[:2] == ["Loading dataset ...", "Dataset ready: 4096 tokens"]
    assert stages[-2:] == ["Starting training threads", "Training stopped"]
    steps = [STEP_LINE.match(line) for line in lines if STEP_LINE.match(line)]
    assert [int(m["step"]) for m in steps][:2] == [5, 10]
    assert all(m["run"] == "unit" and int(m["tok"]) > 0 for m in steps)
    assert pid_file.read_text().isdigit()


@pytest.mark.parametrize("where", ["drafter:2", "target:3"])
def test_a_thread_exception_stops_the_run_with_its_traceback(where):
    rc, log = run(run_name="boom", inject_error=where, seconds=120, drafter_threads=2)
    assert rc == 1
    role = where.split(":")[0]
    assert re.search(rf"\[boom\] Thread {role}-\d failed:", log)
    assert "Traceback (most recent call last):" in log
    assert f"RuntimeError: injected failure in the {role} at its step {where[-1]}" in log
    assert log.rstrip().endswith("[boom] Training failed")


@pytest.mark.parametrize("mode", ["locked", "main-thread"])
def test_guarded_compile_modes_train_cleanly_with_two_drafter_threads(mode):
    rc, log = run(run_name=mode, compile=mode, compile_backend="eager", drafter_threads=2, max_steps=6)
    assert rc == 0, log
    assert "failed" not in log


def test_capture_flag_names_are_aliases():
    import argparse

    p = argparse.ArgumentParser()
    add_train_arguments(p)
    cfg = config_from_args(p.parse_args(
        ["--run-name", "regressed", "--fast-linear-attn", "0", "--use-reentrant", "0", "--lm-head-opt", "0", "--cpu"]))
    assert (cfg.linear_attn, cfg.use_reentrant, cfg.lm_head_mode) == ("fallback", False, "trainable")
    assert cfg.target_gpus == [] and cfg.drafter_gpus == []


def test_a_cpu_share_keeps_each_thread_to_its_share_of_the_wall_time(tmp_path):
    """`--cpu-share 0.25`: after each batch a thread waits three times what it computed, so the
    target's busy time is at most a quarter of the run's (plus the last batch's, whose wait the
    stop cuts short); shares outside (0, 1] are refused as they are typed."""
    import argparse
    import json

    p = argparse.ArgumentParser()
    add_train_arguments(p)
    assert config_from_args(p.parse_args(["--cpu", "--cpu-share", "0.25"])).cpu_share == 0.25
    for bad in ("0", "1.5", "-1"):
        with pytest.raises(SystemExit):
            p.parse_args(["--cpu-share", bad])
    result = tmp_path / "result.json"
    rc, log = run(run_name="paced", cpu_share=0.25, max_steps=30, log_every=5, warmup_steps=2,
                  result_json=str(result))
    assert rc == 0 and "[paced] step 30 " in log, log
    busy = json.loads(result.read_text())["target_busy_fraction"]
    assert 0 < busy <= 0.25 * 30 / 29, busy


@pytest.mark.slow
def test_dist_transport_over_gloo(capfd):
    """Target and drafter as two processes joined by torch.distributed (gloo on CPU)."""
    rc, _ = run(run_name="dist", transport="dist", max_steps=5, log_every=5)
    out = capfd.readouterr().out
    assert rc == 0, out
    assert any(STEP_LINE.match(line) and "step 5 " in line for line in out.splitlines()), out
    assert "[dist] Training stopped" in out


@pytest.mark.slow
def test_ranks_whose_time_limits_differ_stop_after_the_same_step(tmp_path):
    """Two ranks under a real torchrun (gloo on CPU), rank 1's time limit 2 s, rank 0's 30 s:
    rank 1's stop goes out with its next all-reduce and both stop after that step, cleanly. Each
    rank stopping on its own clock left rank 0 in an all-reduce with a peer gone (`Connection
    closed by peer`, torchrun's ChildFailedError) at the end of every timed multi-rank run."""
    import subprocess
    import sys
    from pathlib import Path

    rank = tmp_path / "rank.sh"
    rank.write_text(f'#!/usr/bin/env bash\nexec {sys.executable} -m dflash_postmortem.replay.train '
                    '--seconds $(( RANK == 1 ? 2 : 30 )) "$@"\n')
    rank.chmod(0o755)
    tiny = ("--cpu --vocab 509 --hidden 32 --layers 4 --heads 2 --seq 64 --draft-heads 2 --num-anchors 6 "
            "--dataset-tokens 4096 --log-every 5 --no-wandb --pg-timeout 20 --run-name agree").split()
    torchrun = Path(sys.executable).with_name("torchrun")
    done = subprocess.run([str(torchrun), "--nproc-per-node", "2", "--max-restarts", "0", "--no-python", str(rank),
                           *tiny], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert out.count("[agree] Training stopped") == 2 and "Training failed" not in out, out
    # the same last step on both ranks: they stopped together
    last = {}
    for line in out.splitlines():
        if (m := STEP_LINE.match(line)) is not None:
            last.setdefault(int(m["step"]), 0)
            last[int(m["step"])] += 1
    assert last[max(last)] == 2, out
