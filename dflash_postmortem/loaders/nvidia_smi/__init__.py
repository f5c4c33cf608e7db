"""nvidia-smi captures in every form, and the NVML recorder's output: one entry point
(`load_nvidia_smi`) and the registration of each form's sniffer for `load_incident`.

The forms live in their own modules: query_csv (query CSV), table (default table), dmon
(dmon and pmon), smi_q (`-q` text), q_xml (`-q -x`), gpu_list (`-L`), gpu_errors (error output),
nvml_recording (what `record-gpus` writes).
"""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from ...config import check_timezone
from ...errors import SourceFormatError
from .. import encoding
from ..registry import FORMATS, Format, LoadContext, read_head, register
from . import dmon, gpu_errors, gpu_list, nvml_recording, q_text, q_xml, query_csv, table

SMI_FORMATS = [
    register(Format(
        name=query_csv.FORMAT, sniff=query_csv.sniff, load=query_csv.load,
        doc="nvidia-smi --query-gpu=... / --query-compute-apps=... --format=csv[,noheader][,nounits], "
            "snapshots and -l/-lms streams",
    )),
    register(Format(
        name=table.FORMAT, sniff=table.sniff, load=table.load,
        doc="nvidia-smi default table view (all generations), with its processes block",
    )),
    # dmon/pmon may carry only a time of day: phase 1 borrows the date from the other sources.
    register(Format(
        name=dmon.DMON, sniff=dmon.sniff_dmon, load=dmon.load, phase=1,
        doc="nvidia-smi dmon (any -s selection, -o D/T/DT or none)",
    )),
    register(Format(
        name=dmon.PMON, sniff=dmon.sniff_pmon, load=dmon.load, phase=1,
        doc="nvidia-smi pmon (per-process utilization and framebuffer memory)",
    )),
    register(Format(
        name=q_text.FORMAT, sniff=q_text.sniff, load=q_text.load,
        doc="nvidia-smi -q [-d ...] text report",
    )),
    register(Format(
        name=q_xml.FORMAT, sniff=q_xml.sniff, load=q_xml.load,
        doc="nvidia-smi -q -x XML report",
    )),
    register(Format(
        name=gpu_list.FORMAT, sniff=gpu_list.sniff, load=gpu_list.load,
        doc="nvidia-smi -L: GPU index, name and UUID (and MIG devices)",
    )),
    register(Format(
        name="nvidia-smi-error", sniff=gpu_errors.sniff_errors, load=gpu_errors.load_errors,
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
        return query_csv.load(path, ctx)
    best, score = None, 0.0
    for fmt in FORMATS.values():
        if fmt.folder or not (fmt.name.startswith("nvidia-smi") or fmt.name.startswith("nvml")):
            continue
        s = fmt.sniff(path, head)
        if s > score:
            best, score = fmt, s
    if best is None:
        if not head.strip():
            return query_csv.load(path, ctx)
        first = head.decode("utf-8", "replace").splitlines()[0]
        raise SourceFormatError(
            ctx.aliases.get(path, path), 1, "an nvidia-smi capture (query CSV, table, dmon/pmon, -q, -q -x, -L, "
            "error output) or an NVML recorder file", first, fmt="nvidia-smi",
        )
    return best.load(path, ctx)
