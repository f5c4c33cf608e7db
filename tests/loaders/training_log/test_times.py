"""Training-log timestamps: the forms real logs print, time-of-day stamps dated from the nearest
full date in the same file across midnight, and what is said when nothing gives a date."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.training_log.times import find_stamp

TRAIN = "train-log"


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_process_log(path, **kw)


@pytest.mark.parametrize(("line", "form", "text"), [
    ("2020-07-17 06:57:45 | INFO | train_inner | epoch 001:", "iso", "2020-07-17T06:57:45.000000"),
    ("[2024-02-27T21:35:32.106313Z] fa88a9df || WARNING:", "iso", "2024-02-27T21:35:32.106313+00:00"),
    (" 2025-02-18 12:54 [rank13]:[E218 04:54:22.864467604", "iso", "2025-02-18T12:54:00.000000"),  # no seconds
    ("  time      : 2025-05-21_15:43:03", "iso", "2025-05-21T15:43:03.000000"),  # ChildFailedError table
    ("01/17/2024 13:47:27 [INFO|DP=0|PP=0|TP=0]: iteration", "iso", "2024-01-17T13:47:27.000000"),  # nanotron
    ("[03/17/23 20:03:12] INFO     colossalai", "iso", "2023-03-17T20:03:12.000000"),  # rich
    ("08/11/2018 03:14:46 PM: [ train: Epoch = 0", "iso", "2018-08-11T15:14:46.000000"),  # %I:%M:%S %p
    ("08/11/2018 12:05:00 AM: [ train: Epoch = 1", "iso", "2018-08-11T00:05:00.000000"),
    ("[E218 04:54:22.864467604 ProcessGroupNCCL.cpp:616]", "monthday", "02-18T04:54:22.864467"),
    ("W0227 17:39:41.936000 293814 site-packages/torch", "monthday", "02-27T17:39:41.936000"),
    ("[07:15:39.400163] Epoch: [2]  [1480/1504]", "clock", "07:15:39.400163"),
    ("12:13:46    INFO Starting training step 0", "clock", "12:13:46.000000"),
    ("[09/02 02:37:24 d2.utils.events]:  eta: 0:05:22  iter: 19", "monthday", "09-02T02:37:24.000000"),  # detectron2
    ("[11/16 04:35:50] d2.utils.events INFO:  eta: 2:23:15", "monthday", "11-16T04:35:50.000000"),  # its log.txt
    ("Tue Apr 21 18:22:57 2020[1]<stdout>:Train Epoch: 1", "iso", "2020-04-21T18:22:57.000000"),  # horovodrun
    ("Wed Dec  2 21:23:04 UTC 2026 starting the run", "iso", "2026-12-02T21:23:04.000000+00:00"),  # `date`
    ("[Mon Jul 20 04:51:42 2022] Out of memory: Killed process", "iso", "2022-07-20T04:51:42.000000"),  # dmesg -T
    ("INFO 12-08 19:50:16 llm_engine.py:72] Initializing", "monthday", "12-08T19:50:16.000000"),  # vLLM
    ("I 03-25 07:19:29 controller.py:152] Job failed", "monthday", "03-25T07:19:29.000000"),  # SkyPilot
])
def test_stamp_forms_of_real_lines(line, form, text):
    stamp, _ = find_stamp(line)
    assert (stamp.form, stamp.text) == (form, text)


def _log(tmp_path, text: str):
    p = tmp_path / "t.log"
    p.write_text(text)
    return p


def test_the_tags_a_logger_writes_after_its_time_leave_the_message_to_be_read(tmp_path):
    """Hugging Face's `[INFO|trainer.py:N] <time> >>`, Horovod's `[<time>: W file.cc:N]`, glog's
    `<PID> file.cpp:N]` and vLLM's `file.py:N]` come between a line's time and its message; the
    message behind them is read as any other (a save, an error), at the line's own time."""
    p = _log(tmp_path, "[INFO|trainer.py:3984] 2025-05-15 07:30:24,686 >> Saving model checkpoint to out/checkpoint-222\n"
                       "[2022-07-20 04:51:42.894382: W horovod/common/operations.cc:105] RuntimeError: CUDA error: an illegal memory access\n"
                       "E1102 13:22:46.576802 22488 net.cpp:100] RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
                       "ERROR 12-08 19:50:16 llm_engine.py:72] RuntimeError: CUDA error: device-side assert triggered\n")
    ev = _load(p).events
    assert ev["pattern"].tolist()[:1] == ["checkpoint_save"]
    assert ev["kind"].tolist() == ["stage", "error", "oom", "error"]
    assert ev["time"].iloc[0] == pd.Timestamp("2025-05-15 07:30:24.686", tz="UTC")
    assert ev["time"].iloc[3].strftime("%m-%d %H:%M:%S") == "12-08 19:50:16"


