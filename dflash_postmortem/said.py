"""What an error line says, as a reader quotes it: a traceback by its exception (and, where NCCL's
message goes on to it, the last error NCCL names), any other line by its first, without the
logger's prefix (glog's `E1202 02:33:51.653000 917 api.py:986] `, a date and time, a `[run]` tag,
a syslog `host kernel:` or Python logging's default
`ERROR:torch.distributed.elastic.multiprocessing.api:`, C++'s `what():`) or the C++ source
locations inside it (`[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] `); and how
long a line says a log or a run had been silent."""

from __future__ import annotations

import re

from .shell_words import STATUS_SIGNALS

# (c10 writes June as `E626`: the month's digit alone)
_LINE_PREFIX = re.compile(# NCCL's own `host:pid:tid [gpu] file.cc:88 NCCL WARN `, a time in brackets before it or not
                          r"^(?:\[\d{4}-\d\d-\d\d[ T][\d:.,]+\] *)?[\w.-]+:\d+:\d+ \[\d+\] (?:[\w./-]+:\d+ )?NCCL (?:WARN|INFO) +"
                          r"|^\[?[IWEF]\d{3,4} [\d:.]+(?: +\d+)? [^\]]{1,200}\] *"
                          r"|^\d{4}-\d\d-\d\d[ T][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\s*(?:\[[^\]]*\]\s*|\S+ kernel: "
                          r"|(?:CRITICAL|ERROR|WARNING|INFO|DEBUG)\s+"  # Python logging's `%(asctime)s %(levelname)s`
                          # fairseq's and metaseq's `%(asctime)s | %(levelname)s | %(name)s | `
                          r"|\| (?:CRITICAL|ERROR|WARNING|INFO|DEBUG) \| [\w.]{1,120} \| )?"
                          r"|^(?:CRITICAL|ERROR|WARNING|INFO|DEBUG):[\w.]{1,120}:"
                          # Horovod's `[2022-07-20 04:51:42.894382: W horovod/common/stall_inspector.cc:105] `
                          r"|^\[\d{4}-\d\d-\d\d[ T][\d:.,]+: [IWEF] [\w./-]{1,200}:\d+\] *"
                          # Hugging Face's `[INFO|trainer.py:2915] 2024-05-26 14:56:22,776 >> `
                          r"|^\[(?:CRITICAL|ERROR|WARNING|INFO|DEBUG)\|[\w.]{1,120}:\d+\] \d{4}-\d\d-\d\d[ T][\d:.,]+ >> *"
                          r"|^\[[IWEF] [\w.]{1,120}:\d+\] *"  # c10 before 2.0: `[E ProcessGroupNCCL.cpp:464] `
                          r"|^what\(\): +"  # C++'s terminate: `what():  [PG 1 Rank 6] ...`
                          # syslog's `May  8 14:05:27 host kernel: `, `Jan 09 14:32:25 H systemd-oomd[70]: `; dmesg's `[2059991.491542] `
                          r"|^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w./-]+(?:\[\d+\])?: +|^\[ *\d+\.\d+\] +"
                          r"|^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] +"  # dmesg -T
                          # Python logging in brackets, as torch's elastic agent and DeepSpeed's launcher
                          # write it: `[2024-05-28 14:04:28,584] torch.distributed...api: [ERROR] `,
                          # `[2023-03-05 06:40:35,705] [ERROR] [launch.py:324:sigkill_handler] `
                          r"|^\[\d{4}-\d\d-\d\d[ T][\d:.,]+\] *(?:[\w.]{1,120}: )?(?:\[[A-Z]{3,8}\] *)?(?:\[[\w.]+:\d+:\w+\] *)?")
_SOURCE_AT = re.compile(r"\[(?:/[^\]\s]+|[\w.-]+)\.(?:cc|cpp|cu|h|hpp|c):\d+\] ?")
# A line cut inside its last parenthesis (a paste wrapped at the terminal's width: torchrun's
# `failed (exitcode: -6) local_rank: 6 (pid` goes on with `: 541332) of binary` on the next line):
# the open fragment is left out of what is quoted.
_CORE_DUMPED = re.compile(r"\s*\(core dumped\)\s*$", re.IGNORECASE)
_CUT_OPEN = re.compile(r"\s*\([^()]{0,12}$")
# An entry of torchelastic's ChildFailedError table (`[0]:`, then `key : value` fields: `time : ...`,
# `exitcode : -9 (pid: 14750)`, `traceback : Signal 9 (SIGKILL) received by PID 14750`), as the
# training-log loader reads it and as an error quotes it: by its traceback (torch 1.10: msg),
# unless that only points at the docs, else by its exit code.
FAILURE_ENTRY = re.compile(r"^\s*\[(?P<index>\d+)\]:\s*$")
FAILURE_FIELD = re.compile(r"^\s{0,4}(?P<key>time|host|rank|exitcode|error_file|traceback|msg)\s*:\s?(?P<value>.*)$")


