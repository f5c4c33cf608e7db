"""The files of a wandb run folder, read inside the folder or found alone.

A user often copies only some files out of `wandb/run-*/` (a summary pasted into a ticket, the
metadata of the machine, the console). Each is recognised by its content and read as what it is:

| file | what it holds | becomes |
| --- | --- | --- |
| `files/wandb-summary.json` | last value of every key, `_step`, `_runtime`, `_timestamp` | `runs[...].summary`, a `run_summary` event at `_timestamp` |
| `files/wandb-metadata.json` | host, start time (UTC), program and args, GPUs | `runs[...]`, a `run_start` event, one `gpus` row per GPU (name, UUID, total memory) |
| `files/config.yaml` | `key: {desc, value}` (<= 0.18) or `key: {value}` | `runs[...].config` |
| `files/requirements.txt` | `pip freeze` of the run's environment | load-report notes (the versions that matter) |
| `files/wandb-events.jsonl` (<= 0.16) | system stats, one JSON object per sample | `metrics` `system/...`, per-GPU `gpus` rows |
| `wandb-history.jsonl` (< 0.10) | history rows | `metrics` |
| `files/output.log` | the console | `console` events (alone: the training-log reader first, this one when it recognises nothing) |
| `latest-run`, `debug*.log` links | symlinks (or their text when copied) | bookkeeping, counted |

Every file gets a FileReport whose parsed + skipped == read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ...clock import align
from ...incident import Incident, RunInfo, from_frames
from ...load_report import FileReport
from ...schema import TIME
from .. import registry
from ..registry import SNIFF_BYTES, LoadContext
from ..terminal import ESCAPES
from .frames import gpu_info, history_frame, numeric_values, stats_frames

_LINK_TEXT = re.compile(
    rb"^[^\n]{0,200}?(?:(?:offline-)?run-\d{8}_\d{6}-\w+(?:/logs/debug(?:-internal)?\.log)?"
    rb"|core-debug-\d{8}_\d{6}\.log)\n?$"
)
_LEADING_TIME = re.compile(r"^\[?(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)")
_SUMMARY_KEYS = re.compile(rb'"(?:_wandb|_runtime|_timestamp|_step)"\s*:')
# The SDK's own key: `{"_wandb": {"runtime": 3}}` is the whole summary of a run that logged nothing.
_SDK_RUNTIME = re.compile(rb'"_wandb"\s*:\s*\{\s*"runtime"\s*:')
_METADATA_KEYS = re.compile(rb'"(?:program|codePath|codePathLocal|python|heartbeatAt|executable|cpu_count|gpu_count)"\s*:')
_CONFIG_KEY = re.compile(r"^(?P<key>[^\s#:][^:]*):\s*$")
_CONFIG_CHILD = re.compile(r"^\s+(?:value|desc):")
_REQUIREMENT = re.compile(
    r"^(?:[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?\s*(?:(?:===|==|>=|<=|~=|!=|<|>)\s*[^\s;#]+(?:\s*,\s*(?:==|>=|<=|~=|!=|<|>)\s*[^\s;#]+)*"
    r"|\s*@\s*\S+)?\s*(?:;.*)?"
    r"|-e\s+\S+|--?[a-z-]+(?:[ =]\S+)?|\S+\.(?:whl|tar\.gz|zip)|git\+\S+)\s*$"
)
# Packages whose versions a post-mortem asks about first.
KEY_PACKAGES = ("torch", "wandb", "transformers", "accelerate", "deepspeed", "flash-attn", "flash_attn",
                "vllm", "triton", "nvidia-nccl-cu12", "nvidia-nccl-cu11", "megatron-core", "jax", "tensorflow")
# The largest summary read when the markers are past the sniff head (media summaries grow).
_MAX_SUMMARY_BYTES = 16 * 2**20


@dataclass
class Metadata:
    """What `wandb-metadata.json` says about the run's machine and start."""

    host: str | None = None
    name: str | None = None  # the run's display name (only SDKs before 0.10 write it here)
    started: pd.Timestamp | None = None
    command: str | None = None
    gpus: dict[int, dict] = field(default_factory=dict)  # index -> uuid, memory_total_mib, name
    gpu_count: int | None = None


