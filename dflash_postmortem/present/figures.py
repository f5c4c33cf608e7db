"""Figures for notebooks and reports. Each function takes frames and returns a `go.Figure`,
never shows it, and only draws: which samples, processes and levels to show is decided before
(`tables`, `detect`), so every figure shows what the tables beside it list.

A missing source is drawn as a figure that says so ("no data from ..."), never an error:
post-mortems work with whatever evidence survived. Text that comes from the evidence (log lines,
command lines) is HTML-escaped before it reaches a hover label, because plotly renders a subset
of HTML in labels and a log line is not markup.
"""

from __future__ import annotations

import html
import math
import textwrap
import zlib

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..model.ledger import SHOWN_S
from ..model.pace import UNITS
from ..schema import PROBLEM_EVENTS, TOK_PER_S
from ..units import clock, count, figure, rate
from .sentences import gpu_label, one_line

SEVERITY_COLOURS = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#2ca02c"}
ROLE_COLOURS = ["#1f77b4", "#9467bd", "#8c564b", "#17becf", "#bcbd22"]
UNASSIGNED = "#9e9e9e"
# Runs' colours: none of the greys and browns the lifetimes use, nor the bands' red and green.
RUN_COLOURS = ("#1f77b4", "#9467bd", "#e377c2", "#17becf", "#bcbd22", "#393b79", "#7b4173", "#637939")
_HOVER_CHARS = 160
_HOVER_WIDTH = 100  # characters per hover line: evidence is wrapped there, never cut
LABEL_CHARS = 40  # an axis label's most characters: past it the label ends in "…" and the hover has it whole
_NO_THROUGHPUT = f"training logs or wandb runs ({TOK_PER_S}, or a step counter)"


def _unit(df: pd.DataFrame) -> tuple[str, str]:
    """The pace's unit of a frame of samples (model/pace.py), short and as an axis title."""
    u = UNITS.get(str(df["metric"].iloc[0]), "tok/s") if len(df) and "metric" in df.columns else "tok/s"
    return u, "tokens/s" if u == "tok/s" else u


def _hover(u: str) -> str:
    """A hover label's number format for a pace in `u`: whole tokens, three digits of steps."""
    return ",.0f" if u == "tok/s" else ",.3~f"
_NO_GPUS = "GPU captures (nvidia-smi, NVML, wandb system metrics)"
# Findings that are a period of the incident (shaded across every panel), with each kind's
# colour; the rest are markers.
BAND_COLOURS = {"throughput_regression": "#d62728", "stall": "#ff7f0e", "failed_restart": "#6a3d9a",
                "no_recovery": "#7f7f7f", "recovery": "#2ca02c", "partial_recovery": "#bcbd22"}
# The goodput ledger's classes (model.ledger.CLASSES), from time that counted to time lost.
LEDGER_COLOURS = {"productive": "#2ca02c", "degraded": "#bcbd22", "starting": "#9ecae1", "stalled": "#ff7f0e",
                  "diverged": "#8c564b", "lingering": "#d62728", "redone": "#e377c2", "restarting": "#6a3d9a", "down": "#7f7f7f"}
# The event panel's lanes, top to bottom, and the kinds each holds: a handful a reader can name
# instead of one lane per kind. A kind not listed goes to "errors" when it is a problem
# (schema.PROBLEM_EVENTS), else to the last lane.
EVENT_LANES = {
    "process control": ("kill_sent", "killed", "kill_failed", "signal", "exit", "timeout_kill", "job_stopped",
                        "job_running", "process_count"),
    "launches": ("launch", "launch_check", "nohup", "nohup_failed", "job_started", "pid_file", "redirect_failed",
                 "log_missing", "file_check", "file_missing", "elastic_restart"),
    "GPU": ("gpu_query", "gpu_error", "gpu_lost", "xid"),
    "errors": ("traceback", "warning", "error", "exception", "thread_crash", "thread_exception", "compile_error",
               "nccl_timeout", "nccl_error", "oom", "oom_kill", "oom_invoked", "oom_chosen", "oom_reaped"),
    "stages": ("stage", "progress", "run_start", "training_start", "training_stop", "run_end", "run_summary"),
    "commands and other": ("command",),
}
LANE_COLOURS = {"process control": "#b2182b", "launches": "#2166ac", "GPU": "#1b7837", "errors": "#e08214",
                "stages": "#542788", "commands and other": "#525252"}
