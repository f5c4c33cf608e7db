"""A folder read as it grows (loaders/following.py) is the folder a fresh read gives, at every
moment: recorded incidents grown again line by line, read at each moment by one GrowingFolder that
keeps what it read, and compared with a fresh `read_folder` of the same files."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from support.growing import grow, moments

from dflash_postmortem import schema
from dflash_postmortem.loaders.folder import read_folder
from dflash_postmortem.loaders.following import GrowingFolder

INCIDENTS = Path(__file__).resolve().parents[2] / "data" / "incidents"


def _same(followed, fresh, when: str) -> None:
    for name in schema.FRAME_NAMES:
        pd.testing.assert_frame_equal(getattr(followed, name), getattr(fresh, name), obj=f"{name} at {when}")
    assert [_account(f) for f in followed.load_report.files] == [_account(f) for f in fresh.load_report.files], when
    assert followed.load_report.notes == fresh.load_report.notes, when
    assert followed.runs.keys() == fresh.runs.keys(), when


def _account(rep) -> dict:
    """A file's account; its assumptions in any order (a stream read on lists each where the
    chunk that first needed it was read)."""
    plain = rep.to_plain()
    plain["assumptions"] = sorted(plain["assumptions"])
    return plain


# a session with an nvidia-smi stream and rank logs; wandb run folders whose files grow inside
# them; a torchrun agent's log, whose run is named for its file; one whose lines name their run only
# after the agent's first lines, and count its restarts (read from its start again as it grows); a
# Trainer's log whose evaluation bars are dated from where each began (lines read before)
@pytest.mark.parametrize("incident", ["h200-1gpu-watched-relaunch", "h200-2gpu", "h200-1gpu-torchrun-halt",
                                      "h200-1gpu-stall-crash", "h200-1gpu-torchrun-crashloop",
                                      "h200-1gpu-hf-long-eval"])
def test_a_growing_folder_reads_as_a_fresh_read_at_every_moment(incident, tmp_path):
    src, folder = INCIDENTS / incident, tmp_path / incident
    reader = GrowingFolder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for when in [*moments(src, 5), None]:
            grow(src, folder, when)
            followed = read_folder(folder, reader=reader, sniffed=reader.sniffed)
            _same(followed, read_folder(folder), when or "the end")
    # the streams were read on from where they stopped, not again from their start
    assert reader.reads["resumed"] >= 4, reader.reads


def test_a_stream_rewritten_from_its_start_is_read_whole_again(tmp_path):
    """A capture restarted with `>` over the old one: nothing of the old file is kept."""
    src = INCIDENTS / "h200-2gpu" / "logs" / "smi_stream.csv"
    lines = src.read_text().splitlines(keepends=True)
    smi = tmp_path / "smi.csv"
    reader = GrowingFolder()
    assert len(lines) > 560
    smi.write_text("".join(lines[:300]))
    read_folder(tmp_path, reader=reader, sniffed=reader.sniffed)
    for what, kept in (("shorter than what was read", lines[300:400]), ("longer, not the same bytes", lines[250:560])):
        smi.write_text("".join([lines[0], *kept]))
        whole = reader.reads["whole"]
        _same(read_folder(tmp_path, reader=reader, sniffed=reader.sniffed), read_folder(tmp_path), what)
        assert reader.reads["whole"] == whole + 1, what


def test_a_record_that_goes_on_after_a_look_is_read_from_the_start(tmp_path):
    """An error line read at one look and its traceback written after it: the traceback's lines
    have no date of their own, so the log is read again from its start, and the error is one
    record with its traceback, as a fresh read has it."""
    log = tmp_path / "rank0.log"
    steps = "".join(f"2026-12-03 10:00:{s:02d} [r0] step {s} loss {9 - s / 100:.2f} tok/s {21500 + s} queue 0\n"
                    for s in range(5, 30))
    log.write_text(steps + "2026-12-03 10:00:30 [r0] Traceback (most recent call last):\n")
    reader = GrowingFolder()
    read_folder(tmp_path, reader=reader, sniffed=reader.sniffed)
    with open(log, "a") as f:
        f.write('  File "train.py", line 88, in <module>\n    loss.backward()\n'
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    whole = reader.reads["whole"]
    followed = read_folder(tmp_path, reader=reader, sniffed=reader.sniffed)
    _same(followed, read_folder(tmp_path), "after the traceback")
    assert reader.reads["whole"] == whole + 1
    assert followed.events["message"].str.contains("CUDA out of memory").any()
    # and a dated line after it is read on from there
    with open(log, "a") as f:
        f.write("2026-12-03 10:00:41 [r0] step 30 loss 8.70 tok/s 21530 queue 0\n")
    resumed = reader.reads["resumed"]
    _same(read_folder(tmp_path, reader=reader, sniffed=reader.sniffed), read_folder(tmp_path), "a step after it")
    assert reader.reads["resumed"] == resumed + 1


def test_a_growing_wandb_log_is_decoded_on_from_its_last_record(tmp_path):
    """h200-2gpu's wandb runs grown as the SDK wrote them (each `.wandb` log cut where its first
    record written later begins): each read decodes only the records the read before did not,
    and gives a fresh read's frames; a log rewritten under the same name is decoded whole."""
    src, folder = INCIDENTS / "h200-2gpu", tmp_path / "h200-2gpu"
    reader = GrowingFolder()
    decoded: dict = {}
    read_on = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for when in [*moments(src, 4), None]:
            grow(src, folder, when)
            _same(read_folder(folder, reader=reader, sniffed=reader.sniffed), read_folder(folder), when or "the end")
            for name, kept in reader.kept.items():
                if kept.records > decoded.get(name, 0) > 0:
                    assert kept.fresh == kept.records - decoded[name], (when, name)
                    read_on += 1
                decoded[name] = kept.records
        assert read_on >= 2, decoded
        logs = sorted(folder.rglob("*.wandb"))
        logs[-1].write_bytes(logs[0].read_bytes()[:30_000])  # another run's records under its name
        _same(read_folder(folder, reader=reader, sniffed=reader.sniffed), read_folder(folder), "rewritten")
    (kept,) = [k for name, k in reader.kept.items() if name[1] == str(logs[-1].resolve())]
    assert kept.fresh == kept.records > 0