# --------------------------------------------------------------------------------------------
# readers (used inside a run folder and alone)


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


# A run's JSON and YAML documents (summary, metadata, config) are kilobytes; one far larger is not
# parsed (a parser holds the whole document, several times over).
DOCUMENT_LIMIT = 64 << 20


def _too_large(path: Path, rep: FileReport, expected: str) -> bool:
    size = path.stat().st_size
    if size <= DOCUMENT_LIMIT:
        return False
    rep.bad(1, f"{expected} of at most {DOCUMENT_LIMIT >> 20} MiB", f"{size:,} bytes: not parsed")
    return True


def read_json_doc(path: Path, ctx: LoadContext, fmt: str) -> tuple[dict, FileReport]:
    """One JSON object: the report counts the file as one document, parsed or not."""
    rep = ctx.report(path, fmt, unit="document")
    rep.read = 1
    if _too_large(path, rep, "one JSON object"):
        return {}, rep
    text = read_text(path)
    try:
        doc = json.loads(text)
    except ValueError as e:
        rep.bad(1, "one JSON object", f"{e} ({len(text)} characters{_cut_hint(text)})")
        return {}, rep
    except RecursionError:
        rep.bad(1, "one JSON object", "nesting too deep to read")
        return {}, rep
    if not isinstance(doc, dict):
        rep.bad(1, "one JSON object", type(doc).__name__)
        return {}, rep
    rep.parsed = 1
    return doc, rep


def _cut_hint(text: str) -> str:
    return ", cut short?" if text.rstrip() and not text.rstrip().endswith("}") else ""


def _float(value) -> float:
    if isinstance(value, bool):
        return np.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return np.nan


def _epoch(value) -> pd.Timestamp | None:
    """wandb's `_timestamp` (seconds since the epoch, float, sometimes 1.77e+09) as UTC."""
    seconds = _float(value)
    if not np.isfinite(seconds) or not 0 < seconds < 2**33:
        return None
    return pd.Timestamp(round(seconds * 1e6), unit="us", tz="UTC")


def summary_facts(summary: dict) -> tuple[pd.Timestamp | None, pd.Timestamp | None, float, float]:
    """(first time, last time, step, runtime s) a summary implies: `_timestamp` is the last
    history row's time and `_runtime` the seconds since the run started."""
    end = _epoch(summary.get("_timestamp"))
    runtime = _float(summary.get("_runtime"))
    wb = summary.get("_wandb")
    if not np.isfinite(runtime) and isinstance(wb, dict):
        runtime = _float(wb.get("runtime"))
    start = end - pd.Timedelta(seconds=runtime).round("us") if end is not None and np.isfinite(runtime) else None
    return start, end, _float(summary.get("_step")), runtime


def summary_event(summary: dict, run: str, source: str) -> pd.DataFrame:
    """A `run_summary` event at `_timestamp`: where the run was when it last logged."""
    _, end, step, runtime = summary_facts(summary)
    if end is None and not np.isfinite(step):
        return pd.DataFrame()
    parts = []
    if np.isfinite(step):
        parts.append(f"step {step:.0f}")
    if np.isfinite(runtime):
        parts.append(f"{runtime:.0f} s after the start")
    values = {k: v for k, v in summary.items() if not k.startswith("_")}
    nums, mask = numeric_values(list(values.values()))
    shown = [f"{k}={v:g}" for k, v, m in zip(values, nums, mask, strict=True) if m][:8]
    message = "last logged: " + ", ".join(parts) + (f" ({', '.join(shown)})" if shown else "")
    return pd.DataFrame({
        "time": pd.Series([end], dtype=object).astype(TIME), "run": run, "kind": "run_summary",
        "message": message, "source": source, "ref": f"{source}:1",
        "step": pd.array([step if np.isfinite(step) else None], dtype="Int64"), "runtime_s": runtime,
    })


