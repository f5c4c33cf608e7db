"""Loading an incident: the one entry point, whatever holds it.

A folder (or a single file) is read into memory by the loaders (`loaders.folder.read_folder`);
one asked for a time window, some hosts or some GPUs, or one larger than LARGE_FOLDER_BYTES, goes
through its Parquet store (`store.window`, converted once; docs/store.md) and only the rows asked
for come back. Either way it is the same Incident. What a report's pages read again is the cache
of loaded incidents (report_cache.py), which keeps what this returns.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..incident import Incident
from ..loaders.folder import read_folder, regular_files

# Above this many bytes of files, a plain load_incident goes through the Parquet store: held in
# pandas, such a folder would need several times its size in memory.
LARGE_FOLDER_BYTES = 4 << 30


def load_incident(
    path: str | os.PathLike,
    *,
    timezone: str | None = None,
    on_bad_line: str = "warn",
    host: str | None = None,
    window: tuple | None = None,
    hosts: list[str] | None = None,
    gpus: list[int] | None = None,
    online: bool = False,
) -> Incident:
    """Load every source in an incident folder (or a single file) into one Incident.

    Each file's format is sniffed from its content; `incident.toml`, when present, adds what the
    files cannot say (zone, date, roles, field lists of header-less CSVs, clock offsets). A file
    that cannot be read is an entry of the load report with the reason, never the end of the load,
    unless `on_bad_line="raise"`.

    With `window=(start, end)`, `hosts` or `gpus`, or for a folder larger than
    `LARGE_FOLDER_BYTES`, the folder goes through its Parquet store (converted once, see
    docs/store.md) and only the rows asked for come back.

    Loading reads files and nothing else: a server that incident.toml names (Prometheus) is
    asked only with `online=True`, and is otherwise listed in the load report as needing it.
    """
    root = Path(path)
    if window is not None or hosts is not None or gpus is not None or _is_large(root):
        # Start-up time: the store brings DuckDB and fsspec (~0.2 s), which most loads never need.
        from .window import load_from_store

        return load_from_store(root, window=window, hosts=hosts, gpus=gpus, timezone=timezone,
                               on_bad_line=on_bad_line, host=host)
    return read_folder(root, timezone=timezone, on_bad_line=on_bad_line, host=host, online=online)


def _is_large(root: Path) -> bool:
    if not root.is_dir():
        return False
    total = 0
    for _, st in regular_files(root):
        total += st.st_size
        if total > LARGE_FOLDER_BYTES:
            return True
    return False
