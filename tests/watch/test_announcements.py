"""What the watcher says (watch/announcements.py): one line per announcement within a width, the
status line of the jobs, the JSON form, and what is refused."""

import json

import pandas as pd
import pytest

from dflash_postmortem.errors import PostmortemError
from dflash_postmortem.watch import announcements
from dflash_postmortem.watch.announcements import Announcement, JobStatus, status_line

SECRET = "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123"
WHEN = pd.Timestamp("2026-11-30 05:22:17.250", tz="UTC")


def stall(evidence="train.log:812  step 4100 | loss 2.31 | 21.5K tok/s") -> Announcement:
    return Announcement(WHEN, "r1", "stall", "stall: no step for 6 min", evidence)


def test_a_line_reads_time_job_text_and_evidence():
    assert stall().line(None) == "05:22:17  r1  stall: no step for 6 min  — train.log:812  step 4100 | loss 2.31 | 21.5K tok/s"
    assert stall(evidence="").line(None) == "05:22:17  r1  stall: no step for 6 min"


def test_a_line_is_cut_with_an_ellipsis_and_never_wider_than_the_width():
    whole = stall().line(None)
    assert stall().line(40) == whole[:39] + "…"
    assert stall().line(len(whole)) == whole
    for width in range(1, len(whole) + 5):
        assert len(stall().line(width)) <= width


def test_the_clock_is_utc_whatever_zone_the_time_came_in():
    a = Announcement(pd.Timestamp("2026-11-30 07:22:17", tz="Europe/Berlin"), "r1", "first_step", "first step")
    assert a.time.tz is not None and str(a.time.tz) == "UTC"
    assert a.line(None).startswith("06:22:17  r1  first step")


def test_what_the_terminal_would_act_on_is_shown_as_text():
    a = Announcement(WHEN, "r1", "ended", "run ended\x07", "train.log:9  \x1b[31mERROR\x1b[0m oom\r\n  at step 12")
    assert a.line(None) == "05:22:17  r1  run ended  — train.log:9  ERROR oom at step 12"


def test_a_secret_in_the_text_or_the_evidence_is_masked_in_the_line_and_in_redacted():
    a = Announcement(WHEN, "r1", "not_starting", f"not starting; last log line: {SECRET}",
                     f"launch.sh:3  {SECRET} torchrun train.py")
    assert "hf_abc" not in a.line(None) and "HF_TOKEN=[REDACTED]" in a.line(None)
    masked = a.redacted().as_dict()
    assert "hf_abc" not in json.dumps(masked)
    assert masked["evidence"] == "launch.sh:3  HF_TOKEN=[REDACTED] torchrun train.py"


def test_as_dict_is_json_with_an_iso_time_in_utc():
    d = stall().as_dict()
    assert d == {"time": "2026-11-30T05:22:17.250000Z", "job": "r1", "kind": "stall",
                 "text": "stall: no step for 6 min", "evidence": "train.log:812  step 4100 | loss 2.31 | 21.5K tok/s"}
    assert json.loads(json.dumps(d)) == d


@pytest.mark.parametrize("bad", [
    {"kind": "stalled"},  # a state, not a kind
    {"time": pd.Timestamp("2026-11-30 05:22:17")},  # naive: which zone?
])
def test_an_announcement_refuses_what_is_not_in_its_contract(bad):
    fields = {"time": WHEN, "job": "r1", "kind": "stall", "text": "t", "evidence": ""} | bad
    with pytest.raises(PostmortemError) as e:
        Announcement(**fields)
    assert isinstance(e.value, ValueError)


def test_every_kind_and_state_is_accepted():
    assert all(Announcement(WHEN, "r1", k, k).kind == k for k in announcements.KINDS)
    assert all(JobStatus("r1", s).state == s for s in announcements.STATES)


def test_the_status_line_sums_up_the_jobs():
    jobs = [JobStatus("r1", "training", 21_480.0, "tok/s", 0.971), JobStatus("r2", "starting", None, "tok/s", None)]
    assert status_line(jobs, 200) == "watching 2 jobs · r1 training 21.5K tok/s 97 % · r2 starting"
    assert status_line(jobs[:1], 200) == "watching 1 job · r1 training 21.5K tok/s 97 %"
    assert status_line([], 200) == "watching 0 jobs"


def test_a_number_not_known_reads_as_a_question_mark():
    jobs = [JobStatus("r1", "stalled", float("nan"), "tok/s", 0.5), JobStatus("r2", "degraded", 8.414, "steps/s", None),
            JobStatus("r3", "never_trained", None, "steps/s", float("nan"))]
    line = status_line(jobs, 200)
    assert line == "watching 3 jobs · r1 stalled ? tok/s 50 % · r2 degraded 8.41 steps/s ? % · r3 never trained"
    assert "nan" not in line and "n/a" not in line


def test_the_status_line_fits_the_width():
    jobs = [JobStatus(f"run-{i}", "training", 21_500.0 + i, "tok/s", 0.97) for i in range(6)]
    whole = status_line(jobs, 10_000)
    for width in (1, 20, 57, 80, len(whole)):
        line = status_line(jobs, width)
        assert len(line) <= width
        assert line == whole or line == whole[: width - 1] + "…"


@pytest.mark.parametrize("bad", [{"state": "hung"}, {"unit": "it/s"}, {"goodput": 97.0}])
def test_a_job_status_refuses_what_is_not_in_its_contract(bad):
    with pytest.raises(PostmortemError):
        JobStatus(**({"job": "r1", "state": "training", "pace": 1.0, "unit": "tok/s", "goodput": 0.9} | bad))