_LANE_OF = {kind: lane for lane, kinds in EVENT_LANES.items() for kind in kinds}
_LIFETIME_COLOURS = {"process": "#7f7f7f", "GPU process": "#6b4e3d"}
_START_RANGE = "#d0d0d0"  # a start known only as a range: lighter than any bar


def run_colours(runs) -> dict[str, str]:
    """One colour per run, the same in every figure of every page: picked by the run's name (a
    checksum, not Python's per-process hash); where two runs of a figure would share one, the
    later name in sorted order takes the next free colour. The figures of one incident draw the
    same runs, so a run has one colour throughout the report."""
    out: dict[str, str] = {}
    for run in sorted({str(r) for r in runs}):
        first = zlib.crc32(run.encode()) % len(RUN_COLOURS)
        free = [RUN_COLOURS[(first + k) % len(RUN_COLOURS)] for k in range(len(RUN_COLOURS))]
        out[run] = next((c for c in free if c not in out.values()), free[0])  # more runs than colours: shared
    return out


def event_lane(kind) -> str:
    """The lane of the overview's event panel that an event of `kind` is drawn in."""
    kind = str(kind)
    if kind in _LANE_OF:
        return _LANE_OF[kind]
    return "errors" if kind in PROBLEM_EVENTS else "commands and other"


def _empty(title: str, what: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, xaxis={"visible": False}, yaxis={"visible": False}, height=260)
    fig.add_annotation(text=f"no data from {what}", showarrow=False, font={"size": 16})
    return fig


def _label(value, limit: int = _HOVER_CHARS) -> str:
    """Evidence text made safe for a plotly label: escaped, one line, bounded."""
    return html.escape(one_line(value, limit))


def _whole(value, width: int = _HOVER_WIDTH) -> str:
    """Evidence text for a hover, whole: escaped, its own lines kept, long ones wrapped at `width`."""
    s = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    # a word longer than the width (a URL, a path) stays whole on a line of its own
    lines = [piece for line in s.splitlines()
             for piece in textwrap.wrap(line, width, break_on_hyphens=False, break_long_words=False) or [""]]
    return "<br>".join(html.escape(x) for x in lines)


def _grid(d: pd.DataFrame, value: str) -> tuple[list, list[str], list[list[float]]] | None:
    """GPU samples (`detect.sources.gpu_samples`) -> (time bins, GPU labels, matrix) for a heatmap;
    empty bins stay blank."""
    if d.empty:
        return None
    span = (d["time"].max() - d["time"].min()).total_seconds()
    step = d.groupby(["host", "gpu"], dropna=False)["time"].diff().dt.total_seconds().median()
    # Bins at least twice the sampling interval, so jitter never leaves blank stripes.
    width = max(1, math.ceil(2 * (step if step == step else 1)), math.ceil(span / 400))
    many = d["host"].nunique(dropna=True) > 1
    d = d.assign(bin=d["time"].dt.floor(f"{width}s"), label=[gpu_label(h, g, many) for h, g in zip(d["host"], d["gpu"], strict=True)])
    wide = d.pivot_table(index="label", columns="bin", values=value, aggfunc="mean")
    full = pd.date_range(wide.columns.min(), wide.columns.max(), freq=f"{width}s")
    wide = wide.reindex(columns=full)
    order = sorted(wide.index, key=lambda s: (s.rsplit(" ", 1)[0], int(s.rsplit(" ", 1)[1]) if s[-1].isdigit() else 0))
    wide = wide.loc[order]
    return list(wide.columns), list(wide.index), wide.to_numpy().tolist()


def plot_gpu_memory(df: pd.DataFrame) -> go.Figure:
    """GPU memory used per GPU over time, one line per host and GPU (`detect.sources.gpu_samples`)."""
    if df.empty:
        return _empty("GPU memory", _NO_GPUS)
    many = df["host"].nunique(dropna=True) > 1
    fig = go.Figure()
    for (host, gpu, source), g in df.groupby(["host", "gpu", "source"], dropna=False, sort=True):
        label = gpu_label(host, gpu, many)
        fig.add_trace(go.Scatter(x=g["time"], y=g["memory_used_mib"] / 1024, mode="lines", name=label,
                                 hovertemplate="%{x|%H:%M:%S} %{y:.1f} GiB<extra>" + _label(f"{label} ({source})") + "</extra>"))
    fig.update_layout(title="GPU memory used", yaxis_title="GiB", xaxis_title="time (UTC)", legend={"orientation": "h", "y": -0.25})
    return fig


