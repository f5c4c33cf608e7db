"""The `survivor` replay: an operator at a real interactive terminal, a kill that fails."""

from __future__ import annotations

import re
import warnings

import pytest

pytest.importorskip("torch")

from support.replays import TINY  # noqa: E402

from dflash_postmortem.cli import main  # noqa: E402

# Four trainer processes (torch + wandb start-up each) per scenario, mostly waiting on the clock: a
# file per scenario, so that the scenarios run beside each other on the test workers.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def survivor(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "survivor"
    assert main(["replay", "survivor", "--out", str(out), "--seconds", "3", "--ps-interval", "1", "--quiet",
                 "--trainer-args", TINY + " --no-wandb"]) == 0
    return out


def test_survivor_replay_records_a_real_interactive_terminal(survivor):
    text = (survivor / "logs" / "terminal.log").read_text(errors="replace")
    assert text.startswith("Script started on ")  # util-linux script, as an operator keeps a session log
    assert re.search(r"bash: kill: \(-\d+\) - No such process", text)  # the group kill named a process
    assert "Killed" in text and "exit=137" in text  # the relaunch under timeout -s KILL 2
    assert re.search(r"\[\d\]\+?-? +Exit 143 +nohup \./run_train\.sh --run-name regressed", text)
    # killed in start-up: 2 s is too short for the first step (a fast machine may log the first
    # start-up lines; a slow one none)
    assert not re.search(r"\bstep \d+", (survivor / "logs" / "train_fix.log").read_text())


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
