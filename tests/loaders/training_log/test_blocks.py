"""What spans lines in a training log (blocks.py): tracebacks and torchrun's ChildFailedError tables."""

from __future__ import annotations

import warnings

import pandas as pd
from support.captures import only_report

import dflash_postmortem as pm
from dflash_postmortem.said import error_text, waiting_in


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
    # (a fatal signal's dump: faulthandler then lets the signal end the process)
    assert (bus["kind"], bus["signal"], bus["threads"], bus["rank"], bus["lines"]) == ("killed", "SIGBUS", 2, 3, 10)
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


def test_an_exceptions_message_over_several_lines_is_the_tracebacks(repo_dir):
    """h100-1gpu-accelerate-gpus's logs/hf_train.log: each rank's NCCL error goes on after its
    exception line (`ncclInvalidUsage: ...`, `Last error:`, `Duplicate GPU detected : rank 1 and
    rank 0 both on CUDA device 60`), lines 32-34 and 66-68; they are its traceback's, and every
    line of theirs is read (they were skipped as text without a metric or event)."""
    inc = _load(repo_dir / "data" / "incidents" / "h100-1gpu-accelerate-gpus" / "logs" / "hf_train.log")
    tb = inc.events[inc.events["pattern"] == "DistBackendError"]
    assert [r.rsplit("/", 1)[1] for r in tb["ref"]] == ["hf_train.log:1", "hf_train.log:35"] and tb["rank"].tolist() == [1, 0]
    assert [m.splitlines()[-3:] for m in tb["message"]] == [
        ["ncclInvalidUsage: This usually reflects invalid usage of NCCL library.", "Last error:",
         f"Duplicate GPU detected : rank {a} and rank {b} both on CUDA device 60"] for a, b in ((1, 0), (0, 1))]
    assert tb["lines"].tolist() == [34, 34]
    rep = only_report(inc)
    assert (rep.read, rep.parsed, rep.n_skipped) == (111, 108, 3)  # the head of torchrun's failure table, below
    # torchrun's ChildFailedError goes on with its failure table: a record of its own, not the message
    child = inc.events[inc.events["pattern"] == "ChildFailedError"].iloc[0]
    assert child["message"].splitlines()[-1] == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "


def test_an_exceptions_message_ends_where_a_line_says_something_of_its_own(tmp_path):
    """After the exception line: a line that gives a row of its own (torchrun's agent on the
    process, Slurm's on its task), a blank line and a line with a time of its own each end the
    message; those that give rows give them."""
    (tmp_path / "train.log").write_text(
        "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    step()\n"
        "RuntimeError: the batch\nwent bad here\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 4242) "
        "of binary: /usr/bin/python3\nnot the message\n\n"
        "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    step()\n"
        "ValueError: nothing more\nsrun: error: node1: task 0: Killed\n"
        "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    step()\n"
        "KeyError: 'x'\n2026-12-05 10:00:01 step 5 | loss 2.5\n", encoding="utf-8")
    inc = _load(tmp_path / "train.log")
    ev = inc.events
    tb = ev[ev["kind"] == "traceback"]
    assert [m.splitlines()[3:] for m in tb["message"]] == [["RuntimeError: the batch", "went bad here"],
                                                          ["ValueError: nothing more"], ["KeyError: 'x'"]]
    assert tb["lines"].tolist() == [5, 4, 4]
    assert [(k, r.rsplit(":", 1)[1]) for k, r in zip(ev["kind"], ev["ref"], strict=True) if k in ("exit", "killed")] == [
        ("exit", "6"), ("killed", "13")]
    assert inc.metrics["step"].tolist() == [5]
    assert only_report(inc).skipped == {"log text without a metric or event": 2}  # lines 7 and 8 (blank)


def test_a_traceback_whose_header_the_file_does_not_hold_is_read_from_its_frames(tmp_path):
    """A paste that begins inside a traceback: its frames (indented, one naming its file), then
    the exception line and its message; the frames and the exception are the traceback, from the
    first frame. Indented lines that name no file before an error line are not one."""
    (tmp_path / "paste.log").write_text(
        "...\n  File \"/opt/venv/torch/nn/parallel/distributed.py\", line 795, in __init__\n"
        "    _verify_param_shape_across_processes(self.process_group, parameters)\n"
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1333, invalid usage, NCCL version 2.18.6\n"
        "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
        "Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 4000\n\n"
        "config:\n  lr: 0.1\nValueError: not after frames\n", encoding="utf-8")
    ev = _load(tmp_path / "paste.log").events
    tb = ev[ev["kind"] == "traceback"]
    assert len(tb) == 1
    r = tb.iloc[0]
    assert (r["ref"].rsplit(":", 1)[1], r["pattern"], r["lines"]) == ("2", "DistBackendError", 6)
    assert r["message"].splitlines()[-1] == "Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 4000"


