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

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .schema import TOK_PER_S
from .text import gpu_label, one_line
from .units import clock, tok_s

SEVERITY_COLOURS = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#2ca02c"}
ROLE_COLOURS = ["#1f77b4", "#9467bd", "#8c564b", "#17becf", "#bcbd22"]
UNASSIGNED = "#9e9e9e"
_HOVER_CHARS = 160
_NO_THROUGHPUT = f"training logs or wandb runs ({TOK_PER_S})"
_NO_GPUS = "GPU captures (nvidia-smi, NVML, wandb system metrics)"
# Findings that are a period of the incident (shaded across every panel); the rest are markers.
_PERIODS = {"throughput_regression", "stall", "failed_restart", "no_recovery", "recovery", "partial_recovery"}


def _empty(title: str, what: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, xaxis={"visible": False}, yaxis={"visible": False}, height=260)
    fig.add_annotation(text=f"no data from {what}", showarrow=False, font={"size": 16})
    return fig


def _label(value, limit: int = _HOVER_CHARS) -> str:
    """Evidence text made safe for a plotly label: escaped, one line, bounded."""
    return html.escape(one_line(value, limit))


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
    for trace in _throughput_traces(df):
        fig.add_trace(trace)
    if baseline:
        fig.add_hline(y=baseline, line={"dash": "dash", "color": "#555"}, annotation_text=f"baseline {tok_s(baseline)}")
        if recovery_fraction:
            fig.add_hline(y=baseline * recovery_fraction, line={"dash": "dot", "color": "#999"},
                          annotation_text=f"recovered above {recovery_fraction:.0%}", annotation_position="bottom right")
    fig.update_layout(title="Throughput", yaxis_title="tokens/s", xaxis_title="time (UTC)", legend={"orientation": "h", "y": -0.25})
    return fig


def _throughput_traces(df: pd.DataFrame) -> list[go.Scatter]:
    out = []
    for (run, source), g in df.groupby(["run", "source"], dropna=False, sort=False):
        label = f"run {run}"
        refs = g["ref"] if "ref" in g.columns else pd.Series("", index=g.index)
        out.append(go.Scatter(
            x=g["time"], y=g["value"], mode="lines+markers", marker={"size": 3}, name=label, legendgroup="runs",
            customdata=list(zip(g["step"].astype("object").where(g["step"].notna(), "?"), refs.fillna(source).map(_label), strict=True)),
            hovertemplate="%{x|%H:%M:%S} step %{customdata[0]}: %{y:,.0f} tok/s<br>%{customdata[1]}<extra>" + _label(label) + "</extra>",
        ))
    return out


def _lifetime_traces(life: pd.DataFrame) -> list[go.Scatter]:
    colours = {"run": "#1f77b4", "process": "#7f7f7f", "GPU process": "#9467bd"}
    out = []
    for group, g in life.groupby("group", sort=False):
        xs, ys, hover = [], [], []
        for r in g.itertuples():
            text = f"{_label(r.what)}<br>{clock(r.start)} – {clock(r.end, utc=True)}<br>{_label(r.source)}"
            xs += [r.start, r.end, None]
            ys += [html.escape(r.what)] * 2 + [None]
            hover += [text, text, None]
        out.append(go.Scatter(x=xs, y=ys, mode="lines+markers", line={"width": 9, "color": colours.get(group)},
                              marker={"size": 4}, name=group + " lifetime", legendgroup="life",
                              hovertext=hover, hoverinfo="text"))
    return out


def _event_traces(ev: pd.DataFrame, findings: pd.DataFrame | None) -> list[go.Scatter]:
    out = []
    if len(ev):
        hover = [f"{clock(t)} {_label(k)}<br>{_label(m)}<br>{_label(r)}"
                 for t, k, m, r in zip(ev["time"], ev["kind"], ev["message"], ev["ref"], strict=True)]
        out.append(go.Scatter(x=ev["time"], y=ev["kind"].astype(str), mode="markers", name="events",
                              marker={"size": 8, "symbol": "line-ns-open", "line": {"width": 2}, "color": "#444"},
                              hovertext=hover, hoverinfo="text", legendgroup="events"))
    if findings is not None and len(findings):
        f = findings.dropna(subset=["start"])
        hover = [finding_hover(r) for r in f.itertuples()]
        out.append(go.Scatter(
            x=f["start"], y=["findings"] * len(f), mode="markers", name="findings",
            marker={"size": 13, "symbol": "diamond", "color": [SEVERITY_COLOURS.get(s, "#444") for s in f["severity"]]},
            hovertext=hover, hoverinfo="text", legendgroup="events"))
    return out


