"""Figures for notebooks and reports. Each function returns a `go.Figure` and never shows it.

A missing source is drawn as a figure that says so ("no data from ..."), never an error:
post-mortems work with whatever evidence survived. Text that comes from the evidence (log lines,
command lines) is HTML-escaped before it reaches a hover label, because plotly renders a subset
of HTML in labels and a log line is not markup.
"""

from __future__ import annotations

import html
import math
import re

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .incident import Incident

THROUGHPUT = "train/tok_per_s"
SEVERITY_COLOURS = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#2ca02c"}
ROLE_COLOURS = ["#1f77b4", "#9467bd", "#8c564b", "#17becf", "#bcbd22"]
UNASSIGNED = "#9e9e9e"
# Event kinds too frequent to mark one by one on a timeline (every console line of a wandb run).
_NOISY_EVENTS = {"console"}
_MAX_LIFETIMES = 30
_HOVER_CHARS = 160
_WRAPPER = re.compile(r"^\s*(?:\S*/)?(?:ba|z|da)?sh\s+-c\b")
_PATHS = re.compile(r"(/[^\s/]+)+/([^\s/]+)")  # /srv/x/trainer.py -> trainer.py, for labels
# Findings that are a period of the incident (shaded across every panel); the rest are markers.
_PERIODS = {"throughput_regression", "stall", "failed_restart", "no_recovery", "recovery", "partial_recovery"}


def _empty(title: str, what: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, xaxis={"visible": False}, yaxis={"visible": False}, height=260)
    fig.add_annotation(text=f"no data from {what}", showarrow=False, font={"size": 16})
    return fig


def _text(value, limit: int = _HOVER_CHARS) -> str:
    """Evidence text made safe for a plotly label: escaped, one line, bounded."""
    s = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    s = " ".join(s.split())
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return html.escape(s)


def densest(df: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """Per group of `keys`, the rows of the one source with the most samples of `value`.

    The same GPU or run is often seen by several sources (nvidia-smi stream, dmon, wandb system
    metrics, a one-off snapshot); drawing all of them doubles every line.
    """
    df = df.dropna(subset=["time", value])
    if df.empty:
        return df
    if "host" in keys:
        df = one_host(df)
    counts = df.groupby([*keys, "source"], dropna=False).size().rename("n").reset_index()
    best = counts.sort_values("n", ascending=False, kind="stable").drop_duplicates(keys)
    return df.merge(best[[*keys, "source"]], on=[*keys, "source"]).sort_values("time", kind="stable")


def one_host(df: pd.DataFrame) -> pd.DataFrame:
    """Rows without a host belong to the one host the others name (a snapshot with no hostname
    next to a wandb run that has one); with several hosts named they stay unassigned."""
    named = df["host"].dropna().unique()
    return df.assign(host=df["host"].fillna(named[0])) if len(named) == 1 else df


def gpu_label(host, gpu, many_hosts: bool) -> str:
    g = "GPU ?" if pd.isna(gpu) else f"GPU {int(gpu)}"
    return f"{host}:{g}" if many_hosts and isinstance(host, str) else g


def _grid(df: pd.DataFrame, value: str) -> tuple[list, list[str], list[list[float]]] | None:
    """GPU samples -> (time bins, GPU labels, matrix) for a heatmap; empty bins stay blank."""
    d = densest(df.dropna(subset=["gpu"]), ["host", "gpu"], value)
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


def plot_gpu_memory(inc: Incident) -> go.Figure:
    """GPU memory used per GPU over time, one line per host and GPU (best-sampled source)."""
    df = densest(inc.gpus.dropna(subset=["gpu"]), ["host", "gpu"], "memory_used_mib")
    if df.empty:
        return _empty("GPU memory", "GPU captures (nvidia-smi, NVML, wandb system metrics)")
    many = df["host"].nunique(dropna=True) > 1
    fig = go.Figure()
    for (host, gpu, source), g in df.groupby(["host", "gpu", "source"], dropna=False, sort=True):
        label = gpu_label(host, gpu, many)
        fig.add_trace(go.Scatter(x=g["time"], y=g["memory_used_mib"] / 1024, mode="lines", name=label,
                                 hovertemplate="%{x|%H:%M:%S} %{y:.1f} GiB<extra>" + _text(f"{label} ({source})") + "</extra>"))
    fig.update_layout(title="GPU memory used", yaxis_title="GiB", xaxis_title="time (UTC)", legend={"orientation": "h", "y": -0.25})
    return fig


def throughput_samples(inc: Incident, metric: str = THROUGHPUT) -> pd.DataFrame:
    """Throughput samples per run from the run's best-sampled source (log or wandb)."""
    return densest(inc.metrics[inc.metrics["metric"] == metric], ["run"], "value")


def plot_throughput(inc: Incident, metric: str = THROUGHPUT, baseline: float | None = None,
                    recovery_fraction: float | None = None) -> go.Figure:
    """Training throughput over time, one trace per run; with the baseline and the recovery
    threshold (recovery_fraction x baseline) drawn when given."""
    df = throughput_samples(inc, metric)
    if df.empty:
        return _empty("Throughput", f"training logs or wandb runs ({metric})")
    fig = go.Figure()
    for trace in _throughput_traces(df):
        fig.add_trace(trace)
    if baseline:
        fig.add_hline(y=baseline, line={"dash": "dash", "color": "#555"}, annotation_text=f"baseline {baseline / 1e3:.1f}K")
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
            customdata=list(zip(g["step"].astype("object").where(g["step"].notna(), "?"), refs.fillna(source).map(_text), strict=True)),
            hovertemplate="%{x|%H:%M:%S} step %{customdata[0]}: %{y:,.0f} tok/s<br>%{customdata[1]}<extra>" + _text(label) + "</extra>",
        ))
    return out


