"""A short `full` replay writes an incident folder in the capture's forms, and the kit reads it."""

from __future__ import annotations

import re
import warnings

import pytest

pytest.importorskip("torch")

from dflash_postmortem.cli import main  # noqa: E402

TINY = ("--vocab 509 --hidden 32 --layers 4 --heads 2 --seq 64 --draft-heads 2 --num-anchors 6 "
        "--dataset-tokens 4096 --log-every 1")
STEP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[(\w+)\] step \d+ loss [\d.]+ tok/s \d+ queue \d+$", re.M)
COMMAND = re.compile(r"^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] \$ (.*)$", re.M)


# Four trainer processes (torch + wandb start-up each) per scenario, mostly waiting on the clock:
# each scenario's tests are a group of their own, so the scenarios run beside each other on the
# test workers (conftest.py), not one after another.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "full"
    rc = main(["replay", "full", "--out", str(out), "--seconds", "3", "--ps-interval", "1", "--quiet",
               "--trainer-args", TINY])
    assert rc == 0
    return out


@pytest.mark.xdist_group("replay-full")
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


@pytest.mark.xdist_group("replay-full")
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


@pytest.mark.xdist_group("replay-full")
def test_the_kit_loads_the_replayed_incident(replayed):
    import dflash_postmortem as pm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(replayed)
    tok = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]
    assert {"baseline", "regressed", "fixed"} <= set(tok["run"].dropna())
    assert len(inc.processes) > 0


STALL_S = 6.0


