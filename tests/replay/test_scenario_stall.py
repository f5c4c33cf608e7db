"""The `stall` replay: a drafter thread that blocks (or dies) while its process lives on."""

from __future__ import annotations

import re
import warnings

import pandas as pd
import pytest

pytest.importorskip("torch")

from support.replays import TINY  # noqa: E402
from support.watching import watching  # noqa: E402

from dflash_postmortem.cli import main  # noqa: E402
from dflash_postmortem.units import duration  # noqa: E402

# Four trainer processes (torch + wandb start-up each) per scenario, mostly waiting on the clock: a
# file per scenario, so that the scenarios run beside each other on the test workers.
pytestmark = pytest.mark.slow


STALL_S = 6.0


@pytest.fixture(scope="module")
def stall_watched(tmp_path_factory):
    """The replay's folder, and what the live watch announced while the replay wrote it."""
    out = tmp_path_factory.mktemp("replay") / "stall"
    with watching(out) as said:
        rc = main(["replay", "stall", "--out", str(out), "--seconds", "3", "--ps-interval", "1", "--quiet",
                   "--stall-seconds", f"{STALL_S:g}", "--trainer-args", TINY])
    assert rc == 0
    return out, said


@pytest.fixture(scope="module")
def stalled(stall_watched):
    return stall_watched[0]


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
    # No GPU samples on CPU: the stall shows in the log going silent while the process lives,
    # from the last step's line to the operator's kill.
    (stall,) = [r for _, r in found.iterrows() if r["kind"] == "stall"]
    last = pd.Timestamp(re.findall(r"^(\S+ \S+) \[stalled\] step 19 ", log, re.M)[-1], tz="UTC")
    kill = inc.events[inc.events["kind"] == "kill_sent"]["time"].iloc[-1]
    assert stall["start"] == last and stall["end"] == kill
    assert stall["title"] == f"stall: no step for {duration((kill - last).total_seconds())} while PID {pid} was alive"


def test_the_watch_said_the_stall_while_it_ran_before_the_kill(stall_watched):
    """`watch`, paced as the command paces it, followed the folder while the replay wrote it:
    the stall was announced once, from the last step's line, and every finding the post-mortem
    of the finished folder gives was announced; it announced the attempts the post-mortem finds,
    no more (the relaunch's log and its PID file one attempt while the typed launch was still to
    reach the transcript), and no failed start the post-mortem does not find (a start-up quiet
    past the incident's 3-s stall threshold while its process lived was still starting)."""
    import dflash_postmortem as pm
    from dflash_postmortem.model.attempts import attempts
    from dflash_postmortem.watch.live import ANNOUNCED

    out, said = stall_watched
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(out)
    found = pm.detect(inc)
    announced = found[found["kind"].isin(list(ANNOUNCED))]
    expected = [(ANNOUNCED[k], n.get("run") or n.get("run_after"))
                for k, n in zip(announced["kind"], announced["numbers"], strict=True)]
    told = [(a.kind, a.job) for a in said]
    assert [x for x in expected if x not in told] == [], told
    # (what each failed start said and cited: a race the post-mortem does not see shows in them)
    assert [x for x in told if x[0] == "failed_start"] == [x for x in expected if x[0] == "failed_start"], \
        [(str(a.time), a.text, a.evidence) for a in said if a.kind in ("failed_start", "attempt_started")]
    att = attempts(inc)
    assert [j for k, j in told if k == "attempt_started"] == [str(r or j) for r, j in zip(att["run"], att["job"], strict=True)] \
        == ["stalled", "fixed"], told
    assert [x for x in told if x[0] == "stall"] == [("stall", "stalled")], [a.text for a in said]
    (stall,) = [a for a in said if a.kind == "stall"]
    assert "step 19 " in stall.evidence and stall.evidence.startswith("logs/train.log:")
    log = (out / "logs" / "train.log").read_text()
    assert stall.time == pd.Timestamp(re.findall(r"^(\S+ \S+) \[stalled\] step 19 ", log, re.M)[-1], tz="UTC")


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
