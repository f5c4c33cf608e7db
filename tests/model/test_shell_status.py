"""The shell's status of the command that launched a run (`...; echo exit=$?` under a prompt that
dates the lines below it) is when that command ended, not when it was typed; and 124 under
`timeout` is the limit the command set, a stop it asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

import dflash_postmortem as pm
from dflash_postmortem.model import attempts

CMD = ("python -m dflash_postmortem.replay.train --cpu --run-name {run} --seconds 120 --log-every 5 --no-wandb "
       "> logs/train.log 2>&1; echo exit=$?")


def _foreground(folder: Path, run: str, prefix: str, status: int, steps: int) -> None:
    """A foreground run in a session whose prompts carry their time, the status echoed on the same
    line: recorded on this machine with the replay trainer on CPU (2026-12-04), lines cut."""
    (folder / "logs").mkdir(parents=True)
    (folder / "logs" / "operator.log").write_text(
        f"[2026-12-04T04:58:17.731Z] $ {prefix}{CMD.format(run=run)}\nexit={status}\n")
    lines = [f"2026-12-04 04:58:18 [{run}] Loading target model on cpu ...",
             f"2026-12-04 04:58:18 [{run}] Starting training threads"]
    lines += [f"2026-12-04 04:58:{18 + s:02d} [{run}] step {5 * (s + 1)} loss 6.4 tok/s {15000 + 41 * (s % 3)} queue 4"
              for s in range(steps)]
    (folder / "logs" / "train.log").write_text("\n".join(lines) + "\n")


def test_a_run_capped_by_timeout_was_stopped_by_its_limit_not_an_error(tmp_path):
    # `timeout 20 python ...; echo exit=$?` printed exit=124; the log's last step line at 04:58:37
    _foreground(tmp_path, "capped", "timeout 20 ", 124, 20)
    inc = pm.load_incident(tmp_path)
    (a,) = attempts(inc).itertuples(index=False)
    assert (a.end_kind, a.exit_code, a.signal) == ("exit", 124, "SIGTERM")
    assert str(a.end) == "2026-12-04 04:58:37+00:00"  # the status is dated by its command (04:58:17)
    found = pm.detect(inc)
    assert found["kind"].tolist() == ["time_limit"] and found["severity"].tolist() == ["warning"]
    assert pm.what_happened(inc, found) == [
        "At 04:58:37 UTC run capped was stopped by its time limit while training: exit=124 (timed out: timeout "
        "sent its signal). Nothing started it again."]


def test_a_foreground_run_that_failed_ended_when_its_log_did(tmp_path):
    _foreground(tmp_path, "fg", "", 1, 12)
    inc = pm.load_incident(tmp_path)
    (a,) = attempts(inc).itertuples(index=False)
    assert (a.end_kind, a.exit_code) == ("exit", 1)
    assert str(a.end) == "2026-12-04 04:58:29+00:00"  # its last step line, not 04:58:17
    died = pm.detect(inc)
    assert died["kind"].tolist() == ["training_died"] and str(died["start"].iloc[0]) == "2026-12-04 04:58:29+00:00"


def test_an_error_in_a_log_with_no_time_is_told_with_how_much_later_it_may_be(tmp_path):
    """A trainer that prints no time (its stamps cut off, recorded on this machine with the replay
    trainer on CPU, 2026-12-04): its lines are placed at the launch that wrote the file
    (05:09:57.286), the earliest they can be; the last thing the incident observed is the
    operator's `tail` at 05:10:15.352, so its error may be up to 18 s later."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "operator.log").write_text(
        "[2026-12-04T05:09:57.286Z] $ nohup python -m dflash_postmortem.replay.train --cpu --run-name plain "
        "--seconds 15 --log-every 50 --no-wandb > logs/train.log 2>&1 &\n"
        "[2026-12-04T05:10:15.352Z] $ tail -1 logs/train.log\n[plain] Training failed\n")
    lines = ["[plain] Loading target model on cpu ...", "[plain] Starting training threads"]
    lines += [f"[plain] step {s} loss 6.4 tok/s {15000 + s % 7} queue 4" for s in range(50, 1500, 50)]
    lines += ["Traceback (most recent call last):", '  File "train.py", line 19, in raise_at',
              "RuntimeError: injected failure in the drafter at its step 1500", "[plain] Training failed"]
    (tmp_path / "logs" / "train.log").write_text("\n".join(lines) + "\n")
    inc = pm.load_incident(tmp_path)
    died = pm.detect(inc)
    assert died["kind"].tolist() == ["training_died"]
    assert died["within_s"].iloc[0] == pytest.approx(18.066)
    assert died["title"].iloc[0].startswith("run plain died at 05:09:57 (up to 18 s later): RuntimeError")
    assert pm.what_happened(inc, died)[0].startswith("At 05:09:57 UTC (up to 18 s later) run plain died")


LOOP = Path(__file__).parent / "fixtures" / "foreground-loop-cpu"


def test_each_pass_of_a_foreground_loop_is_a_start_begun_when_the_one_before_ended():
    """fixtures/foreground-loop-cpu (README there): `for lr in 1e-4 3e-4; do python ... --run-name
    lr-$lr ... > logs/lr-$lr.log 2>&1; done` typed at 00:19:32.213. Pass 1 starts as the loop is
    typed; pass 2 when pass 1 had ended, dated by its own log's first line (00:19:39), no sooner
    than the loop; each is the launch of its own log, both the operator's."""
    inc = pm.load_incident(LOOP)
    att = attempts(inc)
    assert att["run"].tolist() == ["lr-1e-4", "lr-3e-4"]
    assert att["log_path"].tolist() == ["logs/lr-1e-4.log", "logs/lr-3e-4.log"]
    assert att["by"].tolist() == ["operator", "operator"] and set(att["launch_ref"]) == {"logs/operator.log:1"}
    assert [str(t) for t in att["start"]] == ["2026-12-07 00:19:32.213000+00:00", "2026-12-07 00:19:39+00:00"]
    assert att["end_kind"].tolist() == ["training_stop", "training_stop"]
    assert att["flags"].map(lambda f: f.get("--run-name")).tolist() == ["lr-1e-4", "lr-3e-4"]


CTRL_C = Path(__file__).parent / "fixtures" / "ctrlc-sweep-cpu"


def test_each_pass_of_a_loop_stopped_by_ctrl_c_ends_on_the_trainers_interrupt():
    """fixtures/ctrlc-sweep-cpu (README there): a three-pass foreground loop typed at 23:23:51,
    each pass stopped by Ctrl-C; each trainer logged `interrupted at step N, saving checkpoint` and
    exited 0, and bash went on with the next pass. The later passes are tied to their processes by
    `ps` (its START a second or two before each log's first line), and each pass ends at its own
    interrupt line, not where `ps` last listed it."""
    att = attempts(pm.load_incident(CTRL_C))
    assert att["run"].tolist() == ["lr-1e-4", "lr-3e-4", "lr-1e-3"]
    assert att["pids"].tolist() == [[31095], [31489], [31779]]
    assert [t.strftime("%H:%M:%S") for t in att["start"]] == ["23:23:51", "23:24:26", "23:24:51"]
    assert att["end_kind"].tolist() == ["interrupt"] * 3
    assert [t.strftime("%H:%M:%S.%f")[:12] for t in att["end"]] == ["23:24:26.434", "23:24:51.439", "23:25:06.447"]
    assert att["end_ref"].tolist() == ["logs/lr-1e-4.log:74", "logs/lr-3e-4.log:50", "logs/lr-1e-3.log:21"]
    assert set(att["launch_ref"]) == {"logs/terminal.typescript:4"}
