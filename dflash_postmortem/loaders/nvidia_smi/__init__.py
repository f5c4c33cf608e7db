"""nvidia-smi captures in every form, and the NVML recorder's output: one entry point
(`load_nvidia_smi`), which picks the form by the registry's own sniffing among this family's
formats.

Each form is a loader module registered when this package is imported, in this order (a tie
between two sniffers goes to the first): query_csv (query CSV), table (default table), dmon (dmon
and pmon), q_text (`-q` text), q_xml (`-q -x`), gpu_list (`-L`), error_output (error output),
nvml_recording (what `record-gpus` writes), topo (`topo -m`,
the host's link matrix). The rest is what the forms share: fields (the field
table and value parsing), paste (captures as people save them), times (timestamp forms),
gpu_errors (error lines and GPU error states), table_lines (the table's lines, also found inside
other captures, and the `-L` lines pasted with it).
"""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from ...config import check_timezone
from ...errors import SourceFormatError
from .. import encoding
from ..pages import ordinary_pages
from ..registry import LoadContext, formats_of, read_head, sniff

# Importing a form's module registers it: the order here is the registry's, kept out of sorting.
# isort: off
from . import (  # noqa: F401
    query_csv,
    table,
    dmon,
    q_text,
    q_xml,
    gpu_list,
    error_output,
    nvml_recording,
    topo,
)
# isort: on


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
    enc = encoding.plan(path, raw)
    if not enc.needs_transcoding:
        with ordinary_pages():  # loaders/pages.py: a week of samples is a frame of hundreds of MB
            return _load(path, raw, ctx, fields)
    # A capture redirected by Windows PowerShell is UTF-16 (every form reads UTF-8); a line too
    # long to hold is cut.
    with tempfile.TemporaryDirectory(prefix="dflash-transcoded-") as scratch:
        copy = encoding.transcode(path, Path(scratch) / path.name, enc)
        ctx.aliases[copy.path] = path
        inc = _load(copy.path, encoding.sniff_head(raw, enc), ctx, fields)
    for rep in inc.load_report.files:
        encoding.annotate(rep, enc, copy)
    return inc


def _load(path: Path, head: bytes, ctx: LoadContext, fields: list[str] | None):
    if fields:
        # A field list only means something for a header-less query CSV.
        ctx.options = {"fields": list(fields)}
        return query_csv.load(path, ctx)
    failures: list = []
    best, _ = sniff(path, head, among=formats_of(__name__), failures=failures)
    if failures:
        raise failures[0][1]  # a sniffer that fails is a bug: show it rather than pick another form
    if best is None:
        if not head.strip():
            return query_csv.load(path, ctx)
        first = head.decode("utf-8", "replace").splitlines()[0]
        raise SourceFormatError(
            ctx.aliases.get(path, path), 1, "an nvidia-smi capture (query CSV, table, dmon/pmon, -q, -q -x, -L, "
            "error output) or an NVML recorder file", first, fmt="nvidia-smi",
        )
    return best.load(path, ctx)
