"""A wandb run's console (console.py): its lines as a terminal shows them, at the time their text
was written, and what went wrong as those lines say it, read from real runs of the corpus."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.wandb.console import console_lines
from dflash_postmortem.model.attempts import attempts, finished, open_ended

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "real-world" / "wandb"


def _load(path: Path) -> pm.Incident:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(path)


def test_a_line_is_dated_where_its_shown_text_began():
    """Chunks as the SDK records them (text and newlines apart, a bar redrawn with carriage
    returns): each line at the number and time of the chunk its shown text began in; the chunk
    that held the newline before it, or a redraw the text was written over, is not its time."""
    chunks = [(1, 10, "stderr", "bar 1/9\r"), (2, 20, "stderr", "bar 2/9\r"), (3, 30, "stderr", "Trace"),
              (4, 40, "stderr", "back (most recent call last):\n"), (5, 50, "stdout", "step 1"),
              (6, 60, "stdout", "\n"), (7, 70, "stdout", "step 2\n"), (8, 80, "stdout", "x\ry\n")]
    assert list(console_lines(chunks)) == [
        (3, 30, "stderr", "Traceback (most recent call last):"), (5, 50, "stdout", "step 1"),
        (7, 70, "stdout", "step 2"), (8, 80, "stdout", "y")]


def test_a_crash_in_the_console_is_read_as_a_log_would_say_it():
    """uasft-0.21 (SOURCES.tsv): a Hugging Face Trainer under DeepSpeed, CUDA out of memory 45 s
    in, exit 1. Its traceback is in the .wandb log's console records only (its output.log is
    empty), after the training bar's last redraw (3/120 at 08:28:38.068): the out-of-memory error
    is an event of that console line, and the run's death is told by it, not by `exit_code: 1`.
    The traceback's 27 console lines are one event, as in a log file; the lines before it stay
    console lines (the Trainer's three loss dicts)."""
    inc = _load(CORPUS / "uasft-0.21-offline-8gpu-exit1")
    ev = inc.events
    oom, tb = ev[ev["kind"] == "oom"], ev[ev["kind"] == "traceback"]
    assert len(oom) == len(tb) == 1 and oom["ref"].iloc[0] == tb["ref"].iloc[0] == "run-x3ehiqe7.wandb:56"
    assert tb["lines"].iloc[0] == 27 and tb["message"].iloc[0].startswith("Traceback (most recent call last):")
    console = ev.loc[ev["kind"] == "console", "message"]
    assert len(console) == 3 and all(m.startswith("{'loss': ") for m in console)
    assert oom["time"].iloc[0] == pd.Timestamp("2025-10-19 08:28:38.068449", tz="UTC")
    assert oom["message"].iloc[0].startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.70 GiB.")
    assert oom["pid"].iloc[0] == 2882678
    said = pm.what_happened(inc, pm.detect(inc))
    assert said[0].startswith("At 08:28:38 UTC run x3ehiqe7 died while training: torch.OutOfMemoryError: CUDA out of "
                              "memory. Tried to allocate 2.70 GiB.")


@pytest.mark.parametrize("where", ["inside an incident folder", "handed over as it is"])
def test_a_run_that_raised_died_whatever_folder_holds_it(tmp_path, where):
    """sdk031-crash-exit1-run (written by the SDK here: RuntimeError at step 19, exit 1). Its exit
    record's status was read as a clean end ("Nothing went wrong"); and the run folder handed
    over as the incident itself was read file by file, its debug logs' start and finish lines
    two starts that "never came up". One run, which died of its error."""
    run = CORPUS / "sdk031-crash-exit1-run"
    if where == "inside an incident folder":
        shutil.copytree(run, tmp_path / "incident" / run.name)
        run = tmp_path / "incident"
    inc = _load(run)
    assert {f.format for f in inc.load_report.files} >= {"wandb-run", "wandb-log", "wandb-debug-log"}
    found = pm.detect(inc)
    assert list(found["kind"]) == ["training_died"]
    assert pm.what_happened(inc, found) == [
        "At 10:23:20 UTC run crash died while training: RuntimeError: CUDA error: an illegal memory access was "
        "encountered. Nothing started it again."]


def test_a_run_whose_record_stops_without_an_exit_record_did_not_finish(tmp_path):
    """sdk031-sigkill-torn-run (SOURCES.tsv: SIGKILL 11 s in, the log cut inside a record): its
    end is where its record stops, "ended without exit record". That was a clean end (a run's
    end), so a restart of such a run would have resumed "nothing lost" and its death gone
    untold. It is no clean stop; where nothing else says what ended it and nothing started it
    again, nothing is said of it (as of a process gone from a listing)."""
    run = tmp_path / "incident" / "sdk031-sigkill-torn-run"
    shutil.copytree(CORPUS / run.name, run)
    inc = _load(tmp_path / "incident")
    (a,) = [r for _, r in attempts(inc).iterrows()]
    assert a["end_kind"] == "run_end" and a["end_message"].startswith("ended without exit record")
    assert open_ended(a) and not finished(a)
    assert "training_died" not in set(pm.detect(inc)["kind"])
