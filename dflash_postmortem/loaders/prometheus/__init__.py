"""Prometheus as a source: GPU telemetry from NVIDIA's DCGM exporter (and node-level metrics
from node_exporter), read from files (`files`: the text exposition format, OpenMetrics dumps,
`promtool tsdb dump`) or from a Prometheus server's HTTP API (`api.load_prometheus`, paged
`query_range` calls, configured by `[prometheus]` in incident.toml).

The modules: exposition (the line grammar), fields (what each metric and label means to the
kit), frames (series -> gpus, events and metrics frames), files (the registered file loader),
api (the HTTP client).
"""

from __future__ import annotations

from . import exposition_files as files  # noqa: F401  (importing registers the file formats)
from .api import load_prometheus

__all__ = ["load_prometheus"]
