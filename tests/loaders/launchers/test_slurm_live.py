"""A real one-node Slurm on loopback (tests/support/slurm.py): one job runs into its one-minute time
limit, another is cancelled with scancel, and what Slurm wrote about them (the jobs' output files,
`scontrol show job`, `sacct -P`, the job-completion log) is loaded with `load_incident` and must
agree: the same job ids, states, ends and events from every source. Skipped with the reason where
Slurm cannot be installed or started (`make slurm`). The time limit takes a minute and more to
hit: the file is one test (one cluster), which the test workers take as a unit (conftest.py's
scheduler gives each file to one worker), so it waits beside the rest of the tests."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from support.slurm import OneNodeSlurm, Unavailable

import dflash_postmortem as pm
from dflash_postmortem.model.attempts import attempts
from dflash_postmortem.replay.scenarios import Transcript

pytestmark = pytest.mark.slow

SACCT_FIELDS = "JobID,JobName,State,ExitCode,Start,End,Elapsed,NodeList,Timelimit"


@pytest.fixture(scope="module")
def slurm_incident(tmp_path_factory):
    """Run the two jobs and gather what Slurm wrote into an incident folder."""
    slurm = OneNodeSlurm(tmp_path_factory.mktemp("slurm"))
    try:
        slurm.start()
    except Unavailable as e:
        pytest.skip(f"no one-node Slurm here: {e}")
    try:
        out = slurm.root / "out"
        script = slurm.root / "job.sh"
        script.write_text("#!/bin/bash\necho \"$(date -u '+%F %T') [ddp] step 5 loss 6.44 tok/s 15315\"\nsrun sleep 300\n")
        submit = ["sbatch", "--parsable", f"--output={out}/slurm-%j.out"]
        limited = slurm.run(*submit, "--time=1", "--job-name=timelimit", str(script)).strip()
        cancelled = slurm.run(*submit, "--job-name=cancelled", str(script)).strip()
        state = lambda job: slurm.run("scontrol", "show", "job", job).split("JobState=")[1].split()[0]  # noqa: E731
        slurm.wait_for("the jobs to run", lambda: state(cancelled) == "RUNNING" and state(limited) == "RUNNING", 60)
        # srun's step is up, so the cancellation reaches a running step (a fixed sleep was too short
        # on a busy machine: the cancelled job's output then had no CANCELLED line)
        slurm.wait_for("the step to run", lambda: f"{cancelled}.0" in slurm.run("squeue", "-h", "-s", "-o", "%i"), 60)
        # the operator cancels it from a shell the kit records (`[UTC] $ command`, then its output)
        incident = slurm.root / "incident"
        (incident / "logs").mkdir(parents=True)
        Transcript(incident).run(f"SLURM_CONF={slurm.root / 'slurm.conf'} scancel {cancelled}")
        slurm.wait_for("the time limit", lambda: state(limited) == "TIMEOUT", 240)
        slurm.wait_for("the cancellation", lambda: state(cancelled) == "CANCELLED", 60)
        # slurmstepd has written each job's end into its output: the batch step's `*** JOB` line, or
        # only the srun step's `*** STEP` line where the batch step was already ending when the
        # signal reached it (slurmstepd writes the line only for a step that is not ending yet).
        # srun relays that line, and a srun the signal reached first may never relay it: a CI run's
        # cancelled job had only srun's own `Job step aborted` and `task 0: Terminated` lines, while
        # slurmd.log held the step's CANCELLED line. Such an output is waited for a while, then taken.
        text = lambda job: (out / f"slurm-{job}.out").read_text(errors="replace")  # noqa: E731
        ended = lambda job: any(f"*** {w} {job}" in text(job) for w in ("JOB", "STEP"))  # noqa: E731
        try:
            slurm.wait_for("the outputs", lambda: ended(limited) and ended(cancelled), 30)
        except Unavailable as e:
            aborted = lambda job: "srun: Job step aborted" in text(job) or "task 0: Terminated" in text(job)  # noqa: E731
            if not all(ended(job) or aborted(job) for job in (limited, cancelled)):
                said = {job: text(job)[-400:] for job in (limited, cancelled)}
                raise AssertionError(f"no end line from slurmstepd or srun in every output after 30 s: {said}") from e
        for job in (limited, cancelled):
            (incident / f"slurm-{job}.out").write_bytes((out / f"slurm-{job}.out").read_bytes())
        (incident / "scontrol-show-job.txt").write_text(slurm.run("scontrol", "show", "job"))
        (incident / "jobcomp.txt").write_bytes((slurm.root / "jobcomp.txt").read_bytes())
        if slurm.accounting:
            slurm.wait_for("accounting", lambda: "TIMEOUT" in slurm.run("sacct", "-n", "-j", limited, "-o", "State"), 60)
            (incident / "sacct.txt").write_text(slurm.run("sacct", "-P", "-j", f"{limited},{cancelled}", "-o", SACCT_FIELDS))
            (incident / "sacct-table.txt").write_text(slurm.run("sacct", "-j", f"{limited},{cancelled}"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inc = pm.load_incident(incident)
        yield inc, limited, cancelled, slurm.no_accounting
    finally:
        slurm.stop()


def _events(inc, source, **match):
    ev = inc.events[inc.events["source"] == source]
    for col, want in match.items():
        ev = ev[ev[col] == want]
    return ev


def test_one_node_slurm(slurm_incident):
    inc, limited, cancelled, no_accounting = slurm_incident
    accounting = no_accounting is None
    _read_whole(inc, limited, cancelled, accounting)
    _time_limit(inc, limited, accounting)
    _cancelled(inc, cancelled, accounting)
    _typed_cancel(inc, cancelled, limited)
    if not accounting:
        pytest.skip(f"read everything but sacct's listings: {no_accounting}")


def _read_whole(inc, limited, cancelled, accounting):
    formats = {f.path: f.format for f in inc.load_report.files}
    assert formats[f"slurm-{limited}.out"] == formats[f"slurm-{cancelled}.out"] == "training-log"
    assert formats["scontrol-show-job.txt"] == formats["jobcomp.txt"] == "slurm-job-records"
    if accounting:
        assert formats["sacct.txt"] == formats["sacct-table.txt"] == "slurm-sacct"
    assert all(f.balanced and not f.error for f in inc.load_report.files)


def _end(inc, log, job):
    """slurmstepd's line for the job's end in its output: the batch step's `*** JOB n ... ***`, else the
    srun step's `*** STEP n.0 ... ***` (the only one written where the batch step was already ending);
    None where srun never relayed either (see the fixture), after checking that srun's own line of the
    abort is read as a kill of this job."""
    for pattern in ("slurm_job_cancelled", "slurm_step_cancelled"):
        ev = _events(inc, log, pattern=pattern)
        if len(ev):
            return ev.iloc[0]
    srun = inc.events[(inc.events["source"] == log) & inc.events["pattern"].isin(["slurm_step_aborted", "slurm_task_signal"])]
    assert len(srun) and set(srun["kind"]) == {"killed"} and set(srun["job"]) == {job}, srun
    return None


def _time_limit(inc, limited, accounting):
    log = f"slurm-{limited}.out"
    end = _end(inc, log, limited)  # `*** JOB n ON node CANCELLED AT t DUE TO TIME LIMIT ***`
    if end is not None:
        assert (end["job"], end["reason"], end["by"]) == (limited, "TIME LIMIT", "slurm")
        timeout = _events(inc, log, kind="timeout").iloc[0]
        assert (timeout["what"], timeout["time"]) == ("slurm time limit", end["time"])
        step = _events(inc, log, pattern="slurm_step_cancelled")
        if len(step):  # the step's own line, where srun relayed it before it ended
            step = step.iloc[0]
            assert (step["kind"], step["job"], step["step"], step["time"]) == ("killed", limited, "0", end["time"])
    task = _events(inc, log, pattern="slurm_task_signal").iloc[0]  # srun: error: node: task 0: Terminated
    assert (task["job"], task["rank"], task["signal"]) == (limited, 0, "SIGTERM")
    metrics = inc.metrics[inc.metrics["source"] == log]
    assert set(metrics["job"]) == {limited} and set(metrics["metric"]) == {"train/tok_per_s", "train/loss"}

    record = _events(inc, "scontrol-show-job.txt", job=limited)
    rec_end = record[record["kind"] == "attempt_end"].iloc[0]
    # the batch script died of the SIGTERM: ExitCode=0:15, or 143:0 where bash reported it first
    assert (rec_end["reason"], rec_end["attempt"]) == ("TIMEOUT (TimeLimit)", 0)
    signal = None if pd.isna(rec_end["signal"]) else rec_end["signal"]
    assert (rec_end["exit_code"], signal) in ((0, "SIGTERM"), (143, None)), rec_end["message"]
    # slurmstepd's AT and scontrol's EndTime are one moment, each to the second: a busy machine
    # (the CI's two cores) has seen them a second apart
    assert end is None or abs(rec_end["time"] - end["time"]) <= pd.Timedelta(seconds=1)
    rec_timeout = record[record["kind"] == "timeout"].iloc[0]
    assert (rec_timeout["timeout_ms"], rec_timeout["time"]) == (60_000, rec_end["time"])  # both scontrol's EndTime
    start = record[record["kind"] == "attempt_start"].iloc[0]
    assert pd.Timedelta(seconds=60) <= rec_end["time"] - start["time"] < pd.Timedelta(seconds=180)
    comp = _events(inc, "jobcomp.txt", job=limited)
    assert comp[comp["kind"] == "timeout"]["time"].tolist() == [rec_end["time"]]  # slurmctld's end, as scontrol's
    assert comp[comp["kind"] == "timeout"]["timeout_ms"].tolist() == [60_000]  # TimeLimit=1 (minutes)
    if not accounting:
        return
    for source in ("sacct.txt", "sacct-table.txt"):
        acct = _events(inc, source, job=limited)
        assert acct[acct["kind"] == "attempt_end"]["reason"].tolist() == ["TIMEOUT"]
    acct = _events(inc, "sacct.txt", job=limited)
    assert acct[(acct["kind"] == "timeout")][["time", "timeout_ms"]].values.tolist() == [[rec_end["time"], 60_000]]
    assert acct[acct["kind"] == "attempt_start"]["time"].tolist() == [start["time"]]
    steps = acct[acct["step"].notna()].set_index("step")
    assert set(steps.index) == {"batch", "0"} and steps.loc["0", "kind"] == "killed"
    # the batch script is the shell the TERM reached: slurmd records it as a signal (0:15) or, as
    # the shell's own exit status for one, 15:0 or 143:0 (both seen from the same Slurm)
    batch = steps.loc["batch"]
    assert batch["kind"] == "killed" or (batch["kind"] == "exit" and batch["exit_code"] in (15, 143)), batch.to_dict()


def _cancelled(inc, cancelled, accounting):
    log = f"slurm-{cancelled}.out"
    end = _end(inc, log, cancelled)
    assert end is None or (end["job"], end["reason"]) == (cancelled, "CANCELLED")
    assert _events(inc, log, kind="timeout").empty
    record = _events(inc, "scontrol-show-job.txt", job=cancelled)
    rec_end = record[record["kind"] == "attempt_end"].iloc[0]
    # slurmctld's end and slurmstepd's line: one moment, each to the second (see _time_limit)
    assert rec_end["reason"].startswith("CANCELLED")
    assert end is None or abs(rec_end["time"] - end["time"]) <= pd.Timedelta(seconds=1)
    assert record[record["kind"] == "timeout"].empty
    if not accounting:
        return
    acct = _events(inc, "sacct.txt", job=cancelled)
    job_end = acct[(acct["kind"] == "attempt_end")].iloc[0]
    assert job_end["reason"].startswith("CANCELLED by") and job_end["time"] == rec_end["time"]


def _typed_cancel(inc, cancelled, limited):
    """The `scancel JOBID` typed in the operator's shell is a kill of that job: it is the end of
    the job's attempt, and the job's timed-out neighbour is not touched by it."""
    sent = inc.events[inc.events["kind"] == "kill_sent"]
    assert sent["target_job"].tolist() == [cancelled] and sent["signal"].tolist() == ["SIGTERM"]
    # one attempt per job, whichever source shows it (its output file, scontrol, sacct, the
    # job-completion log), each ended by what the listings say of its own job
    att = attempts(inc).set_index("job")
    assert sorted(att.index) == sorted([cancelled, limited])
    typed = sent["time"].iloc[0]
    # Slurm's own end of the job (CANCELLED by the operator's uid) follows the typed kill; srun's
    # lines in the job's output carry no time of their own and take that of the line before them,
    # so the end they report may read up to a few seconds early
    assert abs(att.loc[cancelled, "end"] - typed) < pd.Timedelta(seconds=5)
    assert att.loc[cancelled, "end_kind"] in ("killed", "attempt_end", "kill_sent")
    # the other job ran on into its time limit, a minute after its start
    assert att.loc[limited, "end"] - att.loc[limited, "start"] >= pd.Timedelta(seconds=60)
    assert att.loc[limited, "end"] > typed + pd.Timedelta(seconds=20)