def read_metadata(path: Path, ctx: LoadContext) -> tuple[Metadata, FileReport]:
    doc, rep = read_json_doc(path, ctx, "wandb-metadata")
    meta = metadata_facts(doc)
    if meta.started is not None:
        rep.notes.append("startedAt is UTC (wandb writes it so, with or without a Z)")
    return meta, rep


def metadata_facts(doc: dict) -> Metadata:
    meta = Metadata()
    host = doc.get("host") or doc.get("hostname")
    meta.host = host if isinstance(host, str) and host else None
    meta.name = doc["name"] if isinstance(doc.get("name"), str) and doc["name"] else None
    started = doc.get("startedAt")
    if isinstance(started, str):
        t = pd.to_datetime(pd.Series([started]), errors="coerce", utc=False, format="ISO8601")
        meta.started = align.localize(t, "UTC").iloc[0] if t.notna().all() else None
        if meta.started is pd.NaT:
            meta.started = None
    program = doc.get("program") or doc.get("codePath") or ""
    args = doc.get("args") if isinstance(doc.get("args"), list) else []
    command = " ".join(str(x) for x in [program, *args] if x != "").strip()
    meta.command = command or None
    meta.gpus = gpu_info({}, doc)
    devices = doc.get("gpu_devices")
    if not meta.gpus and isinstance(devices, list):  # 0.12-0.16: name and memory_total (bytes)
        meta.gpus = gpu_info({"gpu_nvidia": [d for d in devices if isinstance(d, dict)]}, {})
    count = doc.get("gpu_count")
    meta.gpu_count = int(count) if isinstance(count, int) and not isinstance(count, bool) else None
    if not meta.gpus and meta.gpu_count and isinstance(doc.get("gpu"), str):
        # Older metadata names the model and the count only.
        meta.gpus = {i: {"uuid": None, "memory_total_mib": np.nan, "name": doc["gpu"]} for i in range(meta.gpu_count)}
    return meta


def metadata_frames(meta: Metadata, run: str, source: str, host: str | None):
    """A `run_start` event and the GPU inventory (`gpus` rows at the start time)."""
    events = pd.DataFrame()
    if meta.started is not None or meta.command:
        where = f" on {host}" if host else ""
        what = f": {meta.command}" if meta.command else ""
        events = pd.DataFrame({
            "time": pd.Series([meta.started], dtype=object).astype(TIME), "host": host, "run": run,
            "kind": "run_start", "message": f"wandb run started{where}{what}", "source": source,
            "ref": f"{source}:1",
        })
    gpus = pd.DataFrame()
    if meta.gpus:
        gpus = pd.DataFrame.from_dict(meta.gpus, orient="index").rename_axis("gpu").reset_index()
        gpus["time"] = pd.Series([meta.started] * len(gpus), dtype=object).astype(TIME)
        gpus["host"], gpus["source"], gpus["run"] = host, source, run
        # An inventory, not a sample: used memory and load are unknown (NaN), never 0.
    return events, gpus


def _loader_without_aliases(yaml):
    """PyYAML's SafeLoader refusing aliases: `*name` shares a node, and a few lines of nested
    aliases stand for a structure that is gigabytes once written out (the billion laughs). The
    SDK never writes them."""

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                raise yaml.YAMLError(f"an alias (*{self.peek_event().anchor}) at line "
                                     f"{self.peek_event().start_mark.line + 1}: aliases are not read")
            return super().compose_node(parent, index)

    return Loader


WANDB_CONFIG_FORMAT = "wandb-config"