def finding_hover(r) -> str:
    """A finding's hover label: title, when, and the evidence lines it cites."""
    ev = list(r.evidence) if isinstance(r.evidence, list | tuple) else []
    cites = "<br>".join(_label(e, 80) for e in ev[:5]) + (f"<br>… {len(ev) - 5} more" if len(ev) > 5 else "")
    return (f"<b>{_label(r.title)}</b><br>{clock(r.start, utc=True)} · {_label(r.severity)}<br>"
            f"evidence:<br>{cites or 'none cited'}")


def plot_overview(title: str, throughput: pd.DataFrame, memory: pd.DataFrame, utilization: pd.DataFrame,
                  lifetimes: pd.DataFrame, events: pd.DataFrame, findings: pd.DataFrame | None = None) -> go.Figure:
    """One stacked figure on a shared UTC time axis: throughput per run, GPU memory and GPU
    utilization per GPU, what was alive when, and events and findings with their evidence
    (`tables.overview` gathers these frames: `plot_overview(**tables.overview(inc, findings))`)."""
    titles = ["Throughput per run (tokens/s)", "GPU memory used (GiB)", "GPU utilization (%)",
              "Lifetimes: runs, processes, PIDs on GPUs", "Events and findings"]
    fig = make_subplots(rows=5, cols=1, shared_xaxes=True, vertical_spacing=0.045, subplot_titles=titles,
                        row_heights=[0.26, 0.17, 0.17, 0.2, 0.2])
    missing = {}
    for t in _throughput_traces(throughput):
        fig.add_trace(t, row=1, col=1)
    if throughput.empty:
        missing[1] = _NO_THROUGHPUT
    for row, samples, value, scale, unit, axis in ((2, memory, "memory_used_mib", 1 / 1024, "GiB", "coloraxis"),
                                                   (3, utilization, "util_gpu_pct", 1, "%", "coloraxis2")):
        grid = _grid(samples, value)
        if grid is None:
            missing[row] = _NO_GPUS
            continue
        x, y, z = grid
        z = [[v * scale if v == v else None for v in rowv] for rowv in z]
        fig.add_trace(go.Heatmap(x=x, y=y, z=z, coloraxis=axis, name=unit, hoverongaps=False,
                                 hovertemplate="%{x|%H:%M:%S} %{y}: %{z:.1f} " + unit + "<extra></extra>"), row=row, col=1)
    for t in _lifetime_traces(lifetimes):
        fig.add_trace(t, row=4, col=1)
    if lifetimes.empty:
        missing[4] = "process captures (ps, nvidia-smi compute-apps, training logs)"
    marks = _event_traces(events, findings)
    for t in marks:
        fig.add_trace(t, row=5, col=1)
    if not marks:
        missing[5] = "logs or shell transcripts (no events)"
    for row, what in missing.items():
        ref = "" if row == 1 else str(row)
        fig.add_annotation(text=f"no data from {what}", xref=f"x{ref} domain", yref=f"y{ref} domain", x=0.5, y=0.5,
                           showarrow=False, font={"size": 13, "color": "#666"})
    if findings is not None:
        for r in findings[findings["kind"].isin(_PERIODS)].dropna(subset=["start"]).itertuples():
            end = r.end if pd.notna(r.end) else r.start
            fig.add_vrect(x0=r.start, x1=end, row="all", col=1, line_width=0, opacity=0.12,
                          fillcolor=SEVERITY_COLOURS.get(r.severity, "#999"))
    bar = {"thickness": 12, "len": 0.17, "x": 1.01}
    fig.update_layout(
        height=1150, title=f"Overview: {html.escape(title)}", hovermode="closest",
        legend={"orientation": "h", "y": -0.06},
        coloraxis={"colorscale": "Viridis", "colorbar": dict(bar, title="GiB", y=0.64)},
        coloraxis2={"colorscale": "Cividis", "cmin": 0, "cmax": 100, "colorbar": dict(bar, title="%", y=0.44)},
        margin={"l": 150, "r": 60, "t": 70, "b": 60},
    )
    fig.update_xaxes(title_text="time (UTC)", row=5, col=1)
    fig.update_yaxes(dtick=1, row=4, col=1)  # category labels: show every one, never thinned
    fig.update_yaxes(dtick=1, row=5, col=1)
    fig.update_xaxes(showticklabels=True, tickformat="%H:%M:%S")
    return fig


