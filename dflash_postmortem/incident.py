"""The Incident: the five canonical frames of one incident on one UTC clock (loaded by
`loaders.folder.load_incident`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import plain_data as plain
from . import schema
from .config import IncidentConfig
from .load_report import FileReport, LoadReport


@dataclass
class RunInfo:
    """What a training run says about itself (wandb config, summary, identity, exit)."""

    run: str
    id: str | None = None
    name: str | None = None
    project: str | None = None
    host: str | None = None
    started: pd.Timestamp | None = None
    ended: pd.Timestamp | None = None
    exit_code: int | None = None
    exit_record: bool | None = None  # False: ended without an exit record (killed)
    command: str | None = None
    config: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    source: str | None = None

    def to_plain(self) -> dict:
        return {f: getattr(self, f) for f in _RUN_FIELDS}

    @classmethod
    def from_plain(cls, data, where: str = "run") -> RunInfo:
        """A RunInfo from what `to_plain` gave, every field type-checked (plain_data.Untrusted)."""
        return cls(**plain.fields(where, data, _RUN_FIELDS))


_opt_text = plain.optional(plain.text)
_opt_time = plain.optional(plain.time)
_RUN_FIELDS: dict[str, plain.Check] = {
    "run": plain.text, "id": _opt_text, "name": _opt_text, "project": _opt_text, "host": _opt_text,
    "started": _opt_time, "ended": _opt_time, "exit_code": plain.optional(plain.integer),
    "exit_record": plain.optional(plain.boolean), "command": _opt_text,
    "config": plain.map_of(plain.anything), "summary": plain.map_of(plain.anything), "source": _opt_text,
}


def runs_to_plain(runs: dict[str, RunInfo]) -> list:
    return [[key, info.to_plain()] for key, info in runs.items()]


def runs_from_plain(data, where: str = "runs") -> dict[str, RunInfo]:
    pairs = plain.list_of(plain.list_of(plain.anything))(where, data)
    if not all(len(p) == 2 and isinstance(p[0], str) for p in pairs):
        raise plain.Untrusted(f"{where}: expected [name, run] pairs")
    return {key: RunInfo.from_plain(info, f"{where}[{key!r}]") for key, info in pairs}


@dataclass
class Incident:
    """Canonical frames, the load report, and what the runs say about themselves."""

    gpus: pd.DataFrame = field(default_factory=lambda: schema.empty("gpus"))
    gpu_processes: pd.DataFrame = field(default_factory=lambda: schema.empty("gpu_processes"))
    metrics: pd.DataFrame = field(default_factory=lambda: schema.empty("metrics"))
    events: pd.DataFrame = field(default_factory=lambda: schema.empty("events"))
    processes: pd.DataFrame = field(default_factory=lambda: schema.empty("processes"))
    load_report: LoadReport = field(default_factory=LoadReport)
    runs: dict[str, RunInfo] = field(default_factory=dict)
    config: IncidentConfig = field(default_factory=IncidentConfig)
    root: Path | None = None
    # Read from a folder that is still being written (the live watch): where a run's records
    # stop is where the folder stops, not where the run did (model/attempts.py `_end`).
    live: bool = False
    # What the model computed of the attempts that were over at the watch's last read of the same
    # folder, taken again where their rows are unchanged (model/carried.py's Carry); read only
    # when `live`.
    carried: object | None = None

    @property
    def title(self) -> str:
        if self.config.title:
            return self.config.title
        return self.root.name if self.root is not None else "incident"

    def frames(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in schema.FRAME_NAMES}

    def validate(self) -> None:
        for name, df in self.frames().items():
            schema.validate(name, df)

    def span(self) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
        """First and last time anything was observed."""
        times = []
        for df in self.frames().values():
            for col in ("time", "first_seen", "last_seen"):
                if col in df.columns and len(df):
                    times.append(df[col].dropna())
        if not times:
            return None, None
        allt = pd.concat(times)
        if allt.empty:
            return None, None
        return allt.min(), allt.max()

    def sources(self) -> pd.DataFrame:
        """Time span and row count of each source across all frames."""
        parts = []
        for name, df in self.frames().items():
            tcol = "time" if "time" in df.columns else "first_seen"
            if df.empty:
                continue
            g = df.groupby("source", dropna=False)[tcol].agg(["min", "max", "count"])
            g["frame"] = name
            parts.append(g.reset_index())
        if not parts:
            return pd.DataFrame(columns=["source", "frame", "min", "max", "count"])
        out = pd.concat(parts, ignore_index=True)
        return out.rename(columns={"min": "start", "max": "end", "count": "rows"})[
            ["source", "frame", "start", "end", "rows"]
        ]

    @classmethod
    def combine(cls, parts: list[Incident], *, consume: bool = False, **kw) -> Incident:
        """Concatenate the frames of several sources into one incident. With `consume`, each
        part's frame is dropped as soon as its kind is combined (peak memory: the result plus
        one kind of frame, not every part twice)."""
        inc = cls(**kw)
        _separate_runs_sharing_a_name(parts)
        for name in schema.FRAME_NAMES:
            frames = [getattr(p, name) for p in parts if len(getattr(p, name))]
            if frames:
                df = pd.concat(frames, ignore_index=True)
                del frames
                if consume:
                    for p in parts:
                        setattr(p, name, None)
                sort = "time" if "time" in df.columns else "first_seen"
                df = df.sort_values(sort, kind="stable", na_position="first").reset_index(drop=True)
                setattr(inc, name, schema.conform(name, df))
        for p in parts:
            inc.load_report.extend(p.load_report)
            inc.runs.update(p.runs)
        return inc


def _separate_runs_sharing_a_name(parts: list[Incident]) -> None:
    """A relaunch often reuses its run name: two runs with different ids must not merge into one.

    The later run is renamed `name (id)` in its own source's frames and run table; logs that only
    know the name keep it, so they still line up with the first run of that name.
    """
    seen: dict[str, str | None] = {}
    for p in parts:
        for key, info in list(p.runs.items()):
            if key in seen and seen[key] and info.id and seen[key] != info.id:
                new = f"{key} ({info.id})"
                p.runs = {(new if k == key else k): v for k, v in p.runs.items()}
                info.run = new
                for name in schema.FRAME_NAMES:
                    df = getattr(p, name)
                    if "run" in df.columns and len(df):
                        df = df.copy()
                        df.loc[df["run"] == key, "run"] = new
                        setattr(p, name, df)
                p.load_report.notes.append(f"two runs are named {key!r}: the one with id {info.id} is shown as {new!r}")
                seen[new] = info.id
            else:
                seen.setdefault(key, info.id)


def from_frames(report: FileReport | None = None, **frames) -> Incident:
    """Build a one-source Incident from loader output; conforms every frame to the schema."""
    inc = Incident()
    for name, df in frames.items():
        if name == "runs":
            inc.runs = df
            continue
        df = schema.conform(name, df)
        setattr(inc, name, df)
        if report is not None:
            report.count_rows(name, len(df))
            # (a listing spans from the first snapshot that shows a process to the last)
            for tcol in ("first_seen", "last_seen") if name == "processes" else ("time",):
                report.see_times(df[tcol])
    if report is not None:
        inc.load_report.add(report)
    return inc


def from_sources(reports: list[FileReport], **frames: pd.DataFrame) -> Incident:
    """One Incident from the frames several files of one source made together (a run folder):
    each file's report counts its own rows and time span, found by the `source` they name."""
    inc = Incident()
    for name, df in frames.items():
        if len(df):
            setattr(inc, name, schema.conform(name, df))
    for rep in reports:
        for name, df in frames.items():
            if len(df):
                mine = df["source"] == rep.path
                rep.count_rows(name, int(mine.sum()))
                if mine.any():
                    rep.see_times(df.loc[mine, "time"])
        inc.load_report.add(rep)
    return inc