def plot_throughput(df: pd.DataFrame, baseline: float | None = None, recovery_fraction: float | None = None) -> go.Figure:
    """Training throughput over time (`detect.sources.throughput_samples`), one trace per run; with
    the baseline and the recovery threshold (recovery_fraction x baseline) drawn when given."""
    if df.empty:
        return _empty("Throughput", _NO_THROUGHPUT)
    fig = go.Figure()
    u, axis = _unit(df)
    for trace in _throughput_traces(df, run_colours(df["run"])):
        fig.add_trace(trace)
    if baseline:
        fig.add_hline(y=baseline, line={"dash": "dash", "color": "#555"},
                      annotation_text=f"baseline {rate(baseline, u).removesuffix(' tok/s')}")
        if recovery_fraction:
            fig.add_hline(y=baseline * recovery_fraction, line={"dash": "dot", "color": "#999"},
                          annotation_text=f"recovered above {recovery_fraction:.0%}", annotation_position="bottom right")
    fig.update_layout(title="Throughput", yaxis_title=axis, xaxis_title="time (UTC)", legend={"orientation": "h", "y": -0.25})
    fig.update_xaxes(automargin=True)
    return fig


def _throughput_traces(df: pd.DataFrame, colours: dict[str, str]) -> list[go.Scatter]:
    """A line per run and source, in the run's colour; a run's second source (another log of the
    same run name) is dashed and named by its file."""
    out, seen = [], set()
    u, _ = _unit(df)
    for (run, source), g in df.groupby(["run", "source"], dropna=False, sort=False):
        label = f"run {run}" if run not in seen else f"run {run} ({str(source).rsplit('/', 1)[-1]})"
        refs = g["ref"] if "ref" in g.columns else pd.Series("", index=g.index)
        custom = list(zip(g["step"].astype("object").where(g["step"].notna(), "?"), refs.fillna(source).map(_label), strict=True))
        x, y, custom = _broken(list(g["time"]), list(g["value"]), custom)
        out.append(go.Scatter(
            x=x, y=y, mode="lines+markers", marker={"size": 3}, name=label, legendgroup=f"run {run}",
            line={"color": colours[str(run)], "dash": "dash" if run in seen else "solid"},
            customdata=custom,
            hovertemplate="%{x|%H:%M:%S} step %{customdata[0]}: %{y:" + _hover(u) + "} " + u + "<br>%{customdata[1]}<extra>"
                          + _label(label) + "</extra>",
        ))
        seen.add(run)
    return out


# A run's line breaks where its samples stop for this many of its usual intervals (and at least
# GAP_MIN_S): a restart, a stall, a run stopped and started again are no throughput in between.
GAP_INTERVALS = 5
GAP_MIN_S = 10.0


def _broken(x: list, y: list, custom: list) -> tuple[list, list, list]:
    """The points with a break (an empty point, which plotly does not join) in each gap."""
    if len(x) < 3:
        return x, y, custom
    steps = pd.Series(x).diff().dt.total_seconds().iloc[1:]
    gap = max(GAP_MIN_S, GAP_INTERVALS * float(steps[steps > 0].median() if (steps > 0).any() else 0))
    xs, ys, cs = [x[0]], [y[0]], [custom[0]]
    for i in range(1, len(x)):
        if (x[i] - x[i - 1]).total_seconds() > gap:
            xs.append(x[i - 1] + (x[i] - x[i - 1]) / 2)
            ys.append(None)
            cs.append(("", ""))
        xs.append(x[i])
        ys.append(y[i])
        cs.append(custom[i])
    return xs, ys, cs


def lifetime_labels(life: pd.DataFrame) -> list[str]:
    """Each lifetime's axis label: `what`, at most `LABEL_CHARS` characters (an ellipsis where cut)."""
    return [html.escape(one_line(w, LABEL_CHARS)) for w in life["what"]]