def test_rows_that_take_their_time_from_a_line_before_say_so(tmp_path):
    """A Trainer's dicts print no time: they take the banner's before them (`time_earliest`: they
    were written then or later); a line with its own time does not."""
    p = _log(tmp_path, "[INFO|trainer.py:2414] 2025-05-15 07:26:19,308 >> ***** Running training *****\n"
                       "{'loss': 0.7998, 'learning_rate': 4.0e-05, 'epoch': 1.08}\n"
                       "2025-05-15 07:26:30 step 20 loss 0.7 tok/s 1000\n")
    m = _load(p).metrics
    lent = m.assign(line=m["ref"].str.rsplit(":", n=1).str[1]).groupby("line")["time_earliest"].first()
    assert lent["2"] == True and pd.isna(lent["3"])  # noqa: E712 (a nullable boolean)


def test_time_of_day_crosses_midnight_from_the_full_date_before(tmp_path):
    p = _log(tmp_path, "2024-05-01 23:58:10 WARNING run starts\n"
                       "[23:59:59] WARNING before midnight\n"
                       "[23:59:58] WARNING a rank a second behind\n"  # interleaving, not a day
                       "[00:00:02] WARNING after midnight\n"
                       "[13:00:00] WARNING next afternoon\n"
                       "[01:00:00] WARNING second midnight\n")
    t = _load(p).events["time"].tolist()
    assert t == [pd.Timestamp(s, tz="UTC") for s in (
        "2024-05-01 23:58:10", "2024-05-01 23:59:59", "2024-05-01 23:59:58", "2024-05-02 00:00:02",
        "2024-05-02 13:00:00", "2024-05-03 01:00:00")]


def test_time_of_day_before_the_first_full_date_takes_that_date(tmp_path):
    p = _log(tmp_path, "[23:59:50] WARNING before any date\n"
                       "[00:00:05] WARNING after midnight\n"
                       "2024-05-02 00:00:07 WARNING the first full date\n")
    t = _load(p).events["time"].tolist()
    assert t == [pd.Timestamp(s, tz="UTC") for s in ("2024-05-01 23:59:50", "2024-05-02 00:00:05", "2024-05-02 00:00:07")]


def test_time_of_day_without_a_date_uses_the_incident_date_or_says_so(tmp_path):
    p = _log(tmp_path, "[23:59:50] WARNING a\n[00:00:05] WARNING b\n")
    t = _load(p, date="2024-05-01").events["time"].tolist()
    assert t == [pd.Timestamp("2024-05-01 23:59:50", tz="UTC"), pd.Timestamp("2024-05-02 00:00:05", tz="UTC")]
    inc = _load(p)
    assert inc.events["time"].isna().all()
    assert any("no date" in a for a in inc.load_report.files[0].assumptions)


def test_metric_logger_time_of_day_with_the_incident_date(fixtures_dir):
    inc = _load(fixtures_dir / TRAIN / "metric-logger-time-only-stamps-llama2-accessory.log", date="2023-08-20")
    m = inc.metrics
    first = m[m["metric"] == "train/step_time_s"].iloc[0]
    assert first["time"] == pd.Timestamp("2023-08-20 07:15:39.400163", tz="UTC")
    assert (first["step"], first["value"]) == (2 * 1504 + 1480, 4.3713)


def test_zone_given_for_the_incident_moves_naive_stamps_not_aware_ones(fixtures_dir):
    naive = _load(fixtures_dir / TRAIN / "deepspeed-sigkill-return-code-9-opt125m.log", timezone="Asia/Shanghai").events
    assert naive["time"].iloc[0] == pd.Timestamp("2023-04-14 05:11:27.879", tz="UTC")
    aware = _load(fixtures_dir / TRAIN / "elastic-death-signal-15-aware-z-determined.log", timezone="Asia/Shanghai").events
    assert aware["time"].iloc[0] == pd.Timestamp("2024-02-27 21:35:32.106313", tz="UTC")


def test_glog_month_day_takes_the_year_of_a_full_date_in_the_file(fixtures_dir):
    ev = _load(fixtures_dir / TRAIN / "nccl-watchdog-global-vs-group-rank-nccl1610.log").events
    # the viewer's minute-stamp prefix (a full date) is the line's own time
    assert ev["time"].iloc[0] == pd.Timestamp("2025-02-18 12:54", tz="UTC")
    ev = _load(fixtures_dir / TRAIN / "elastic-glog-closing-via-signal-multi-agent.log", date="2025-02-27").events
    assert ev["time"].iloc[0] == pd.Timestamp("2025-02-27 17:39:41.936", tz="UTC")
