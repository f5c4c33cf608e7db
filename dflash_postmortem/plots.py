"""Figures for notebooks and reports. Each function takes an Incident and returns a Figure.

A missing source is drawn as an empty figure that says so ("no data from ..."), never an error:
post-mortems work with whatever evidence survived.
"""

from __future__ import annotations

import plotly.graph_objects as go

from .incident import Incident

THROUGHPUT = "train/tok_per_s"


def _empty(title: str, what: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, xaxis={"visible": False}, yaxis={"visible": False})
    fig.add_annotation(text=f"no data from {what}", showarrow=False, font={"size": 16})
    return fig


def plot_gpu_memory(inc: Incident) -> go.Figure:
    """GPU memory used per GPU over time, one line per host and GPU."""
    df = inc.gpus.dropna(subset=["time", "memory_used_mib"])
    if df.empty:
        return _empty("GPU memory", "GPU captures (nvidia-smi, NVML, wandb system metrics)")
    fig = go.Figure()
    for (host, gpu, source), g in df.groupby(["host", "gpu", "source"], dropna=False, sort=True):
        label = f"GPU {gpu}" + (f" @{host}" if isinstance(host, str) else "") + f" ({source})"
        fig.add_trace(go.Scatter(x=g["time"], y=g["memory_used_mib"] / 1024, mode="lines", name=label,
                                 hovertemplate="%{x|%H:%M:%S} %{y:.1f} GiB<extra>" + label + "</extra>"))
    fig.update_layout(title="GPU memory used", yaxis_title="GiB", xaxis_title="time (UTC)", legend={"orientation": "h", "y": -0.25})
    return fig


def plot_throughput(inc: Incident, metric: str = THROUGHPUT) -> go.Figure:
    """Training throughput over time, one trace per run and source."""
    df = inc.metrics[inc.metrics["metric"] == metric].dropna(subset=["time", "value"])
    if df.empty:
        return _empty("Throughput", f"training logs or wandb runs ({metric})")
    fig = go.Figure()
    for (run, source), g in df.groupby(["run", "source"], dropna=False, sort=True):
        label = f"{run} ({source})"
        fig.add_trace(go.Scatter(x=g["time"], y=g["value"], mode="lines+markers", marker={"size": 3}, name=label,
                                 customdata=g["step"], hovertemplate="%{x|%H:%M:%S} step %{customdata}: %{y:,.0f}<extra>" + label + "</extra>"))
    fig.update_layout(title="Throughput", yaxis_title="tokens/s", xaxis_title="time (UTC)", legend={"orientation": "h", "y": -0.25})
    return fig
