"""nvidia-smi captures in every form, and the NVML recorder's output: one entry point
(`load_nvidia_smi`) and the registration of each form's sniffer for `load_incident`.

The forms live in their own modules: smi_csv (query CSV), smi_table (default table), smi_dmon
(dmon and pmon), smi_q (`-q` text), smi_xml (`-q -x`), smi_list (`-L`), smi_errors (error output),
nvml_recording (what `record-gpus` writes).
"""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from ..config import check_timezone
from ..errors import SourceFormatError
from . import (
    encoding,
    nvml_recording,
    smi_csv,
    smi_dmon,
    smi_errors,
    smi_list,
    smi_q,
    smi_table,
    smi_xml,
)
from .registry import FORMATS, Format, LoadContext, read_head, register

SMI_FORMATS = [
    register(Format(
        name=smi_csv.FORMAT, sniff=smi_csv.sniff, load=smi_csv.load,
        doc="nvidia-smi --query-gpu=... / --query-compute-apps=... --format=csv[,noheader][,nounits], "
            "snapshots and -l/-lms streams",
    )),
    register(Format(
        name=smi_table.FORMAT, sniff=smi_table.sniff, load=smi_table.load,
        doc="nvidia-smi default table view (all generations), with its processes block",
    )),
    # dmon/pmon may carry only a time of day: phase 1 borrows the date from the other sources.
    register(Format(
        name=smi_dmon.DMON, sniff=smi_dmon.sniff_dmon, load=smi_dmon.load, phase=1,
        doc="nvidia-smi dmon (any -s selection, -o D/T/DT or none)",
    )),
    register(Format(
        name=smi_dmon.PMON, sniff=smi_dmon.sniff_pmon, load=smi_dmon.load, phase=1,
        doc="nvidia-smi pmon (per-process utilization and framebuffer memory)",
    )),
    register(Format(
        name=smi_q.FORMAT, sniff=smi_q.sniff, load=smi_q.load,
        doc="nvidia-smi -q [-d ...] text report",
    )),
    register(Format(
        name=smi_xml.FORMAT, sniff=smi_xml.sniff, load=smi_xml.load,
        doc="nvidia-smi -q -x XML report",
    )),
    register(Format(
        name=smi_list.FORMAT, sniff=smi_list.sniff, load=smi_list.load,
        doc="nvidia-smi -L: GPU index, name and UUID (and MIG devices)",
    )),
    register(Format(
        name="nvidia-smi-error", sniff=smi_errors.sniff_errors, load=smi_errors.load_errors,
        doc="nvidia-smi error output (driver unreachable, no devices, NVML mismatch, GPU lost)",
    )),
    register(Format(
        name=nvml_recording.FORMAT, sniff=nvml_recording.sniff, load=nvml_recording.load,
        doc="JSON Lines written by dflash-postmortem record-gpus (NVML samples and processes)",
    )),
]


def load_nvidia_smi(
    path,
    *,
    host: str | None = None,
    timezone: str = "UTC",
    fields: list[str] | None = None,
    on_bad_line: str = "warn",
    date: dt.date | None = None,
):
    """Read one nvidia-smi capture (or NVML recorder file) into an Incident holding its `gpus`,
    `gpu_processes` and, for error output, `events` frames, with a one-file load report.

    The form is sniffed from the content. `fields` is the field list of a header-less
    (`noheader`) query CSV, in order; `date` is the day of a time-of-day-only dmon/pmon capture.
    """
    path = Path(path)
    check_timezone(timezone)
    ctx = LoadContext(timezone=timezone, host=host, on_bad_line=on_bad_line, date=date)
    raw = read_head(path)
    enc = encoding.detect(raw)
    if not enc.needs_transcoding:
        return _load(path, raw, ctx, fields)
    # A capture redirected by Windows PowerShell is UTF-16: every form reads UTF-8.
    with tempfile.TemporaryDirectory(prefix="dflash-transcoded-") as scratch:
        copy = encoding.transcode(path, Path(scratch) / path.name, enc).path
        ctx.aliases[copy] = path
        inc = _load(copy, encoding.sniff_head(raw, enc), ctx, fields)
    for rep in inc.load_report.files:
        rep.assume(enc.describe())
    return inc


def _load(path: Path, head: bytes, ctx: LoadContext, fields: list[str] | None):
    if fields:
        # A field list only means something for a header-less query CSV.
        ctx.options = {"fields": list(fields)}
        return smi_csv.load(path, ctx)
    best, score = None, 0.0
    for fmt in FORMATS.values():
        if fmt.folder or not (fmt.name.startswith("nvidia-smi") or fmt.name.startswith("nvml")):
            continue
        s = fmt.sniff(path, head)
        if s > score:
            best, score = fmt, s
    if best is None:
        if not head.strip():
            return smi_csv.load(path, ctx)
        first = head.decode("utf-8", "replace").splitlines()[0]
        raise SourceFormatError(
            ctx.aliases.get(path, path), 1, "an nvidia-smi capture (query CSV, table, dmon/pmon, -q, -q -x, -L, "
            "error output) or an NVML recorder file", first, fmt="nvidia-smi",
        )
    return best.load(path, ctx)
