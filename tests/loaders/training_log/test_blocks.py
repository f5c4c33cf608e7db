"""What spans lines in a training log (blocks.py): tracebacks and torchrun's ChildFailedError tables."""

from __future__ import annotations

import warnings

import pandas as pd
from support.captures import only_report

import dflash_postmortem as pm


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_process_log(path, **kw)


def test_torchrun_exit_and_whole_traceback(fixtures_dir):
    ev = _load(fixtures_dir / "train-log" / "torchrun-childfailed-exitcode-9-llama.log").events
    ex = ev[ev["kind"] == "exit"].iloc[0]
    assert (ex["exit_code"], ex["pid"], ex["local_rank"], ex["signal"]) == (-9, 333202, 0, "SIGKILL")
    assert pd.isna(ex["rank"])  # the global rank is not on this line
    tb = ev[ev["kind"] == "traceback"].iloc[0]
    assert tb["lines"] == 14 and tb["pattern"] == "ChildFailedError"
    assert tb["message"].startswith("Traceback") and "ChildFailedError" in tb["message"].splitlines()[-1]


# -- the seed reconstruction's train_opt.log: thread tracebacks, every warning, runs from tags ---
def test_thread_exception_header_is_part_of_the_traceback(seed_dir):
    inc = _load(seed_dir / "logs" / "train_opt.log")
    tb = inc.events[inc.events["kind"] == "traceback"]
    assert len(tb) == 1
    tb = tb.iloc[0]
    lines = tb["message"].splitlines()
    assert lines[0] == "Exception in thread drafter-2:" and lines[1] == "Traceback (most recent call last):"
    assert tb["lines"] == 9 and tb["thread"] == "drafter-2" and tb["ref"].endswith("train_opt.log:21")
    assert tb["pattern"] == "InternalTorchDynamoError"
    assert tb["time"] == pd.Timestamp("2026-05-09 20:24:31", tz="UTC")  # borrowed from line 20
    rep = only_report(inc)
    assert rep.n_skipped == 0  # every line of this log is a metric, stage, warning or the traceback


def test_childfailed_table_entry_is_an_exit_with_its_own_time_host_rank(fixtures_dir):
    ev = _load(fixtures_dir / "train-log" / "torchrun-childfailed-table-accelerate-grpo.log").events
    ex = ev[ev["kind"] == "exit"]
    assert len(ex) == 1
    e = ex.iloc[0]
    assert e["pattern"] == "elastic_root_cause" and e["ref"].endswith(":18")
    assert (e["rank"], e["local_rank"], e["exit_code"], e["pid"], e["signal"]) == (0, 0, -9, 14750, "SIGKILL")
    assert e["time"] == pd.Timestamp("2025-05-21 15:43:03", tz="UTC")
    assert e["host"] == "gpunode000000000000000-00000000000000-000000-000000-worker"
    assert e["lines"] == 7 and "Signal 9 (SIGKILL) received by PID 14750" in e["message"]


def test_a_faulthandler_dump_is_one_event_naming_its_signal_and_top_frames(tmp_path):
    import warnings

    import dflash_postmortem as pm

    text = """[rank3]:Fatal Python error: Bus error
[rank3]:
[rank3]:Thread 0x00007f2d4a7fc700 (most recent call first):
[rank3]:  File "/usr/lib/python3.10/threading.py", line 324 in wait
[rank3]:
[rank3]:Current thread 0x00007f2dd1b4a740 (most recent call first):
[rank3]:  File "train.py", line 42 in step
[rank3]:  File "train.py", line 80 in <module>
[rank3]:
[rank3]:Extension modules: torch._C (total: 1)
Timeout (0:05:00)!
Thread 0x00007f2dd1b4a740 (most recent call first):
  File "train.py", line 42 in step
"""
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = pm.load_process_log(tmp_path / "train.log").events
    assert len(ev) == 2
    bus, hang = ev.iloc[0], ev.iloc[1]
    assert (bus["kind"], bus["signal"], bus["threads"], bus["rank"], bus["lines"]) == ("signal", "SIGBUS", 2, 3, 10)
    assert bus["frames"] == ("thread 0x00007f2d4a7fc700: /usr/lib/python3.10/threading.py:324 in wait; "
                             "current thread 0x00007f2dd1b4a740: train.py:42 in step")
    assert (hang["kind"], hang["timeout"], hang["threads"]) == ("traceback", "0:05:00", 1)


def test_a_traceback_ending_in_a_cuda_oom_is_also_an_oom_naming_its_holders(tmp_path):
    import warnings

    import dflash_postmortem as pm

    text = """Traceback (most recent call last):
  File "train.py", line 10, in <module>
    loss.backward()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free. Process 1234 has 40.00 GiB memory in use. Process 5678 has 37.00 GiB memory in use. Of the allocated memory 38.50 GiB is allocated by PyTorch
"""
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = pm.load_process_log(tmp_path / "train.log").events
    assert ev["kind"].tolist() == ["traceback", "oom"]
    oom = ev.iloc[1]
    assert oom["holders"] == "1234: 40.00 GiB, 5678: 37.00 GiB" and oom["requested_mib"] == 2048.0
    assert oom["ref"] == ev.iloc[0]["ref"]