# A command as Python prints its argument list (DeepSpeed's launcher: `['python', '-u', 'train.py',
# '--local_rank=7'] exits with return code = -9`), cut or whole.
_ARGV = re.compile(r"^\[((?:'[^']*'(?:, |(?=\])))+)\]|^\[((?:'[^']*', )*'[^']*)$")


def _argv(text: str) -> str:
    """A leading argument list as the command line it stands for (`python -u train.py ...`)."""
    m = _ARGV.match(text)
    if m is None:
        return text
    words = re.findall(r"'([^']*)'?", m.group(1) or m.group(2))
    return "`" + " ".join(words) + "`" + text[m.end():]


# The end of a sentence inside an error message: a full stop before a space and a capital.
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]])\.(?= [A-Z])")


_TRACEBACK_HEAD = "Traceback (most recent call last)"
# NCCL's message names what failed after its code's general meaning (`ncclInvalidUsage: This
# usually reflects invalid usage of NCCL library.`): `Last error:`, then the failure itself.
_LAST_ERROR = "Last error:"


def exception_at(lines: list[str]) -> int:
    """Which of a traceback's lines (blank ones left out) states its exception: the first after
    its header that is not indented, as the frames are (the exception's message may go on over
    lines after it); where none is, the last."""
    for i, line in enumerate(lines[1:], 1):
        text = _LINE_PREFIX.sub("", line)
        if text[:1] not in (" ", "\t") and _TRACEBACK_HEAD not in text:
            return i
    return len(lines) - 1