def _segments(rows: pd.DataFrame, start: str, end: str, hover) -> tuple[list, list, list]:
    """One line trace's x, y and hover for many bars: each row's bar on its own row (`key`), from
    its `start` to its `end` column, broken by None between bars."""
    xs, ys, texts = [], [], []
    for r in rows.itertuples():
        text = hover(r)
        xs += [getattr(r, start), getattr(r, end), None]
        ys += [r.key, r.key, None]
        texts += [text, text, None]
    return xs, ys, texts


def _lifetime_hover(r) -> str:
    note = "<br>" + html.escape(r.start_note) if r.start_note else ""
    return f"{_whole(r.detail)}<br>{clock(r.start_latest)} – {clock(r.end, utc=True)}{note}<br>{_label(r.source)}"


def _start_range_hover(r) -> str:
    return (f"{_whole(r.detail)}<br>started between {clock(r.start)} and {clock(r.start_latest, utc=True)}"
            f"<br>{html.escape(r.start_note)}")


def _lifetime_traces(life: pd.DataFrame, colours: dict[str, str], in_legend: set) -> list[go.Scatter]:
    """A bar per lifetime (`tables.lifetimes`) on its own row (y is the row's number: labels may
    repeat once capped), runs in their colours; a start known only as a range (ps's minute, or
    the seconds between two listings) is a lighter bar before it, from the earliest to the latest
    it can have been. A run's bar shares its throughput line's legend entry; a run in `in_legend`
    already has one."""
    out = []
    runs = [w.removeprefix("run ") if g == "run" else None for w, g in zip(life["what"], life["group"], strict=True)]
    life = life.assign(key=[str(i) for i in range(len(life))], run=runs)
    for (group, run), g in life.groupby(["group", "run"], sort=False, dropna=False):
        colour = colours.get(str(run)) if group == "run" else _LIFETIME_COLOURS.get(group)
        xs, ys, hover = _segments(g, "start_latest", "end", _lifetime_hover)
        name = f"run {run}" if group == "run" else group + " lifetime"
        out.append(go.Scatter(x=xs, y=ys, mode="lines+markers", line={"width": 9, "color": colour}, marker={"size": 4},
                              name=name, legendgroup=name if group == "run" else "life " + group,
                              showlegend=group != "run" or str(run) not in in_legend, legend="legend2",
                              hovertext=hover, hoverinfo="text"))
    ranged = life[life["start_latest"] > life["start"]]
    if len(ranged):
        xs, ys, hover = _segments(ranged, "start", "start_latest", _start_range_hover)
        out.append(go.Scatter(x=xs, y=ys, mode="lines", line={"width": 9, "color": _START_RANGE},
                              name="start known only as a range (ps)", legendgroup="life start", legend="legend2",
                              hovertext=hover, hoverinfo="text"))
    return out


def _event_traces(ev: pd.DataFrame, findings: pd.DataFrame | None) -> list[go.Scatter]:
    """One trace per event lane (`event_lane`), each its own legend entry, and the findings as
    diamonds coloured by severity on a row above them."""
    out = []
    lanes = ev["kind"].map(event_lane) if len(ev) else pd.Series(dtype=object)
    for lane in EVENT_LANES:
        g = ev[lanes == lane]
        if g.empty:
            continue
        hover = [f"{clock(t)} {_label(k)}<br>{_whole(m)}<br>{_whole(r)}"
                 for t, k, m, r in zip(g["time"], g["kind"], g["message"], g["ref"], strict=True)]
        out.append(go.Scatter(x=g["time"], y=[lane] * len(g), mode="markers", name=lane, legendgroup="lane " + lane,
                              marker={"size": 10, "symbol": "line-ns-open", "color": LANE_COLOURS[lane], "line": {"width": 2}},
                              hovertext=hover, hoverinfo="text", legend="legend3"))
    f = findings.dropna(subset=["start"]) if findings is not None else None
    if f is not None and len(f):  # (a finding nothing dates, a pasted error's, has no place on a time axis)
        hover = [finding_hover(r) for r in f.itertuples()]
        out.append(go.Scatter(
            x=f["start"], y=["findings"] * len(f), mode="markers", name="findings (by severity)",
            marker={"size": 13, "symbol": "diamond", "color": [SEVERITY_COLOURS.get(s, "#444") for s in f["severity"]]},
            hovertext=hover, hoverinfo="text", legendgroup="findings", legend="legend3"))
    return out