def worker_pools(commands: pd.Series) -> pd.Series:
    """Rows whose command more than 3 processes share: a pool of identical workers (torch's
    compile workers, dataloader workers), shown as one row or bar so the rest stays readable."""
    return commands.groupby(commands.fillna("")).transform("size") > 3


def lifetimes(inc: Incident) -> pd.DataFrame:
    """What was alive when: runs (wandb or log span), processes seen by ps, PIDs holding GPU memory."""
    rows = []
    spans = pd.concat([inc.metrics[["run", "time", "source"]], inc.events[["run", "time", "source"]]]).dropna(subset=["run", "time"])
    for run, g in spans.groupby("run", sort=False):
        info = inc.runs.get(run)
        start = info.started if info is not None and info.started is not None else g["time"].min()
        end = info.ended if info is not None and info.ended is not None else g["time"].max()
        rows.append({"what": f"run {run}", "group": "run", "start": start, "end": end, "source": g["source"].iloc[0]})
    procs = inc.processes
    # A `bash -c` wrapper lives exactly as long as the trainer it runs: one bar is enough.
    procs = procs[~procs["command"].fillna("").str.match(_WRAPPER)].copy()
    procs["started"] = procs["started"].fillna(procs["first_seen"])
    pools = worker_pools(procs["command"])
    for cmd, pool in procs[pools].groupby("command", sort=False):
        text = _text(_PATHS.sub(r"\2", str(cmd)), 50)
        rows.append({"what": f"{len(pool)} PIDs {text}", "group": "process", "start": pool["started"].min(),
                     "end": pool["last_seen"].max(), "source": pool["source"].iloc[0]})
    for _, p in procs[~pools].iterrows():
        start = p["started"] if pd.notna(p["started"]) else p["first_seen"]
        end = p["last_seen"] if pd.notna(p["last_seen"]) else start
        if pd.isna(start):
            continue
        cmd = _text(_PATHS.sub(r"\2", str(p["command"])), 60)
        rows.append({"what": f"PID {p['pid']} {cmd}", "group": "process", "start": start, "end": end, "source": p["source"]})
    gp = inc.gpu_processes.dropna(subset=["time", "pid"])
    for pid, g in gp.groupby("pid"):
        gpus = ",".join(str(int(x)) for x in sorted(g["gpu"].dropna().unique()))
        rows.append({"what": f"PID {int(pid)} on GPU {gpus or '?'}", "group": "GPU process", "start": g["time"].min(),
                     "end": g["time"].max(), "source": g["source"].iloc[0]})
    out = pd.DataFrame(rows, columns=["what", "group", "start", "end", "source"])
    return out.sort_values("start", kind="stable").head(_MAX_LIFETIMES).reset_index(drop=True)


