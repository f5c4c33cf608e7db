"""The terminal view of an incident: what `dflash-postmortem inspect` prints."""

from __future__ import annotations

import pandas as pd

from .incident import Incident


def _fmt_time(t) -> str:
    if t is None or pd.isna(t):
        return "-"
    return pd.Timestamp(t).strftime("%Y-%m-%d %H:%M:%S UTC")


def render_load_report(inc: Incident, verbose: bool = False, debug: bool = False) -> str:
    rep = inc.load_report
    lines = [f"Incident: {inc.title}", f"Root: {inc.root}", f"Clock: UTC (sources without a zone read as {inc.config.timezone})", ""]
    lines.append(f"Files: {len(rep.files)} — {len(rep.loaded)} loaded, {len(rep.failed)} failed, {len(rep.unrecognised)} not recognised")
    width = max((len(f.path) for f in rep.files), default=10)
    for f in rep.files:
        if f.format is None and f.error:
            status = f"could not be read: {f.error}"
        elif f.format is None:
            status = "not recognised: " + ("; ".join(f.notes) or "no known format")
        elif f.error:
            status = f"{f.format or 'not read'}: FAILED: {f.error}"
        else:
            rows = ", ".join(f"{k} {v}" for k, v in sorted(f.rows.items())) or "no rows"
            status = f"{f.format}: {f.read} {f.unit}s, {f.parsed} parsed, {f.n_skipped} skipped -> {rows}"
            if f.start is not None:
                status += f"  [{_fmt_time(f.start)} .. {_fmt_time(f.end)}]"
        lines.append(f"  {f.path:<{width}}  {status}")
        if debug and f.trace:
            lines.extend(f"  {'':<{width}}    | {t}" for t in f.trace.rstrip().splitlines())
        if verbose or f.error is None:
            for reason, n in f.skipped.most_common():
                where = ", ".join(str(x) for x in f.examples.get(reason, []))
                if verbose or not reason.startswith(("header", "blank")):
                    lines.append(f"  {'':<{width}}    skipped {n}: {reason}" + (f" (lines {where})" if verbose and where else ""))
            for a in f.assumptions:
                lines.append(f"  {'':<{width}}    assumed: {a}")
            if f.format is not None:
                for note in f.notes:
                    lines.append(f"  {'':<{width}}    note: {note}")
    if rep.offsets:
        lines.append("")
        lines.append("Clock offsets applied:")
        for src, sec in rep.offsets.items():
            lines.append(f"  {src}: {sec:+.3f} s")
    lines.append("")
    lines.append("Frames:")
    for name, df in inc.frames().items():
        lines.append(f"  {name:<14} {len(df):>8} rows")
    first, last = inc.span()
    lines.append(f"Span: {_fmt_time(first)} .. {_fmt_time(last)}")
    return "\n".join(lines)


def render_inspect(inc: Incident, verbose: bool = False, debug: bool = False) -> str:
    from .detect import detect
    from .timeline import format_for_terminal

    findings = detect(inc)
    return render_load_report(inc, verbose, debug) + "\n\n" + format_for_terminal(inc, findings)