def exception_line(message, kind: str | None) -> str:
    """A traceback's exception line (`kind` "traceback", one whose header the file lacked too);
    a message of another kind, its last line."""
    lines = [ln for ln in str(message or "").strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    return lines[exception_at(lines) if kind == "traceback" else -1]


def signal_said(text: str) -> str:
    """A shell's report that is only its word for a signal (`Killed`, `Segmentation fault (core
    dumped)`, alone on a line) as the signal it means, in the shell's words; any other text as
    it is."""
    sig = STATUS_SIGNALS.get(_CORE_DUMPED.sub("", text or "").strip().lower())
    return f"killed by {sig} ({text.strip()})" if sig else text


def error_text(message, kind: str | None = None, limit: int = 600) -> str:
    """The words of an error event's message (`kind` "traceback": its exception, and NCCL's last
    error where its message goes on to one)."""
    lines = [ln for ln in str(message or "").strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[0]
    if kind == "traceback":
        at = exception_at(lines)
        line, rest = lines[at], [_LINE_PREFIX.sub("", ln).strip() for ln in lines[at + 1:]]
        if _LAST_ERROR in rest[:-1]:
            line += " … " + _LAST_ERROR + " " + rest[rest.index(_LAST_ERROR) + 1]
        elif line.rstrip().endswith(":") and rest:
            # an exception whose words go on below its line (`Error(s) in loading state_dict for
            # GPT:`, then a `size mismatch for ...` line per tensor): what failed is the first of them
            # (how many more is not said: a long traceback's event keeps its first lines; a first
            # that does not fit whole is not quoted cut: a cut needs its whole a hover away)
            first = rest[0] if len(line) + len(rest[0]) < limit else ""
            line = " ".join(w for w in (line.rstrip(), first, "(more lines follow)" if len(rest) > bool(first) else "") if w)
    if FAILURE_ENTRY.match(line):
        fields = {m["key"]: m["value"].strip() for ln in lines[1:] if (m := FAILURE_FIELD.match(ln.strip()))}
        told = [fields[k] for k in ("traceback", "msg") if fields.get(k) and not fields[k].startswith(("<N/A>", "To enable"))]
        line = told[0] if told else f"exitcode {fields['exitcode']}" if fields.get("exitcode") else line
    text = _CUT_OPEN.sub("", _argv(_SOURCE_AT.sub("", _LINE_PREFIX.sub("", line.strip()))))
    if len(text) <= limit:
        return text
    # its whole sentences that fit, where they are most of it (CUDA's out-of-memory message goes on
    # with advice and a link after what happened); else cut at a word, and say so: a sentence that
    # quotes it must not read as the whole error
    ends = [m.end() for m in _SENTENCE_END.finditer(text[: limit + 1])]
    if ends and ends[-1] >= limit // 2:
        return text[: ends[-1]].rstrip()
    cut = text[: limit - 1]
    return (cut[: cut.rfind(" ")] if " " in cut[limit // 2:] else cut).rstrip(" ,;:") + "…"


# a watcher's word that a log or a run had gone silent, and for how long: a stall watchdog's
# `train.log not written for 64s`, `no progress for 300 seconds`, `no output in the last 10 min`
_SILENT = re.compile(r"(?i)\b(?:not (?:been )?(?:written|updated|modified)|no (?:new )?(?:output|progress|log(?: output| lines?)?"
                     r"|steps?|updates?|heartbeats?))\s+(?:for|in)\s+(?:the\s+last\s+)?(?P<n>\d+(?:\.\d+)?)\s*"
                     r"(?P<unit>s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0}


def silence_said(text) -> float | None:
    """The seconds a line says a log or a run had been silent (`_SILENT`), else None."""
    m = _SILENT.search(str(text or ""))
    return float(m["n"]) * _UNIT_S[m["unit"][0].lower()] if m else None


# A traceback's frame, and the code line under it where the traceback prints one
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)[ \t]*(?:\n(?P<code>[ \t]+\S[^\n]*))?', re.M)
# What a frame waits on, as a reader names it from where a Ctrl-C found a process: (what, the
# frame's file or function or code that shows it), the part that waited first (a data loader waits
# on its queue, which waits on a lock: it is the loader that waited). A process stopped at a lock,
# a queue, its data loader, a collective or a sleep was waiting, not computing.
_WAITS = (
    ("in its data loader", re.compile(r"dataloader\.py$|\b_next_data\b|\b_get_data\b|\bnext\(\w*(?:data|load|batch|iter)\w*\)")),
    ("in a collective of its process group", re.compile(r"torch/distributed/|\b(?:barrier|all_reduce|all_gather|broadcast|reduce_scatter)\(")),
    ("on a child process", re.compile(r"(?:subprocess|popen_\w+)\.py$|\bwaitpid\(")),
    ("on a queue", re.compile(r"queues?\.py$|\bqueue\.get\(|\.get\(timeout")),
    ("on a lock", re.compile(r"(?:synchronize|file_baton|threading)\.py$|\b_?(?:sem)?lock\b|\.acquire\(")),
    ("on a socket or pipe", re.compile(r"(?:socket|selectors|connection|ssl)\.py$|\.recv(?:_into)?\(|\.accept\(|\bselect\(|\.poll\(")),
    ("in a sleep", re.compile(r"\bsleep\(")),
)


def _shown(path: str) -> str:
    """A frame's file as a reader reads it: from the package down (`torch/utils/data/dataloader.py`),
    not the interpreter's or the user's folders above it; a script given by a relative path as given."""
    for mark in ("site-packages/", "dist-packages/"):
        if mark in path:
            return path.rsplit(mark, 1)[1]
    lib = re.search(r"/lib/python[\d.]+/(.+)$", path)
    # (a script by its absolute path, `/tmp/inc/run/train.py`: by its name, as its folder is the user's)
    return lib.group(1) if lib else path.rsplit("/", 1)[-1] if path.startswith("/") else path


def waiting_in(traceback: str) -> str | None:
    """Where a traceback shows its thread waited when it was stopped (a KeyboardInterrupt's: where
    the Ctrl-C found it; a live dump's): `waiting in its data loader (`code`, file:line)`, `waiting
    on a lock (...)`, at the outermost frame of the first of _WAITS the frames show; None where they
    show no wait (it was computing: the frame tells a reader nothing), hold no frame or were cut
    before their end."""
    text = str(traceback or "")
    frames = list(_FRAME.finditer(text))
    if not frames or "[traceback cut off" in text:  # (a cut traceback's last frame is not its innermost)
        return None
    said = [f"{m['file']} {m['func']}( {(m['code'] or '').strip()}" for m in frames]
    for what, rx in _WAITS:
        hit = [m for m, text in zip(frames, said, strict=True) if rx.search(m["file"]) or rx.search(text)]
        if hit:  # (where its thread went into it: a user's `next(batches)`, not the loader's queue inside)
            m = hit[0]
            code = (m["code"] or "").split("  #", 1)[0].strip()  # (without a comment after the code)
            return f"waiting {what} (`{code or m['func']}`, {_shown(m['file'])}:{m['line']})"
    return None
