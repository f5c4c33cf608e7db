"""Fuzzing as a test: every format's sniffer and loader, fed mutations of real samples (cut at
any offset, flipped bytes, duplicated or deleted lines, re-encoded, glued to another file), gives
frames plus load-report entries and never another exception; parsed + skipped == read per file.

Loaders are called directly, not through `load_incident`, whose isolation would turn a crash
into a load-report entry and hide the bug. CI runs a fixed, derandomised set of examples per
format (`FUZZ_EXAMPLES`, default 25); `make fuzz` runs many more with fresh randomness.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dflash_postmortem.errors import SourceFormatError
from dflash_postmortem.incident import Incident
from dflash_postmortem.loaders import encoding
from dflash_postmortem.loaders.registry import FORMATS, LoadContext, sniff

REPO = Path(__file__).resolve().parents[1]
ROOTS = (REPO / "tests" / "fixtures" / "real-world", REPO / "data")
MAX_SAMPLE = 48 * 1024  # a sample's head, cut at a line end: mutations matter, not volume

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
settings.register_profile(
    "ci", max_examples=EXAMPLES, derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz", max_examples=EXAMPLES, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = "fuzz" if os.environ.get("FUZZ_RANDOM") else "ci"


def _head(path: Path) -> bytes:
    data = path.read_bytes()[: MAX_SAMPLE + 1]
    if len(data) > MAX_SAMPLE:
        cut = data.rfind(b"\n", 0, MAX_SAMPLE)
        data = data[: cut + 1 if cut > 0 else MAX_SAMPLE]
    return data


@functools.cache
def samples() -> dict[str, list[bytes]]:
    """Every real file we hold, sorted by the format sniffing gives it (wandb run folders are
    fuzzed through their files). Read when a test first asks, not when the module is collected:
    every test worker collects every module, and sniffing the corpus takes seconds."""
    found: dict[str, list[bytes]] = {}
    for root in ROOTS:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.is_symlink() or path.name == "SOURCES.tsv":
                continue
            head = path.read_bytes()[: 64 * 1024]
            fmt, _ = sniff(path, encoding.sniff_head(head, encoding.detect(head)))
            if fmt is not None:
                found.setdefault(fmt.name, []).append(_head(path))
    return found


@functools.cache
def all_samples() -> list[bytes]:
    return [s for group in samples().values() for s in group]


FILE_FORMATS = sorted(name for name, fmt in FORMATS.items() if not fmt.folder)


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [data]


@st.composite
def mutated(draw, originals: list[bytes]) -> bytes:
    data = draw(st.sampled_from(originals))
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from([
            "cut", "flip", "duplicate_line", "delete_line", "reencode", "glue", "nul", "crlf", "garbage_line",
        ]))
        if how == "cut" and data:
            data = data[: draw(st.integers(0, len(data)))]
        elif how == "flip" and data:
            pos = draw(st.integers(0, len(data) - 1))
            data = data[:pos] + bytes([data[pos] ^ draw(st.integers(1, 255))]) + data[pos + 1:]
        elif how in ("duplicate_line", "delete_line", "garbage_line"):
            lines = _lines(data)
            i = draw(st.integers(0, len(lines) - 1))
            if how == "duplicate_line":
                lines.insert(i, lines[i])
            elif how == "delete_line":
                del lines[i]
            else:
                lines.insert(i, draw(st.binary(max_size=80)) + b"\n")
            data = b"".join(lines)
        elif how == "reencode":
            codec = draw(st.sampled_from(["utf-16", "utf-16-le", "latin-1", "utf-8-sig", "utf-32"]))
            data = data.decode("utf-8", "replace").encode(codec, "replace")
        elif how == "glue":
            other = draw(st.sampled_from(all_samples()))
            data = data + other if draw(st.booleans()) else other + data
        elif how == "nul" and data:
            pos = draw(st.integers(0, len(data)))
            data = data[:pos] + b"\x00" * draw(st.integers(1, 600)) + data[pos:]
        elif how == "crlf":
            data = data.replace(b"\n", b"\r\n")
    return data


def _check_one(fmt_name: str, data: bytes) -> None:
    fmt = FORMATS[fmt_name]
    with tempfile.TemporaryDirectory(prefix="dflash-fuzz-") as d:
        path = Path(d) / "sample"
        path.write_bytes(data)
        head = data[: 64 * 1024]
        for other in FORMATS.values():  # no sniffer may raise on any content
            if not other.folder:
                other.sniff(path, head)
        ctx = LoadContext(root=Path(d), on_bad_line="skip", known=Incident())
        try:
            inc = fmt.load(path, ctx)
        except SourceFormatError:
            return  # not this format after all: a clear error is a fine answer
        assert isinstance(inc, Incident)
        for rep in inc.load_report.files:
            assert rep.balanced, rep.summary()


@pytest.mark.parametrize("fmt_name", FILE_FORMATS)
def test_every_file_format_has_real_samples(fmt_name):
    assert samples().get(fmt_name), f"no real sample is sniffed as {fmt_name}"


@pytest.mark.parametrize("fmt_name", FILE_FORMATS)
def test_loader_survives_mutations(fmt_name):
    originals = samples().get(fmt_name)
    if not originals:
        pytest.fail(f"no real sample is sniffed as {fmt_name}")

    @settings.get_profile(PROFILE)
    @given(mutated(originals))
    def run(data):
        _check_one(fmt_name, data)

    run()


# --- hostile sizes ------------------------------------------------------------------------------
# Peak memory of a load in a fresh interpreter, with each hostile file against a small copy of
# itself: what the load holds must not grow with the file (bounded by size, never by a timer).
HUGE_LINE = int(os.environ.get("FUZZ_HUGE_LINE_BYTES", str(1 << 30)))
_PEAK = """
import resource, sys, warnings
warnings.simplefilter("ignore")
import dflash_postmortem as pm
inc = pm.load_incident(sys.argv[1], on_bad_line="skip")
notes = [n for f in inc.load_report.files for n in f.notes] + [r for f in inc.load_report.files for r in f.skipped]
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
print("\\n".join(notes))
"""


def _hostile_folder(folder: Path, size: int) -> Path:
    """A training log with one line of `size` bytes, log lines holding literals nested 100,000
    deep (the HF Trainer's dict repr, JSON), a wandb history line nested as deep, and a run
    summary JSON holding one value of `size` bytes."""
    folder.mkdir()
    with open(folder / "train.log", "wb") as f:
        f.write(b"2026-11-30 01:00:00 step 1 loss 2.0 tok/s 1000\n")
        block = b"x" * (1 << 20)
        for _ in range(size // len(block)):
            f.write(block)
        f.write(b"x" * (size % len(block)) + b"\n")
        f.write(b"{'loss': " + b"[" * 100_000 + b"]" * 100_000 + b", 'epoch': 0.2}\n")
        f.write(b'{"_step": 2, "loss": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
        f.write(b"2026-11-30 01:00:10 step 2 loss 1.9 tok/s 1001\n")
    run = folder / "wandb" / "offline-run-20261130_010000-abcd1234" / "files"
    run.mkdir(parents=True)
    (run / "wandb-history.jsonl").write_bytes(b'{"_step": 1, "loss": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    with open(run / "wandb-summary.json", "wb") as f:
        f.write(b'{"_step": 1, "note": "')
        for _ in range(size // (1 << 20)):
            f.write(b"y" * (1 << 20))
        f.write(b'"}')
    return folder


def _peak(folder: Path) -> tuple[int, str]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _PEAK, str(folder)], capture_output=True, text=True,
                          check=True, timeout=600)
    first, _, rest = done.stdout.partition("\n")
    return int(first) * 1024, rest


@pytest.mark.slow
def test_hostile_sizes_are_skipped_with_their_reason_in_bounded_memory(tmp_path):
    small, small_notes = _peak(_hostile_folder(tmp_path / "small", 2 << 20))
    huge, notes = _peak(_hostile_folder(tmp_path / "huge", HUGE_LINE))
    assert f"cut to its first 64 KiB (line 2): {HUGE_LINE - (64 << 10):,} bytes not read" in notes
    assert "of at most 64 MiB" in notes  # the summary is not parsed
    # The load holds no more for a line of a gigabyte than for one of two megabytes.
    assert huge - small < min(64 << 20, HUGE_LINE // 8), (small, huge)