def read_config(path: Path, ctx: LoadContext) -> tuple[dict, FileReport]:
    import yaml  # here, not at the top: start-up time (only a config.yaml needs it)

    rep = ctx.report(path, WANDB_CONFIG_FORMAT, unit="document")
    rep.read = 1
    if _too_large(path, rep, "a wandb config.yaml mapping"):
        return {}, rep
    try:
        doc = yaml.load(read_text(path), Loader=_loader_without_aliases(yaml))  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as e:
        rep.bad(1, "a wandb config.yaml mapping", str(e).splitlines()[0] if str(e) else type(e).__name__)
        return {}, rep
    except RecursionError:
        rep.bad(1, "a wandb config.yaml mapping", "nesting too deep to read")
        return {}, rep
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        rep.bad(1, "a wandb config.yaml mapping", type(doc).__name__)
        return {}, rep
    rep.parsed = 1
    # wandb writes {key: {desc: ..., value: ...}} (or {key: {value: ...}}); `_wandb` is the SDK's
    # own bookkeeping and `wandb_version` the file format's.
    return {
        str(k): (v.get("value") if isinstance(v, dict) and "value" in v else v)
        for k, v in doc.items()
        if k not in ("_wandb", "wandb_version")
    }, rep


PIP_REQUIREMENTS_FORMAT = "pip-requirements"


def read_requirements(path: Path, ctx: LoadContext) -> FileReport:
    rep = ctx.report(path, PIP_REQUIREMENTS_FORMAT)
    lines = read_text(path).splitlines()
    rep.read = len(lines)
    found = {}
    for i, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            rep.skip(i, "blank line")
        elif text.startswith("#"):
            rep.skip(i, "comment")
        elif _REQUIREMENT.match(text):
            rep.parsed += 1
            name = re.split(r"[\s=<>~!@\[;]", text, maxsplit=1)[0].lower()
            if name in KEY_PACKAGES:
                found[name] = text
        else:
            rep.bad(i, "a requirement (name==version, name @ url, -e path)", text)
    if found:
        rep.notes.append("versions: " + ", ".join(found.values()))
    return rep


def read_output_log(path: Path, ctx: LoadContext, known: list[str], run: str | None,
                    host: str | None) -> tuple[FileReport, pd.DataFrame]:
    """files/output.log inside a run folder: console lines the .wandb log did not already give."""
    rep = ctx.report(path, "wandb-output-log")
    lines = read_text(path).splitlines()
    rep.read = len(lines)
    j = 0
    kept_no, kept = [], []
    coloured = 0
    for i, raw in enumerate(lines, 1):
        line = raw.rstrip("\r").rsplit("\r", 1)[-1]
        if "\x1b" in line:
            line, n = ESCAPES.subn("", line)
            coloured += bool(n)
        if not line.strip():
            rep.skip(i, "blank line")
        elif j < len(known) and line == known[j]:
            rep.skip(i, "same console line as the .wandb log (kept from there, with its time)")
            j += 1
        else:
            kept_no.append(i)
            kept.append(line)
    rep.parsed = len(kept)
    if coloured:
        rep.notes.append(f"terminal colour codes removed from {coloured} lines")
    if not kept:
        return rep, pd.DataFrame()
    times = _leading_times(kept, ctx.timezone)
    if times.notna().any():
        rep.assume(align.zone_assumption(ctx.timezone) + " (times at the start of console lines)")
    if times.isna().any():
        rep.notes.append(f"{int(times.isna().sum())} console lines carry no time of their own")
    if known:
        rep.notes.append(f"{len(kept)} console lines are not in the .wandb log (written after it stops)")
    return rep, pd.DataFrame({"time": times, "host": host, "run": run, "kind": "console", "message": kept,
                              "source": rep.path, "ref": [f"{rep.path}:{n}" for n in kept_no]})


def _leading_times(lines: list[str], tz: str) -> pd.Series:
    stamps = [(m.group(1).replace(",", ".") if (m := _LEADING_TIME.match(t)) else None) for t in lines]
    naive = pd.to_datetime(pd.Series(stamps, dtype=object), errors="coerce", format="mixed")
    return align.localize(naive, tz)


def _json_lines(path: Path, rep: FileReport, what: str) -> list[tuple[int, dict]]:
    """(line number, object) per line that holds one JSON object; the rest counted."""
    lines = read_text(path).splitlines()
    rep.read = len(lines)
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            rep.skip(i, "blank line")
            continue
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):
            last = i == len(lines)
            if last:  # the writer was killed mid-line
                rep.skip(i, "incomplete last line (the file ends inside it)")
            else:
                rep.bad(i, what, line)
            continue
        if not isinstance(doc, dict):
            rep.bad(i, what, type(doc).__name__)
            continue
        out.append((i, doc))
    return out