def finding_hover(r) -> str:
    """A finding's hover label: title, when, and the evidence lines it cites."""
    ev = list(r.evidence) if isinstance(r.evidence, list | tuple) else []
    # `cited` (tables.overview): each ref with the text of its line, where the file could be read
    cited = getattr(r, "cited", None)
    shown = list(cited) if isinstance(cited, list | tuple) and len(cited) == len(ev) else ev
    cites = "<br>".join(_whole(e) for e in shown[:5]) + (f"<br>… {len(ev) - 5} more" if len(ev) > 5 else "")
    return (f"<b>{_label(r.title)}</b><br>{clock(r.start, utc=True)} · {_label(r.severity)}<br>"
            f"evidence:<br>{cites or 'none cited'}")


def _band_shapes(fig: go.Figure, findings: pd.DataFrame | None, panels: int) -> None:
    """Shade each period finding across each of the `panels` stacked panels in its kind's
    colour, with one legend entry per kind that shows and hides all of its bands."""
    if findings is None:
        return
    shown = set()
    # The rectangles `add_vrect(row="all")` would draw, one per panel, built as plain dicts and
    # set at once: add_vrect revalidates every shape of the figure each time (~0.4 s a report).
    axes = [(f"x{n}", f"y{n} domain") for n in ("", *(str(k) for k in range(2, panels + 1)))]
    shapes = list(fig.layout.shapes)
    for r in findings[findings["kind"].isin(BAND_COLOURS)].dropna(subset=["start"]).itertuples():
        end = r.end if pd.notna(r.end) else r.start
        for k, (xref, yref) in enumerate(axes):
            shapes.append({"type": "rect", "x0": r.start, "x1": end, "xref": xref, "y0": 0, "y1": 1, "yref": yref,
                           "line": {"width": 0}, "opacity": 0.15, "fillcolor": BAND_COLOURS[r.kind],
                           "name": f"shaded: {r.kind.replace('_', ' ')}", "legendgroup": "band " + r.kind,
                           "legend": "legend", "showlegend": k == 0 and r.kind not in shown})
        shown.add(r.kind)
    fig.layout.shapes = shapes


def _time_span(*times: pd.Series) -> list | None:
    """The overview's time axis: every time any panel draws, a little margin either side. Set
    explicitly, because a panel with no data would otherwise stretch the shared axis to 1970."""
    known = pd.concat([pd.Series(t).dropna() for t in times if t is not None and len(t)] or [pd.Series(dtype=object)])
    if known.empty:
        return None
    lo, hi = known.min(), known.max()
    pad = max((hi - lo) * 0.02, pd.Timedelta(seconds=1))
    return [lo - pad, hi + pad]


def _overview_heights(n_legend1: int, n_gpus: int, n_lives: int, n_lanes: int) -> list[int]:
    """Pixels per panel: each GPU, lifetime and lane gets a row it can be read in, the
    throughput panel room for its legend."""
    return [max(240, 20 * n_legend1 + 40), max(100, 26 * n_gpus), max(100, 26 * n_gpus),
            max(100, 22 * n_lives), max(110, 30 * n_lanes)]


