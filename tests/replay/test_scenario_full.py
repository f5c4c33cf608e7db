"""A short `full` replay writes an incident folder in the capture's forms, and the kit reads it."""

from __future__ import annotations

import re
import warnings

import pytest

pytest.importorskip("torch")

from support.replays import COMMAND, STEP, TINY  # noqa: E402
from support.watching import watching  # noqa: E402

from dflash_postmortem.cli import main  # noqa: E402

# Four trainer processes (torch + wandb start-up each) per scenario, mostly waiting on the clock: a
# file per scenario, so that the scenarios run beside each other on the test workers.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def replay_watched(tmp_path_factory):
    """The replay's folder, and what the live watch announced while the replay wrote it."""
    out = tmp_path_factory.mktemp("replay") / "full"
    with watching(out) as said:
        rc = main(["replay", "full", "--out", str(out), "--seconds", "3", "--ps-interval", "1", "--quiet",
                   "--trainer-args", TINY])
    assert rc == 0
    return out, said


@pytest.fixture(scope="module")
def replayed(replay_watched):
    return replay_watched[0]


def test_operator_transcript_tells_the_story_in_the_capture_form(replayed, bundled_dir):
    real = (bundled_dir / "logs" / "operator.log").read_text()
    assert len(COMMAND.findall(real)) == 10, "the pattern must describe the real transcript first"
    text = (replayed / "logs" / "operator.log").read_text()
    commands = COMMAND.findall(text)
    assert "setsid nohup" in commands[0] and "--run-name baseline" in commands[0]
    assert "--run-name regressed" in commands[1] and "--fast-linear-attn 0" in commands[1]
    assert commands[2].startswith("kill -TERM $(cat ")
    assert re.match(r"kill -KILL -- -\d+; echo session \d+ closed", commands[4])  # session torn down
    assert f"bash: line 1: {replayed}/workspace/train_opt2.log: No such file or directory" in text
    assert any(" launch --log " in c for c in commands)
    assert "launch: step  ok" in text and "launch: started" in text


def test_trainer_logs_pid_files_ps_snapshots_and_wandb_runs(replayed):
    logs = replayed / "logs"
    assert {m for m in STEP.findall((logs / "train.log").read_text())} == {"baseline"}
    assert {m for m in STEP.findall((logs / "train_opt.log").read_text())} == {"regressed"}
    assert "Falling back to torch implementation" in (logs / "train_opt.log").read_text()
    assert {m for m in STEP.findall((logs / "train_opt2.log").read_text())} == {"fixed"}
    restart = (logs / "train_restart.log").read_text()  # the run whose session was torn down
    assert "Loading dataset ..." in restart and not STEP.search(restart)
    assert not (replayed / "workspace").exists()
    for run in ("baseline", "regressed", "fixed"):
        assert (replayed / "run" / f"{run}.pid").read_text().isdigit()
    ps = (logs / "ps_aux_snapshots.txt").read_text()
    assert re.match(r"# \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\nUSER +PID ", ps)
    assert "--run-name regressed" in ps
    assert len(list((replayed / "wandb" / "wandb").glob("offline-run-*/run-*.wandb"))) == 3
    assert re.search(r'^timezone = "[\w/+-]+"$', (replayed / "incident.toml").read_text(), re.M)


def test_the_kit_loads_the_replayed_incident(replayed):
    import dflash_postmortem as pm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(replayed)
    tok = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]
    assert {"baseline", "regressed", "fixed"} <= set(tok["run"].dropna())
    assert len(inc.processes) > 0


def test_the_watch_said_while_it_ran_what_the_post_mortem_finds(replay_watched):
    """`watch`, paced as the command paces it, followed the folder while the replay wrote it:
    it announced every attempt and each restart that never came up, and every finding the
    post-mortem of the finished folder gives (a drop it announced while the runs were short may
    be weighed again by the post-mortem on the whole runs: a CPU replay's pace is noisy)."""
    import dflash_postmortem as pm
    from dflash_postmortem.watch.live import ANNOUNCED

    out, said = replay_watched
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = pm.detect(pm.load_incident(out))
    announced = found[found["kind"].isin(list(ANNOUNCED))]
    expected = [(ANNOUNCED[k], n.get("run") or n.get("run_after"))
                for k, n in zip(announced["kind"], announced["numbers"], strict=True)]
    told = [(a.kind, a.job) for a in said]
    assert [x for x in expected if x not in told] == [], told
    failed = sorted(x for x in expected if x[0] == "failed_start")
    assert failed == sorted(x for x in told if x[0] == "failed_start") == [("failed_start", "fixed")] * 2
    assert [j for k, j in told if k == "attempt_started"] == ["baseline", "regressed", "fixed", "fixed", "fixed"]