WANDB_EVENTS_JSONL_FORMAT = "wandb-events-jsonl"


def read_events_jsonl(path: Path, ctx: LoadContext, run: str, host: str | None, gpus: dict[int, dict]):
    """files/wandb-events.jsonl (SDKs up to 0.16): one system-stats sample a line."""
    rep = ctx.report(path, WANDB_EVENTS_JSONL_FORMAT)
    row, key, value, times = [], [], [], []
    for i, doc in _json_lines(path, rep, "one JSON object of system stats"):
        t = _epoch(doc.get("_timestamp"))
        if t is None:
            rep.bad(i, "a sample with a _timestamp", ", ".join(list(doc)[:4]))
            continue
        n = len(times)
        for k, v in doc.items():
            if k.startswith("system."):
                row.append(n)
                key.append(k[len("system."):])
                value.append(v)
        times.append(t)
        rep.parsed += 1
    time = pd.Series(times, dtype=object).astype(TIME)
    metrics, gpu_rows = stats_frames(row, key, value, time, run, host, rep.path, gpus)
    return rep, metrics, gpu_rows


WANDB_HISTORY_JSONL_FORMAT = "wandb-history-jsonl"


def read_history_jsonl(path: Path, ctx: LoadContext, run: str):
    """wandb-history.jsonl (SDKs before 0.10): one history row a line."""
    rep = ctx.report(path, WANDB_HISTORY_JSONL_FORMAT)
    row, key, value, stepnum = [], [], [], []
    for _, doc in _json_lines(path, rep, "one JSON object of history"):
        n = len(stepnum)
        for k, v in doc.items():
            row.append(n)
            key.append(k)
            value.append(v)
        stepnum.append(n)
        rep.parsed += 1
    return rep, history_frame(row, key, value, stepnum, run, rep.path, rep)


# --------------------------------------------------------------------------------------------
# bookkeeping: symlinks (or symlinks copied as text) that point at the real files


_WANDB_LINK_TARGET = re.compile(r"(?:^|/)(?:offline-)?run-\d{8}_\d{6}-\w+|debug(?:-internal|-core)?\.log$|wandb")


def link_target(path: Path, head: bytes) -> str | None:
    """A symlink, or a symlink copied as a short text file holding its target: bookkeeping."""
    if path.is_symlink():
        target = str(path.readlink())
        # wandb's own links: latest-run, debug*.log, logs/debug-core.log into ~/.cache/wandb.
        return target if _WANDB_LINK_TARGET.search(target) else None
    if len(head) < 300 and _LINK_TEXT.match(head):
        return head.decode("utf-8", "replace").strip()
    return None


def bookkeeping(path: Path, ctx: LoadContext, target: str) -> FileReport:
    rep = ctx.report(path, "wandb-bookkeeping", unit="file")
    rep.read = 1
    rep.skip(None, "wandb bookkeeping (a link), not evidence")
    rep.notes.append(f"points to {target}")
    return rep


# --------------------------------------------------------------------------------------------
# sniffers: each file's own content, never its name


def _json_object_head(head: bytes) -> bytes | None:
    body = head.lstrip()
    return body if body.startswith(b"{") else None


def sniff_summary(path: Path, head: bytes) -> float:
    body = _json_object_head(head)
    if body is None or body.startswith(b'{"record"'):
        return 0.0
    if _METADATA_KEYS.search(body) and b'"startedAt"' in body:
        return 0.0
    first_line = body.split(b"\n", 1)[0]
    if b"\n" in body.rstrip() and first_line.rstrip().endswith(b"}"):
        return 0.0  # one object a line: JSON lines, not one summary
    if len(_SUMMARY_KEYS.findall(body)) >= 2 or _SDK_RUNTIME.search(body):
        return 0.85
    if len(head) >= SNIFF_BYTES and _summary_tail_matches(path):
        return 0.85
    return 0.0