def plot_overview(title: str, throughput: pd.DataFrame, memory: pd.DataFrame, utilization: pd.DataFrame,
                  lifetimes: pd.DataFrame, events: pd.DataFrame, findings: pd.DataFrame | None = None) -> go.Figure:
    """One stacked figure on a shared UTC time axis: throughput per run, GPU memory and GPU
    utilization per GPU, what was alive when, and events in a few lanes and findings with their
    evidence (`tables.overview` gathers these frames: `plot_overview(**tables.overview(inc, findings))`).
    Its width follows the page; its height gives every GPU, lifetime and lane a row."""
    titles = ["Throughput per run (tokens/s)", "GPU memory used (GiB)", "GPU utilization (%)",
              "Lifetimes: runs, processes, PIDs on GPUs", "Events and findings"]
    grids = {2: _grid(memory, "memory_used_mib"), 3: _grid(utilization, "util_gpu_pct")}
    marks = _event_traces(events, findings)
    lanes = sorted((t.y[0] for t in marks), key=lambda lane: lane != "findings")  # top to bottom: findings first
    bands = set() if findings is None else set(findings["kind"]) & set(BAND_COLOURS)
    gpus = max((len(g[1]) for g in grids.values() if g is not None), default=0)
    runs = set(throughput["run"].astype(str))
    heights = _overview_heights(len(runs) + len(bands), gpus, len(lifetimes), len(lanes))
    gap = 70  # a panel's title and the time labels above it
    plot_px = sum(heights) + gap * (len(heights) - 1)
    fig = make_subplots(rows=5, cols=1, shared_xaxes=True, vertical_spacing=gap / plot_px, subplot_titles=titles,
                        row_heights=heights)
    missing = {}
    # the throughput's runs keep the colours every other figure gives them; runs only the
    # lifetimes know get theirs after
    colours = run_colours(lifetimes.loc[lifetimes["group"] == "run", "what"].str.removeprefix("run ")) | run_colours(runs)
    for t in _throughput_traces(throughput, colours):
        fig.add_trace(t, row=1, col=1)
    if throughput.empty:
        missing[1] = _NO_THROUGHPUT
    for row, scale, unit, axis in ((2, 1 / 1024, "GiB", "coloraxis"), (3, 1, "%", "coloraxis2")):
        if grids[row] is None:
            missing[row] = _NO_GPUS
            continue
        x, y, z = grids[row]
        z = [[v * scale if v == v else None for v in rowv] for rowv in z]
        fig.add_trace(go.Heatmap(x=x, y=y, z=z, coloraxis=axis, name=unit, hoverongaps=False,
                                 hovertemplate="%{x|%H:%M:%S} %{y}: %{z:.1f} " + unit + "<extra></extra>"), row=row, col=1)
    for t in _lifetime_traces(lifetimes, colours, runs):
        fig.add_trace(t, row=4, col=1)
    if lifetimes.empty:
        missing[4] = "process captures (ps, nvidia-smi compute-apps, training logs)"
    for t in marks:
        fig.add_trace(t, row=5, col=1)
    if not marks:
        missing[5] = "logs or shell transcripts (no events)"
    for row, what in missing.items():
        ref = "" if row == 1 else str(row)
        # plotly draws no panel without a trace, and the note below would land on another one
        fig.add_trace(go.Scatter(x=[], y=[], showlegend=False, hoverinfo="skip"), row=row, col=1)
        fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, row=row, col=1)
        fig.add_annotation(text=f"no data from {what}", xref=f"x{ref} domain", yref=f"y{ref} domain", x=0.5, y=0.5,
                           showarrow=False, font={"size": 13, "color": "#666"})
    _band_shapes(fig, findings, panels=5)
    top = {row: fig.layout[f"yaxis{'' if row == 1 else row}"].domain for row in range(1, 6)}
    beside = {"x": 1.02, "xanchor": "left", "yanchor": "top", "font": {"size": 11}}
    bar = {"thickness": 12, "x": 1.02, "xanchor": "left"}
    fig.update_layout(
        height=plot_px + 150, autosize=True, title=f"Overview: {html.escape(title)}", hovermode="closest",
        hoverlabel={"align": "left"},
        legend=dict(beside, y=top[1][1], title={"text": "runs, shaded periods"}),
        legend2=dict(beside, y=top[4][1], title={"text": "lifetimes"}),
        legend3=dict(beside, y=top[5][1], title={"text": "events"}),
        coloraxis={"colorscale": "Viridis", "colorbar": dict(bar, title="GiB", y=sum(top[2]) / 2, len=top[2][1] - top[2][0])},
        coloraxis2={"colorscale": "Cividis", "cmin": 0, "cmax": 100,
                    "colorbar": dict(bar, title="%", y=sum(top[3]) / 2, len=top[3][1] - top[3][0])},
        margin={"t": 90, "b": 60, "r": 40},
    )
    keys = [str(i) for i in range(len(lifetimes))]
    # category rows top to bottom in the tables' order; labels capped, the whole text in the hover
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=keys[::-1], tickvals=keys,
                     ticktext=lifetime_labels(lifetimes), row=4, col=1)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=lanes[::-1], row=5, col=1)
    fig.update_xaxes(range=_time_span(throughput.get("time"), memory.get("time"), utilization.get("time"),
                                      lifetimes["start"], lifetimes["end"], events.get("time"),
                                      None if findings is None else findings["start"],
                                      None if findings is None else findings["end"]))
    fig.update_yaxes(automargin=True, tickfont={"size": 11})
    fig.update_xaxes(title_text="time (UTC)", row=5, col=1)
    fig.update_xaxes(type="date", showticklabels=True, tickformat="%H:%M:%S", automargin=True)
    return fig


