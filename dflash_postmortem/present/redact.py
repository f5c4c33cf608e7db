"""Secrets that must not leave the machine in a shared report.

Logs, command lines and configs often carry tokens. Reports redact them by default; the raw
evidence on disk is never modified.
"""

from __future__ import annotations

import copy
import dataclasses
import re

import pandas as pd

from ..incident import Incident
from ..model import kept

MASK = "[REDACTED]"

# Each pattern keeps its first group (the key name) and masks the secret that follows.
_PATTERNS = [
    # KEY=value or KEY: value for names that are secrets by convention
    re.compile(r"(?i)\b((?:WANDB_API_KEY|HF_TOKEN|HUGGING_FACE_HUB_TOKEN|HUGGINGFACE_TOKEN|OPENAI_API_KEY|"
               r"ANTHROPIC_API_KEY|AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|AWS_ACCESS_KEY_ID|GITHUB_TOKEN|GH_TOKEN|"
               r"[A-Z0-9_]*(?:API_KEY|SECRET|TOKEN|PASSWORD|PASSWD))\s*[=:]\s*[\"']?)([^\s\"'&;,]+)"),
    # Authorization headers
    re.compile(r"(?i)(Authorization\s*:\s*(?:Bearer|Basic|Token)\s+)([A-Za-z0-9._~+/=-]+)"),
    re.compile(r"(?i)(\bBearer\s+)([A-Za-z0-9._~+/=-]{8,})"),
    # --password X, --token X, --api-key X (and = forms)
    re.compile(r"(?i)(--(?:password|passwd|token|api[-_]key|secret|hf[-_]token|wandb[-_]key)(?:=|\s+))(\S+)"),
    # credentials in URLs: scheme://user:password@host
    re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)([^@\s/]+)(@)"),
]
# Tokens recognisable by their shape alone, wherever they appear.
_SHAPES = [
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),  # Hugging Face
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),  # AWS access key id
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),  # GitHub
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"),  # OpenAI-style
    re.compile(r"\b[0-9a-f]{40}\b(?=.*(?i:wandb|api|key))"),  # wandb keys are 40 hex chars
]


# Something every pattern above needs: text without any of it is returned as it is, untouched by
# the ten patterns (most log lines; a million console lines would otherwise take minutes).
_MAYBE = re.compile(r"(?i)key|secret|token|passw|authori|bearer|--|://|hf_|AKIA|ASIA|gh[pousr]_|sk-|[0-9a-f]{40}")


def redact(text: str) -> str:
    """Mask secrets in `text`; everything else is left exactly as it was."""
    if not text or not _MAYBE.search(text):
        return text
    for pat in _PATTERNS:
        if pat.groups == 3:
            text = pat.sub(lambda m: m.group(1) + MASK + m.group(3), text)
        else:
            text = pat.sub(lambda m: m.group(1) + MASK, text)
    for pat in _SHAPES:
        text = pat.sub(MASK, text)
    return text


# --- whole incidents, before anything is shown -------------------------------------------------
# Masking happens on the loaded text, before any table, figure or page escapes it (HTML, JSON
# for plotly's hovers), where the patterns above would no longer match.

def redact_value(value):
    """`value` with every string in it masked: strings, and lists, tuples and dicts of them."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _under(k, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v) for v in value)
    return value


def _under(key, value):
    """A dict's value masked as its key names it: `{"--password": "hunter2"}` (a launch's flags,
    a config) holds a secret by its key alone, as `--password hunter2` does on a command line."""
    if isinstance(key, str) and isinstance(value, str):
        masked = redact(f"{key}={value}")
        if masked.startswith(f"{key}="):
            return masked[len(key) + 1:]
    return redact_value(value)


def redact_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` with every text cell masked, dtypes kept (each distinct string is masked
    once: a frame of a million console lines has far fewer distinct ones)."""
    out = df.copy(deep=False)  # copy-on-write: only the columns assigned below are new
    for col in out.columns:
        s = out[col]
        if isinstance(s.dtype, pd.StringDtype):
            changed = {v: m for v in s.dropna().unique() if (m := redact(v)) != v}
            if changed:
                out[col] = s.replace(changed)
        elif s.dtype == object:
            masked = [redact_value(v) for v in s]
            out[col] = pd.Series(masked, index=s.index, dtype=object)
    return out


def redact_incident(inc: Incident) -> Incident:
    """A copy of the incident safe to show: frames, the title and what the runs say about
    themselves masked. The files on disk are never touched."""
    cfg = copy.copy(inc.config)
    if cfg.title:
        cfg.title = redact(cfg.title)
    runs = {name: dataclasses.replace(info, command=redact_value(info.command), config=redact_value(info.config),
                                      summary=redact_value(info.summary))
            for name, info in inc.runs.items()}
    frames = {name: redact_frame(df) for name, df in inc.frames().items()}
    shown = dataclasses.replace(inc, **frames, runs=runs, config=cfg)
    kept.carry(inc, shown, redact_frame)
    return shown