def _summary_tail_matches(path: Path) -> bool:
    """Large summaries (media, tables) keep `_step`, `_runtime`, ... near their end."""
    try:
        size = path.stat().st_size
        if size > _MAX_SUMMARY_BYTES:
            return False
        with open(path, "rb") as f:
            f.seek(max(0, size - SNIFF_BYTES))
            return len(_SUMMARY_KEYS.findall(f.read())) >= 2
    except OSError:
        return False


def sniff_metadata(path: Path, head: bytes) -> float:
    body = _json_object_head(head)
    if body is None or b'"startedAt"' not in body:
        return 0.0
    return 0.9 if len(set(_METADATA_KEYS.findall(body))) >= 1 else 0.0


def sniff_config(path: Path, head: bytes) -> float:
    text = head[:16384].decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return 0.0
    if lines[0].strip() == "wandb_version: 1":
        return 0.9
    # {key: {value: ...}} for every top-level key: count keys followed by a `value:` child.
    keys = with_value = 0
    for a, b in zip(lines, lines[1:], strict=False):
        if _CONFIG_KEY.match(a):
            keys += 1
            with_value += bool(_CONFIG_CHILD.match(b))
    if keys >= 2 and with_value == keys and any(ln.startswith("_wandb:") for ln in lines):
        return 0.85
    return 0.0


def sniff_requirements(path: Path, head: bytes) -> float:
    if b"\0" in head[:4096]:
        return 0.0
    text = head[:16384].decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) < 3:
        return 0.0
    pinned = sum(bool(re.match(r"^[A-Za-z0-9][\w.\-\[\],]*\s*(===|==|>=|~=)\s*\S+$|^[A-Za-z0-9][\w.-]* @ \S+$", ln))
                 for ln in lines[:-1])  # the last line may be cut by the sniff head
    return 0.5 if pinned >= 0.9 * (len(lines) - 1) else 0.0


def _first_json_line(head: bytes) -> dict | None:
    line = head.lstrip().split(b"\n", 1)[0]
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


# What a program's console shows and a README or a config does not: redraws, bars, tracebacks,
# terminal colours, the words of a training loop, wandb's own lines.
_CONSOLE_SIGNS = re.compile(
    r"\r(?!\n)|\x1b\[|\d+it/s|it/s\]|s/it\]|Traceback \(most recent call last\)|\bwandb\b|\b\d{1,3}%|"
    r"\w+(?:Warning|Error)\b|(?i:\b(?:epoch|step|iter(?:ation)?|loss|batch|train(?:ing)?|eval(?:uation)?)\b)"
)


_KEY_VALUE = re.compile(r"^\s*-?\s*[\w.\-]+:(?:\s|$)")


def sniff_console(path: Path, head: bytes) -> float:
    """A last resort for console text no specific reader recognises (a lone output.log)."""
    if not head.strip() or b"\0" in head[:4096]:
        return 0.0
    text = head.decode("utf-8", "replace")
    if text.count("\ufffd") > 0.01 * len(text):
        return 0.0
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or lines[0].lstrip().startswith(("{", "[", "<", "---", "#", "diff ", "import ", "from ")):
        return 0.0  # JSON, XML, YAML, markdown, patches, code: documents, not console
    if any(ln.lstrip().startswith(("|---", "| ---", "|:--", "| :--")) for ln in lines):
        return 0.0  # a markdown table: a report, not console
    if sum(bool(_KEY_VALUE.match(ln)) for ln in lines) >= 0.6 * len(lines):
        return 0.0  # `key: value` lines: a config, not console
    return 0.2 if _CONSOLE_SIGNS.search(text) else 0.0


def sniff_events_jsonl(path: Path, head: bytes) -> float:
    doc = _first_json_line(head)
    if doc is None or "_timestamp" not in doc:
        return 0.0
    return 0.95 if any(k.startswith("system.") for k in doc) else 0.0


