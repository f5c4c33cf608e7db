"""Secrets that must not leave the machine in a shared report.

Logs, command lines and configs often carry tokens. Reports redact them by default; the raw
evidence on disk is never modified.
"""

from __future__ import annotations

import re

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


def redact(text: str) -> str:
    """Mask secrets in `text`; everything else is left exactly as it was."""
    if not text:
        return text
    for pat in _PATTERNS:
        if pat.groups == 3:
            text = pat.sub(lambda m: m.group(1) + MASK + m.group(3), text)
        else:
            text = pat.sub(lambda m: m.group(1) + MASK, text)
    for pat in _SHAPES:
        text = pat.sub(MASK, text)
    return text
