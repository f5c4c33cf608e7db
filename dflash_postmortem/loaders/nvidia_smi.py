"""nvidia-smi captures: `--query-gpu` / `--query-compute-apps` CSV (with or without header and
units, single snapshots or `-l` streams).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import align
from ..errors import SourceFormatError
from ..incident import from_frames
from .registry import Format, LoadContext, register
from .smi_fields import field_for, parse_numbers

_APPS_KEYS = {"pid", "process_name", "used_memory", "used_gpu_memory"}


def _header_fields(first_line: str) -> list[str] | None:
    cells = [c.strip() for c in first_line.split(",")]
    if len(cells) >= 2 and all(field_for(c) is not None for c in cells):
        return cells
    return None


def sniff_query_csv(path: Path, head: bytes) -> float:
    text = head.decode("utf-8", "replace")
    first = text.split("\n", 1)[0].strip()
    return 0.95 if _header_fields(first) else 0.0


def load_nvidia_smi(path, *, host=None, timezone="UTC", fields=None, on_bad_line="warn"):
    """Read an nvidia-smi capture into the `gpus` and/or `gpu_processes` frames.

    `fields` is the `--query-gpu` list of a header-less (`noheader`) file, in order.
    """
    ctx = LoadContext(timezone=timezone, host=host, on_bad_line=on_bad_line)
    if fields:
        ctx.options = {"fields": list(fields)}
    return load_query_csv(Path(path), ctx)


def load_query_csv(path: Path, ctx: LoadContext):
    rep = ctx.report(path, "nvidia-smi-query-csv")
    raw = path.read_bytes()
    text = raw.decode("utf-8", "replace")
    lines = text.splitlines()
    rep.read = len(lines)
    header = _header_fields(lines[0]) if lines else None
    start = 1 if header else 0
    if header is None:
        header = ctx.options.get("fields")
        if not header:
            raise SourceFormatError(
                path, 1, "a header line of nvidia-smi query fields, or a field list in incident.toml "
                "([[sources]] path=..., fields=[...]) for a noheader capture",
                lines[0] if lines else "", fmt="nvidia-smi-query-csv",
            )
        rep.assume("no header line: field list taken from incident.toml or the caller")
    else:
        rep.skip(1, "header line")
    specs = [field_for(h) for h in header]
    unknown = [h for h, s in zip(header, specs, strict=True) if s is None]
    if unknown:
        raise SourceFormatError(path, 1, "known nvidia-smi query fields", ", ".join(unknown), fmt=rep.format)
    ncol = len(header)
    body_rows, body_lines = [], []
    for i in range(start, len(lines)):
        line = lines[i]
        if not line.strip():
            rep.skip(i + 1, "blank line")
            continue
        if _header_fields(line.strip()):
            rep.skip(i + 1, "repeated header line")
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != ncol:
            rep.bad(i + 1, f"{ncol} comma-separated fields", line)
            continue
        body_rows.append(cells)
        body_lines.append(i + 1)
    df = pd.DataFrame(body_rows, columns=[s.column for s in specs], dtype="string")
    bad = pd.Series(False, index=df.index)
    out = pd.DataFrame(index=df.index)
    for spec in specs:
        col = df[spec.column]
        if spec.kind == "time":
            t = pd.to_datetime(col, format="%Y/%m/%d %H:%M:%S.%f", errors="coerce")
            bad |= t.isna()
            out["time"] = align.localize(t, ctx.timezone)
            rep.assume(align.zone_assumption(ctx.timezone))
        elif spec.kind in ("int", "float"):
            nums, b = parse_numbers(col, spec.unit, spec.scale)
            bad |= b
            out[spec.column] = nums
        else:
            out[spec.column] = col
    for i in bad[bad].index:
        rep.bad(body_lines[i], "values of the header's fields", ", ".join(body_rows[i]))
    out = out[~bad]
    rep.parsed = len(out)
    out["host"] = ctx.host
    out["source"] = rep.path
    if "time" not in out.columns:
        out["time"] = pd.Series(pd.NaT, index=out.index, dtype="datetime64[us, UTC]")
        rep.assume("no timestamp field: rows carry no time")
    is_apps = any(h.split(" [")[0].strip().lower() in _APPS_KEYS for h in header)
    if is_apps:
        return from_frames(rep, gpu_processes=out)
    return from_frames(rep, gpus=out)


register(Format(
    name="nvidia-smi-query-csv",
    sniff=sniff_query_csv,
    load=load_query_csv,
    doc="nvidia-smi --query-gpu=... / --query-compute-apps=... --format=csv[,noheader][,nounits]",
))