def sniff_history_jsonl(path: Path, head: bytes) -> float:
    doc = _first_json_line(head)
    if doc is None or "_step" not in doc or not ("_runtime" in doc or "_timestamp" in doc):
        return 0.0
    if any(k.startswith("system.") for k in doc) or "_wandb" in doc:
        return 0.0  # system stats, or a summary (the SDK's own `_wandb` key)
    # One object alone is a summary written on one line; history is one object a line.
    return 0.9 if len(head.strip().splitlines()) >= 2 else 0.0


# --------------------------------------------------------------------------------------------
# loaders of the files found alone


def _run_name(path: Path, ctx: LoadContext) -> str:
    # A lone file does not name its run: the user's [[sources]] run, or the file's own name.
    return ctx.options.get("run") or path.stem


@registry.format("wandb-summary", sniff=sniff_summary, doc="wandb-summary.json: a run's last values, _step, _runtime, _timestamp")
def load_summary(path: Path, ctx: LoadContext) -> Incident:
    doc, rep = read_json_doc(path, ctx, "wandb-summary")
    run = _run_name(path, ctx)
    start, end, _, _ = summary_facts(doc)
    rep.assume(f"run named {run!r} after the file (a summary does not name its run)")
    inc = from_frames(rep, events=summary_event(doc, run, rep.path))
    inc.runs[run] = RunInfo(run=run, summary=doc, started=start, ended=end, source=rep.path)
    return inc


@registry.format("wandb-metadata", sniff=sniff_metadata, doc="wandb-metadata.json: host, start time, program and args, GPUs of a run")
def load_metadata(path: Path, ctx: LoadContext) -> Incident:
    meta, rep = read_metadata(path, ctx)
    run = _run_name(path, ctx)
    host = ctx.host or meta.host
    events, gpus = metadata_frames(meta, run, rep.path, host)
    if meta.gpu_count and len(meta.gpus) != meta.gpu_count:
        rep.notes.append(f"gpu_count is {meta.gpu_count} but {len(meta.gpus)} GPUs are described")
    inc = from_frames(rep, events=events, gpus=gpus)
    inc.runs[run] = RunInfo(run=run, host=host, started=meta.started, command=meta.command, source=rep.path)
    return inc


@registry.format(WANDB_CONFIG_FORMAT, sniff=sniff_config, doc="wandb config.yaml: a run's config")
def load_config(path: Path, ctx: LoadContext) -> Incident:
    config, rep = read_config(path, ctx)
    run = _run_name(path, ctx)
    inc = from_frames(rep)
    inc.runs[run] = RunInfo(run=run, config=config, source=rep.path)
    return inc


@registry.format(PIP_REQUIREMENTS_FORMAT, sniff=sniff_requirements, doc="requirements.txt (pip freeze) of a run's environment")
def load_requirements(path: Path, ctx: LoadContext) -> Incident:
    return from_frames(read_requirements(path, ctx))


@registry.format("console-text", sniff=sniff_console, doc="console text no specific reader recognises (wandb's output.log alone, a job's stdout)")
def load_console(path: Path, ctx: LoadContext) -> Incident:
    rep, events = read_output_log(path, ctx, [], ctx.options.get("run"), ctx.host)
    rep.format = "console-text"
    rep.notes.append("console text no specific reader recognised: every non-blank line is a console event")
    return from_frames(rep, events=events)


@registry.format(WANDB_EVENTS_JSONL_FORMAT, sniff=sniff_events_jsonl, doc="wandb-events.jsonl: system stats of a run (SDKs up to 0.16)")
def load_events_jsonl(path: Path, ctx: LoadContext) -> Incident:
    run = _run_name(path, ctx)
    rep, metrics, gpus = read_events_jsonl(path, ctx, run, ctx.host, {})
    return from_frames(rep, metrics=metrics, gpus=gpus)


@registry.format(WANDB_HISTORY_JSONL_FORMAT, sniff=sniff_history_jsonl, doc="wandb-history.jsonl: history rows of a run (SDKs before 0.10)")
def load_history_jsonl(path: Path, ctx: LoadContext) -> Incident:
    run = _run_name(path, ctx)
    rep, metrics = read_history_jsonl(path, ctx, run)
    return from_frames(rep, metrics=metrics)