def plot_change_points(series: pd.DataFrame, segments: pd.DataFrame, crossings: pd.DataFrame) -> go.Figure:
    """Throughput samples of every run in time order (`detect.throughput.series`), with the level
    segments (`detect.throughput.segments`); the changes that cross the baseline band
    (`detect.levels.band_crossings`) are marked and labelled, the others drawn faint."""
    if series.empty:
        return _empty("Change points", _NO_THROUGHPUT)
    fig = go.Figure()
    for run, g in series.groupby("run", sort=False):
        fig.add_trace(go.Scatter(x=g["time"], y=g["value"], mode="markers", marker={"size": 4}, name=f"run {run}",
                                 hovertemplate="%{x|%H:%M:%S} %{y:,.0f} tok/s<extra>run " + _label(run) + "</extra>"))
    for k, s in enumerate(segments.itertuples()):
        fig.add_trace(go.Scatter(x=[s.start, s.end], y=[s.level, s.level], mode="lines",
                                 line={"color": "black", "width": 3}, name="segment level", legendgroup="seg",
                                 showlegend=k == 0, hovertemplate=f"level {s.level:,.0f} tok/s<extra></extra>"))
    crossing = set(crossings.index)
    for k, s in enumerate(segments.itertuples()):
        if not k:
            continue
        prev = segments["level"].iloc[k - 1]
        if k in crossing:
            fig.add_vline(x=s.start, line={"dash": "dash", "color": "#d62728"})
            fig.add_annotation(x=s.start, y=max(prev, s.level), text=f"{tok_s(prev)} → {tok_s(s.level)}",
                               showarrow=True, arrowhead=2, ax=45, ay=-30, bgcolor="white")
        else:  # a level change inside a noisy degraded run: a faint line only
            fig.add_vline(x=s.start, line={"dash": "dot", "color": "#bbb", "width": 1})
    fig.update_layout(title="Change points in throughput", yaxis_title="tokens/s", xaxis_title="time (UTC)", legend={"orientation": "h", "y": -0.2})
    return fig


def plot_throughput_distribution(series: pd.DataFrame) -> go.Figure:
    """Distribution of step throughput per run (box with every sample)."""
    if series.empty:
        return _empty("Throughput per run", _NO_THROUGHPUT)
    fig = go.Figure()
    for run, g in series.groupby("run", sort=False):
        fig.add_trace(go.Box(y=g["value"], name=f"run {run}", boxpoints="all", jitter=0.4, pointpos=0,
                             marker={"size": 3}, boxmean=True, hovertemplate="%{y:,.0f} tok/s<extra></extra>"))
    fig.update_layout(title="Step throughput per run", yaxis_title="tokens/s", showlegend=False)
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
                             text=g["observed"], textposition="outside",
                             customdata=g["util_pct"], hovertemplate="%{x}: %{y:.1f} GiB, util %{customdata:.0f}%<extra>" + _label(role) + "</extra>"))
    fig.update_layout(title="GPU memory per GPU, coloured by expected role", yaxis_title="GiB (median in window)",
                      xaxis={"categoryorder": "array", "categoryarray": list(table["label"])}, barmode="overlay",
                      legend={"orientation": "h", "y": -0.2})
    return fig


def plot_replay_ab(effects: pd.DataFrame) -> go.Figure:
    """Each replay run's tok/s against the baseline: median with interquartile spread."""
    if effects.empty:
        return _empty("Replay A/B", "replay runs (wandb config with knob settings and tok/s)")
    colour = ["#7f7f7f" if n == "baseline" else "#d62728" if k > 1 else "#1f77b4"
              for n, k in zip(effects["note"], effects["knobs_changed"], strict=True)]
    labels = [f"{r}<br>{c}" if c != "-" else r for r, c in zip(effects["run"], effects["change"], strict=True)]
    fig = go.Figure(go.Bar(
        x=labels, y=effects["median_tok_per_s"], marker_color=colour,
        error_y={"type": "data", "symmetric": False, "array": effects["p75"] - effects["median_tok_per_s"],
                 "arrayminus": effects["median_tok_per_s"] - effects["p25"]},
        customdata=list(zip(effects["vs_baseline"], effects["samples"], effects["note"], strict=True)),
        hovertemplate="%{x}<br>median %{y:,.0f} tok/s (%{customdata[0]:.2f}x baseline)<br>"
                      "%{customdata[1]} step samples %{customdata[2]}<extra></extra>"))
    fig.add_hline(y=float(effects["median_tok_per_s"].iloc[0]), line_dash="dot",
                  annotation_text="baseline", annotation_position="top left")
    fig.update_layout(title="tok/s per replay run (bar: median; whiskers: 25th-75th percentile; "
                            "blue: one knob changed, red: several)", yaxis_title="tokens/s", showlegend=False,
                      height=560, margin={"b": 160})
    return fig