# -- Rich's boxed tracebacks (accelerate, click/typer CLIs, `rich.traceback.install()`) -----------
def test_a_rich_box_is_read_as_python_prints_its_traceback(fixtures_dir):
    """An 80-column box whose frame paths wrap after `core.py:` (the line number and function on
    the next box line), frames with and without code, the file ending inside the box."""
    ev = _load(fixtures_dir / "train-log" / "fondue-htr-7-kraken-ketos-train-80col-rich-box-wrapped-click-frames.log").events
    tb = ev[ev["kind"] == "traceback"].iloc[0]
    site = "/home/users/x/xxxxxxxx/kraken-env/lib/python3.8/site-packages/click/core.py"
    assert tb["message"].splitlines() == [
        "Traceback (most recent call last):",
        '  File "/home/users/x/xxxxxxxx/kraken-env/bin/ketos", line 8, in <module>',
        "    sys.exit(cli())",
        f'  File "{site}", line 1128, in __call__',
        f'  File "{site}", line 1053, in main',
        "[traceback cut off: the file ends here]"]
    assert tb["lines"] == 15 and tb["ref"].endswith(":3")


def test_a_box_whose_top_the_paste_lacks_ends_at_its_exception(fixtures_dir):
    """kraken #423: the end of a box (the code of the frame it ran, its closing rule) over the
    exception, then Python's chained-exception line and a second box the excerpt cut."""
    ev = _load(fixtures_dir / "train-log" / "kraken-423-rich-box-chained-dataloader-worker-killed-segtrain.log").events
    tb = ev[ev["kind"] == "traceback"]
    first = tb[tb["pattern"] == "RuntimeError"].iloc[0]
    assert first["ref"].endswith(":1") and first["lines"] == 9
    assert error_text(first["message"], "traceback") == "RuntimeError: DataLoader worker (pid 5398) is killed by signal: Killed."
    assert tb["ref"].str.rsplit(":", n=1).str[1].tolist() == ["1", "13"]


def test_a_paste_of_a_boxes_end_is_a_training_log(fixtures_dir, tmp_path):
    """bitsandbytes #766: a box's last frame, its rule and the exception alone are sniffed as a
    trainer's output (console text before), and its death told from the exception."""
    name = "bitsandbytes-766-rich-box-tail-calledprocesserror-kohya-windows.log"
    (tmp_path / name).write_bytes((fixtures_dir / "train-log" / name).read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    assert inc.load_report.files[0].format == "training-log"
    said = pm.what_happened(inc, pm.detect(inc))
    assert said[0].startswith("A process died: CalledProcessError: Command '['C:\\\\AI\\\\kohya")


def test_a_keyboard_interrupt_in_a_box_says_where_its_process_waited(tmp_path):
    """The frames Rich shows are read as Python's: the innermost wait of a Ctrl-C'd run, with the
    code Rich draws behind its indent guides (`│   │   data = ...`)."""
    (tmp_path / "train.log").write_text(
        "2026-12-07 10:00:00 step 1 loss 2.0 tok/s 1000\n"
        "╭───────────────────── Traceback (most recent call last) ──────────────────────╮\n"
        "│ /home/xxxx/train.py:61 in <module>                                           │\n"
        "│                                                                              │\n"
        "│   60 if __name__ == \"__main__\":                                              │\n"
        "│ ❱ 61 │   main()                                                              │\n"
        "│                                                                              │\n"
        "│ /opt/conda/envs/train/lib/python3.10/site-packages/torch/utils/data/dataload │\n"
        "│ er.py:741 in _next_data                                                      │\n"
        "│                                                                              │\n"
        "│ ❱ 741 │   │   data = self._next_data()                                       │\n"
        "╰──────────────────────────────────────────────────────────────────────────────╯\n"
        "KeyboardInterrupt\n", encoding="utf-8")
    ev = _load(tmp_path / "train.log").events
    tb = ev[ev["kind"] == "traceback"].iloc[0]
    assert tb["pattern"] == "KeyboardInterrupt" and tb["lines"] == 12
    assert waiting_in(tb["message"]) == ("waiting in its data loader (`data = self._next_data()`, "
                                         "torch/utils/data/dataloader.py:741)")
