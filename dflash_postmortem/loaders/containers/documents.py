"""A JSON or YAML document inside a paste (`docker inspect`, `kubectl get pod -o json|yaml`): the
document's lines are read as one, the lines around it (a prompt, the command, a markdown fence,
prose) are counted as skipped. YAML is read with `yaml.safe_load`, which builds plain data only.
"""

from __future__ import annotations

import json
import re

MAX_DOCUMENT_CHARS = 32 << 20  # a pod list of thousands fits; beyond this the text is not read
_YAML_START = re.compile(r"^(?:apiVersion|kind|items|metadata|status):(?:\s|$)")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_MAX_TRIES = 50  # closing lines tried from the end when the text after the document ends like one


def find_json(lines: list[str]) -> tuple[object, int, int] | None:
    """(document, first line index, last line index) of the JSON object or array in `lines`."""
    first = next((i for i, ln in enumerate(lines) if ln.lstrip()[:1] in ("{", "[")), None)
    if first is None:
        return None
    ends = [j for j in range(len(lines) - 1, first - 1, -1) if lines[j].rstrip()[-1:] in ("}", "]")][:_MAX_TRIES]
    for last in ends:
        text = "\n".join(lines[first:last + 1])
        if len(text) > MAX_DOCUMENT_CHARS:
            continue
        try:
            return json.loads(text), first, last
        except (ValueError, RecursionError):
            continue
    return None


def find_yaml(lines: list[str]) -> tuple[object, int, int] | None:
    """(document, first line index, last line index) of the YAML document that starts with a
    Kubernetes object's top-level key and runs to a fence, a blank line after it, or the end."""
    first = next((i for i, ln in enumerate(lines) if _YAML_START.match(ln)), None)
    if first is None:
        return None
    last = first
    for j in range(first + 1, len(lines)):
        if _FENCE.match(lines[j]) or (lines[j].strip() and not lines[j][:1].isspace() and ":" not in lines[j]
                                      and not lines[j].startswith("- ")):
            break
        last = j
    while last > first and not lines[last].strip():
        last -= 1
    text = "\n".join(lines[first:last + 1])
    if len(text) > MAX_DOCUMENT_CHARS:
        return None
    import yaml  # here, not at the top: start-up time (only a YAML paste needs it)

    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    return (doc, first, last) if isinstance(doc, dict) else None