def plot_change_points(series: pd.DataFrame, segments: pd.DataFrame, crossings: pd.DataFrame) -> go.Figure:
    """Throughput samples of every run in time order (`detect.throughput.series`), with the level
    segments (`detect.throughput.segments`); the changes that cross the baseline band
    (`detect.levels.band_crossings`) are marked and labelled, the others drawn faint."""
    if series.empty:
        return _empty("Change points", _NO_THROUGHPUT)
    fig = go.Figure()
    colours = run_colours(series["run"])
    u, axis = _unit(series)
    for run, g in series.groupby("run", sort=False):
        fig.add_trace(go.Scatter(x=g["time"], y=g["value"], mode="markers", marker={"size": 4, "color": colours[str(run)]},
                                 name=f"run {run}",
                                 hovertemplate="%{x|%H:%M:%S} %{y:" + _hover(u) + "} " + u + "<extra>run " + _label(run) + "</extra>"))
    for k, s in enumerate(segments.itertuples()):
        fig.add_trace(go.Scatter(x=[s.start, s.end], y=[s.level, s.level], mode="lines",
                                 line={"color": "black", "width": 3}, name="segment level", legendgroup="seg",
                                 showlegend=k == 0, hovertemplate=f"level {figure(s.level, u)} {u}<extra></extra>"))
    crossing = set(crossings.index)
    for k, s in enumerate(segments.itertuples()):
        if not k:
            continue
        prev = segments["level"].iloc[k - 1]
        if k in crossing:
            fig.add_vline(x=s.start, line={"dash": "dash", "color": "#d62728"})
            fig.add_annotation(x=s.start, y=max(prev, s.level),
                               text=f"{rate(prev, u).removesuffix(' tok/s')} → {rate(s.level, u).removesuffix(' tok/s')}",
                               showarrow=True, arrowhead=2, ax=45, ay=-30, bgcolor="white")
        else:  # a level change inside a noisy degraded run: a faint line only
            fig.add_vline(x=s.start, line={"dash": "dot", "color": "#bbb", "width": 1})
    fig.update_layout(title="Change points in throughput", yaxis_title=axis, xaxis_title="time (UTC)", legend={"orientation": "h", "y": -0.2})
    fig.update_xaxes(automargin=True)
    return fig


def plot_throughput_distribution(series: pd.DataFrame) -> go.Figure:
    """Distribution of step throughput per run (box with every sample)."""
    if series.empty:
        return _empty("Throughput per run", _NO_THROUGHPUT)
    fig = go.Figure()
    colours = run_colours(series["run"])
    u, axis = _unit(series)
    for run, g in series.groupby("run", sort=False):
        fig.add_trace(go.Box(y=g["value"], name=f"run {run}", boxpoints="all", jitter=0.4, pointpos=0,
                             marker={"size": 3, "color": colours[str(run)]}, boxmean=True,
                             hovertemplate="%{y:" + _hover(u) + "} " + u + "<extra></extra>"))
    fig.update_layout(title="Step throughput per run", yaxis_title=axis, showlegend=False)
    fig.update_xaxes(automargin=True)
    return fig