@pytest.fixture(scope="module")
def stalled(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "stall"
    rc = main(["replay", "stall", "--out", str(out), "--seconds", "3", "--ps-interval", "1", "--quiet",
               "--stall-seconds", f"{STALL_S:g}", "--trainer-args", TINY])
    assert rc == 0
    return out


@pytest.mark.xdist_group("replay-stall")
def test_the_stalled_run_stops_logging_and_lives_on_until_killed(stalled):
    """The drafter thread blocks at its step 20: step 19 is the last line, the process stays
    listed through the stall, the operator's checks see it, the kill ends it, `launch` relaunches."""
    import dflash_postmortem as pm
    from dflash_postmortem.detect import detect

    log = (stalled / "logs" / "train.log").read_text()
    steps = [int(m) for m in re.findall(r"\] step (\d+) ", log)]
    assert steps[-1] == 19 and "Traceback" not in log and "Training stopped" not in log
    assert 'stall_s = 3\n' in (stalled / "incident.toml").read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(stalled)
    pid = int((stalled / "run" / "stalled.pid").read_text())
    rows = inc.processes[inc.processes["pid"] == pid]
    assert len(rows) == 1, rows[["command", "first_seen", "last_seen"]]  # the setsid wrapper folded in
    proc = rows.iloc[0]
    tok = inc.metrics[(inc.metrics["metric"] == "train/tok_per_s") & (inc.metrics["run"] == "stalled")]
    silent = (proc["last_seen"] - tok["time"].max()).total_seconds()
    assert silent >= STALL_S / 2, (silent, proc["last_seen"], tok["time"].max())  # alive and silent
    counts = inc.events[inc.events["kind"] == "process_count"]["count"].tolist()
    assert counts[0] >= 1 and counts[-1] == 0, counts  # alive at the check, gone after the kill
    found = detect(inc)
    assert (found["kind"] == "verified_start").sum() == 1, found[["kind", "title"]].to_string()
    # CPU only: no GPU samples, so no stall finding (it needs memory held at ~0 % utilization);
    # the H200 capture data/incidents/h200-1gpu-stall has them.
    assert (found["kind"] != "stall").all()


@pytest.mark.xdist_group("replay-crash")
def test_the_crash_variant_leaves_a_traceback_and_a_live_process(tmp_path):
    """--stall-by crash: the drafter raises at its step 20 under --on-thread-error continue; the
    traceback is in the log, nothing after it, and the operator's check still counts the trainer."""
    out = tmp_path / "crash"
    assert main(["replay", "stall", "--out", str(out), "--seconds", "3", "--ps-interval", "1", "--quiet",
                 "--stall-seconds", "4", "--stall-by", "crash", "--trainer-args", TINY]) == 0
    log = (out / "logs" / "train.log").read_text().rstrip().splitlines()
    assert log[-1] == "RuntimeError: injected failure in the drafter at its step 20"
    assert "Exception in thread drafter-0:" in log and "Training stopped" not in log
    assert [int(m) for m in re.findall(r"\] step (\d+) ", "\n".join(log))][-1] == 19
    transcript = (out / "logs" / "operator.log").read_text()
    counts = re.findall(r"\| wc -l\n(\d+)\n", transcript)
    assert int(counts[0]) >= 1 and counts[-1] == "0"
    assert 'title = "replay: stall (cause: a drafter thread that died, unguarded)"' in (out / "incident.toml").read_text()


@pytest.fixture(scope="module")
def survivor(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "survivor"
    assert main(["replay", "survivor", "--out", str(out), "--seconds", "3", "--ps-interval", "1", "--quiet",
                 "--trainer-args", TINY]) == 0
    return out


@pytest.mark.xdist_group("replay-survivor")
def test_survivor_replay_records_a_real_interactive_terminal(survivor):
    text = (survivor / "logs" / "terminal.log").read_text(errors="replace")
    assert text.startswith("Script started on ")  # util-linux script, as an operator keeps a session log
    assert re.search(r"bash: kill: \(-\d+\) - No such process", text)  # the group kill named a process
    assert "Killed" in text and "exit=137" in text  # the relaunch under timeout -s KILL 2
    assert re.search(r"\[\d\]\+?-? +Exit 143 +nohup \./run_train\.sh --run-name regressed", text)
    assert (survivor / "logs" / "train_fix.log").stat().st_size == 0


@pytest.mark.xdist_group("replay-survivor")
def test_the_kit_finds_the_survivor_chain_in_the_replay(survivor):
    """The links that do not depend on this machine's speed: the failed kill, the survivor it
    left, the restart its timeout killed."""
    import dflash_postmortem as pm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(survivor)
    found = pm.detect(inc)
    kinds = list(found["kind"])
    assert {"kill_failed", "survivor", "failed_restart"} <= set(kinds)
    kill = found[found["kind"] == "kill_failed"].iloc[0]
    pid = int((survivor / "run" / "regressed.pid").read_text())
    assert kill["numbers"]["pid"] == pid and kill["numbers"]["group"]
    surv = found[found["kind"] == "survivor"].iloc[0]
    assert surv["caused_by"][0]["id"] == kill["id"]
    restart = found[found["kind"] == "failed_restart"].iloc[0]
    assert restart["numbers"]["reason"] == "killed by its timeout wrapper"


@pytest.mark.alone  # it compares two runs' speed: other tests beside it would decide the ratio
def test_replay_regression_with_its_defaults_is_detected_with_its_cause(tmp_path):
    """`replay regression` as a new user runs it (20 s a run, a tiny model on the CPU): the
    regressed run is found, and its cause is the flags its launch changed."""
    import dflash_postmortem as pm

    out = tmp_path / "regression"
    assert main(["replay", "regression", "--out", str(out), "--quiet"]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(out)
    found = pm.detect(inc)
    reg = found[found["kind"] == "throughput_regression"]
    assert len(reg) == 1, list(found["title"])
    n = reg.iloc[0]["numbers"]
    assert (n["run_before"], n["run_after"]) == ("baseline", "regressed") and n["ratio"] < 0.85
    assert n["flag_differences"] == ["--fast-linear-attn 0", "--use-reentrant 0", "--draft-layer-ckpt 1",
                                     "--lm-head-opt 0"]
    cause = reg.iloc[0]["caused_by"][0]
    assert cause["id"] == "event:logs/operator.log:3" and "--run-name regressed" in (out / "logs" / "operator.log").read_text().splitlines()[2]