def _lifetime_traces(life: pd.DataFrame) -> list[go.Scatter]:
    colours = {"run": "#1f77b4", "process": "#7f7f7f", "GPU process": "#9467bd"}
    out = []
    for group, g in life.groupby("group", sort=False):
        xs, ys, hover = [], [], []
        for r in g.itertuples():
            text = f"{_text(r.what)}<br>{r.start:%H:%M:%S} – {r.end:%H:%M:%S} UTC<br>{_text(r.source)}"
            xs += [r.start, r.end, None]
            ys += [r.what, r.what, None]
            hover += [text, text, None]
        out.append(go.Scatter(x=xs, y=ys, mode="lines+markers", line={"width": 9, "color": colours.get(group)},
                              marker={"size": 4}, name=group + " lifetime", legendgroup="life",
                              hovertext=hover, hoverinfo="text"))
    return out


def _event_traces(inc: Incident, findings: pd.DataFrame | None) -> list[go.Scatter]:
    ev = inc.events[~inc.events["kind"].isin(_NOISY_EVENTS)].dropna(subset=["time"])
    out = []
    if len(ev):
        hover = [f"{t:%H:%M:%S} {_text(k)}<br>{_text(m)}<br>{_text(r)}"
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
    cites = "<br>".join(_text(e, 80) for e in ev[:5]) + (f"<br>… {len(ev) - 5} more" if len(ev) > 5 else "")
    return (f"<b>{_text(r.title)}</b><br>{r.start:%H:%M:%S} UTC · {_text(r.severity)}<br>"
            f"evidence:<br>{cites or 'none cited'}")


def plot_overview(inc: Incident, findings: pd.DataFrame | None = None) -> go.Figure:
    """One stacked figure on a shared UTC time axis: throughput per run, GPU memory and GPU
    utilization per GPU, what was alive when, and events and findings with their evidence."""
    titles = ["Throughput per run (tokens/s)", "GPU memory used (GiB)", "GPU utilization (%)",
              "Lifetimes: runs, processes, PIDs on GPUs", "Events and findings"]
    fig = make_subplots(rows=5, cols=1, shared_xaxes=True, vertical_spacing=0.045, subplot_titles=titles,
                        row_heights=[0.26, 0.17, 0.17, 0.2, 0.2])
    missing = {}
    tput = throughput_samples(inc)
    for t in _throughput_traces(tput):
        fig.add_trace(t, row=1, col=1)
    if tput.empty:
        missing[1] = f"training logs or wandb runs ({THROUGHPUT})"
    for row, value, scale, unit, axis in ((2, "memory_used_mib", 1 / 1024, "GiB", "coloraxis"),
                                                (3, "util_gpu_pct", 1, "%", "coloraxis2")):
        grid = _grid(inc.gpus, value)
        if grid is None:
            missing[row] = "GPU captures (nvidia-smi, NVML, wandb system metrics)"
            continue
        x, y, z = grid
        z = [[v * scale if v == v else None for v in rowv] for rowv in z]
        fig.add_trace(go.Heatmap(x=x, y=y, z=z, coloraxis=axis, name=unit, hoverongaps=False,
                                 hovertemplate="%{x|%H:%M:%S} %{y}: %{z:.1f} " + unit + "<extra></extra>"), row=row, col=1)
    life = lifetimes(inc)
    for t in _lifetime_traces(life):
        fig.add_trace(t, row=4, col=1)
    if life.empty:
        missing[4] = "process captures (ps, nvidia-smi compute-apps, training logs)"
    events = _event_traces(inc, findings)
    for t in events:
        fig.add_trace(t, row=5, col=1)
    if not events:
        missing[5] = "logs or shell transcripts (no events)" + ("" if findings is not None else "; detectors not available")
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
        height=1150, title=f"Overview: {html.escape(inc.title)}", hovermode="closest",
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


def plot_change_points(series: pd.DataFrame, segments: pd.DataFrame | None, min_drop: float = 0.15) -> go.Figure:
    """Throughput samples of every run in time order, with the detected level segments."""
    if series is None or series.empty:
        return _empty("Change points", f"training logs or wandb runs ({THROUGHPUT})")
    fig = go.Figure()
    for run, g in series.groupby("run", sort=False):
        fig.add_trace(go.Scatter(x=g["time"], y=g["value"], mode="markers", marker={"size": 4}, name=f"run {run}",
                                 hovertemplate="%{x|%H:%M:%S} %{y:,.0f} tok/s<extra>run " + _text(run) + "</extra>"))
    title = "Change points in throughput"
    if segments is None:
        title += " (detectors not available: no segments)"
    else:
        for k, s in enumerate(segments.itertuples()):
            fig.add_trace(go.Scatter(x=[s.start, s.end], y=[s.level, s.level], mode="lines",
                                     line={"color": "black", "width": 3}, name="segment level", legendgroup="seg",
                                     showlegend=k == 0, hovertemplate=f"level {s.level:,.0f} tok/s<extra></extra>"))
        crossing = set(band_crossings(segments, min_drop).index)
        for k, s in enumerate(segments.itertuples()):
            if not k:
                continue
            prev = segments["level"].iloc[k - 1]
            if k in crossing:
                fig.add_vline(x=s.start, line={"dash": "dash", "color": "#d62728"})
                fig.add_annotation(x=s.start, y=max(prev, s.level), text=f"{prev / 1e3:.1f}K → {s.level / 1e3:.1f}K",
                                   showarrow=True, arrowhead=2, ax=45, ay=-30, bgcolor="white")
            else:  # a level change inside a noisy degraded run: a faint line only
                fig.add_vline(x=s.start, line={"dash": "dot", "color": "#bbb", "width": 1})
    fig.update_layout(title=title, yaxis_title="tokens/s", xaxis_title="time (UTC)", legend={"orientation": "h", "y": -0.2})
    return fig


def band_crossings(segments: pd.DataFrame, min_drop: float = 0.15) -> pd.DataFrame:
    """Segments whose start moves throughput into or out of the baseline band (the first
    segment's level x (1 - min_drop)): the changes a reader cares about, with `before` level."""
    if segments is None or len(segments) < 2:
        return pd.DataFrame(columns=["start", "before", "level"])
    band = (1 - min_drop) * segments["level"].iloc[0]
    before = segments["level"].shift()
    crossed = (before >= band) != (segments["level"] >= band)
    crossed.iloc[0] = False
    return segments.assign(before=before)[crossed][["start", "before", "level"]]


def plot_throughput_distribution(series: pd.DataFrame) -> go.Figure:
    """Distribution of step throughput per run (box with every sample)."""
    if series is None or series.empty:
        return _empty("Throughput per run", f"training logs or wandb runs ({THROUGHPUT})")
    fig = go.Figure()
    for run, g in series.groupby("run", sort=False):
        fig.add_trace(go.Box(y=g["value"], name=f"run {run}", boxpoints="all", jitter=0.4, pointpos=0,
                             marker={"size": 3}, boxmean=True, hovertemplate="%{y:,.0f} tok/s<extra></extra>"))
    fig.update_layout(title="Step throughput per run", yaxis_title="tokens/s", showlegend=False)
    return fig


def plot_memory_by_role(table: pd.DataFrame) -> go.Figure:
    """Memory per GPU as bars coloured by the role incident.toml expects; what was observed on top."""
    if table is None or table.empty or table["memory_gib"].isna().all():
        return _empty("GPU memory by role", "GPU captures (nvidia-smi, NVML, wandb system metrics)")
    roles = [r for r in dict.fromkeys(table["expected_role"]) if r != "unassigned"]
    colour = {r: ROLE_COLOURS[i % len(ROLE_COLOURS)] for i, r in enumerate(roles)} | {"unassigned": UNASSIGNED}
    fig = go.Figure()
    for role, g in table.groupby("expected_role", sort=False):
        idle = ["/" if o == "allocated, idle" else "" for o in g["observed"]]
        fig.add_trace(go.Bar(x=g["label"], y=g["memory_gib"], name=f"expected: {role}", marker_color=colour[role],
                             marker_pattern_shape=idle,
                             text=g["observed"], textposition="outside",
                             customdata=g["util_pct"], hovertemplate="%{x}: %{y:.1f} GiB, util %{customdata:.0f}%<extra>" + _text(role) + "</extra>"))
    fig.update_layout(title="GPU memory per GPU, coloured by expected role", yaxis_title="GiB (median in window)",
                      xaxis={"categoryorder": "array", "categoryarray": list(table["label"])}, barmode="overlay",
                      legend={"orientation": "h", "y": -0.2})
    return fig


def plot_replay_ab(effects: pd.DataFrame) -> go.Figure:
    """Each replay run's tok/s against the baseline: median with interquartile spread."""
    if effects is None or effects.empty:
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