def plot_memory_by_role(table: pd.DataFrame) -> go.Figure:
    """Memory per GPU as bars coloured by the role incident.toml expects; what was observed on top."""
    if table.empty or table["memory_gib"].isna().all():
        return _empty("GPU memory by role", _NO_GPUS)
    roles = [r for r in dict.fromkeys(table["expected_role"]) if r != "unassigned"]
    colour = {r: ROLE_COLOURS[i % len(ROLE_COLOURS)] for i, r in enumerate(roles)} | {"unassigned": UNASSIGNED}
    fig = go.Figure()
    for role, g in table.groupby("expected_role", sort=False):
        idle = ["/" if o == "allocated, idle" else "" for o in g["observed"]]
        fig.add_trace(go.Bar(x=g["label"], y=g["memory_gib"], name=f"expected: {role}", marker_color=colour[role],
                             marker_pattern_shape=idle,
                             text=g["observed"], textposition="outside", cliponaxis=False,
                             customdata=g["util_pct"], hovertemplate="%{x}: %{y:.1f} GiB, util %{customdata:.0f}%<extra>" + _label(role) + "</extra>"))
    fig.update_layout(title="GPU memory per GPU, coloured by expected role", yaxis_title="GiB (median in window)",
                      xaxis={"categoryorder": "array", "categoryarray": list(table["label"]), "automargin": True},
                      barmode="overlay", legend={"orientation": "h", "y": -0.2})
    return fig


def plot_gpu_time(led: pd.DataFrame) -> go.Figure:
    """Where each GPU's time went (`model.ledger`): one stacked bar per GPU, a segment per class,
    in seconds of the incident window."""
    if led.empty:
        return _empty("Where the GPU time went", _NO_GPUS)
    many = led["host"].nunique() > 1
    labels = [gpu_label(h, g, many) for h, g in zip(led["host"], led["gpu"], strict=True)]
    fig = go.Figure()
    for cls, colour in LEDGER_COLOURS.items():
        if led[cls].sum() < SHOWN_S:
            continue
        share = led[cls] / led["total"]
        fig.add_trace(go.Bar(y=labels, x=led[cls], name=cls, orientation="h", marker_color=colour,
                             customdata=share, hovertemplate="%{y}: %{x:,.0f} s (%{customdata:.0%})<extra>" + cls + "</extra>"))
    fig.update_layout(title="Where the GPU time went", barmode="stack", xaxis_title="seconds of the incident window",
                      yaxis={"autorange": "reversed", "automargin": True}, legend={"orientation": "h", "y": -0.25},
                      height=max(220, 60 + 28 * len(labels)))
    return fig


def replay_legend(r) -> str:
    """A replay run's legend entry, from its row of `detect.replay_ab.replay_effects`: what it
    changed against the baseline, in the data's own words."""
    if r.note == "baseline":
        return f"{r.run}: the baseline"
    if not r.knobs_changed:
        return f"{r.run}: no knob changed"
    several = ", not separable" if r.knobs_changed > 1 else ""
    return f"{r.run}: {count(int(r.knobs_changed), 'knob')} changed{several}<br>({_whole(r.change, 60)})"


def plot_replay_ab(effects: pd.DataFrame) -> go.Figure:
    """Each replay run's tok/s against the baseline: median with interquartile spread, a bar per
    run in the run's colour, hatched where several knobs changed at once (its effect cannot be
    split between them); the legend says what each run changed."""
    if effects.empty:
        return _empty("Replay A/B", "replay runs (wandb config with knob settings and tok/s)")
    colours = run_colours(effects["run"])
    fig = go.Figure()
    for r in effects.itertuples():
        fig.add_trace(go.Bar(
            x=[r.run], y=[r.median_tok_per_s], name=replay_legend(r), marker_color=colours[str(r.run)],
            marker_pattern_shape="/" if r.knobs_changed > 1 else "",
            error_y={"type": "data", "symmetric": False, "array": [r.p75 - r.median_tok_per_s],
                     "arrayminus": [r.median_tok_per_s - r.p25]},
            customdata=[[r.vs_baseline, r.samples, _whole(r.change, 60), html.escape(r.note)]],
            hovertemplate="%{x}<br>median %{y:,.0f} tok/s (%{customdata[0]:.2f}x baseline)<br>"
                          "%{customdata[1]} step samples<br>changed: %{customdata[2]}<br>%{customdata[3]}<extra></extra>"))
    fig.add_hline(y=float(effects["median_tok_per_s"].iloc[0]), line_dash="dot",
                  annotation_text="baseline", annotation_position="top left")
    fig.update_layout(title="tok/s per replay run (bar: median; whiskers: 25th-75th percentile)", yaxis_title="tokens/s",
                      height=560, legend={"title": {"text": "what each run changed"}, "font": {"size": 11}},
                      hoverlabel={"align": "left"})
    fig.update_xaxes(automargin=True)
    return fig