def _read_twice(src: Path, folder: Path, reader: GrowingFolder):
    """The folder grown to its middle and read, then grown whole and read: (followed, fresh)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        middle = moments(src, 3)[1]
        grow(src, folder, middle)
        read_folder(folder, reader=reader, sniffed=reader.sniffed)
        grow(src, folder, None)
        return read_folder(folder, reader=reader, sniffed=reader.sniffed), read_folder(folder)


def test_what_a_reader_keeps_between_reads_is_in_files_it_maps_not_in_memory(tmp_path):
    src = INCIDENTS / "h200-1gpu-watched-relaunch"
    reader = GrowingFolder()
    followed, fresh = _read_twice(src, tmp_path / "live", reader)
    _same(followed, fresh, "the end")
    parts = [s.part for s in reader._streams.values() if s.part is not None]
    parts += [part for _, part in reader._whole.values()]
    rests = [s.rest[0] for s in reader._streams.values() if s.rest is not None]
    assert parts, reader._streams
    in_files = {"gpus": 0, "metrics": 0}
    for part in parts:
        for name, (path, _) in part.files.items():
            assert path.is_file() and path.stat().st_size > 0
            in_files[name] = in_files.get(name, 0) + len(getattr(part.incident(), name))
        # in memory: only a frame Arrow would not give back as it is (a log's events carry
        # Python objects: a thread's name or a signal beside text)
        assert all((df.dtypes == "object").any() for df in part.frames.values() if len(df)), part.frames
    # every GPU sample and metric row read for good is in a file (the rest: lines still open)
    for name in ("gpus", "metrics"):
        assert in_files[name] + sum(len(getattr(r, name)) for r in rests) == len(getattr(fresh, name)), name
    assert in_files["gpus"] > 200 and in_files["metrics"] > 200, in_files
    scratch = reader._scratch
    del reader, parts
    import gc
    gc.collect()
    assert not scratch.exists()  # the reader's files go with it


def test_a_reader_with_no_room_for_its_files_keeps_them_in_memory(tmp_path):
    src = INCIDENTS / "h200-1gpu-watched-relaunch"
    reader = GrowingFolder()
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    reader._scratch = blocked  # every part's folder would be inside a file: mkdir fails
    followed, fresh = _read_twice(src, tmp_path / "live", reader)
    _same(followed, fresh, "the end")
    parts = [s.part for s in reader._streams.values() if s.part is not None]
    assert parts and all(not p.files and any(len(df) for df in p.frames.values()) for p in parts)
