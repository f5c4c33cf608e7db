"""What a terminal line says about processes being started, signalled, killed or ending: the
shell's job and error reports, `nohup`'s notes, `timeout`'s, and the kernel's OOM killer and
NVIDIA Xid lines (pasted from dmesg or journalctl). One function, `read_line`, turns a line into
the facts it states; the transcript loader ties them to the command they answer.

The kinds (docs/process-evidence.md says what each means):

    kill_failed   bash: kill: (924) - No such process        kill: (-924) - Operation not permitted
                  kill: sending signal to 924 failed: ...    kill: kill 924 failed: no such process
                  pkill: killing pid 924 failed: ...         killall: python: no process found
    kill_sent     Killed iperf(15054) with signal 15 (killall -v)   ping killed (pid 1234) (pkill -e)
    killed        Killed / Terminated / Segmentation fault (core dumped) / Aborted ...
                  [1]+  Killed   python train.py            run.sh: line 7:  4242 Killed   python t.py
                  zsh: killed  python train.py               [1]  + 4242 killed  python train.py
    exit          [1]+  Exit 1   python train.py    [1]+  Done   python train.py    exit=137
                  make: *** [train] Error 137   Process finished with exit code 137
    job_started   [1] 4242
    job_stopped   [1]+  Stopped   python train.py
    nohup         nohup: ignoring input and appending output to 'nohup.out'
    nohup_failed  nohup: failed to run command 'python': No such file or directory
    timeout_kill  timeout: sending signal KILL to command 'python'
    oom_kill      Out of memory: Killed process 1234 (python) total-vm:...kB, anon-rss:...kB ...
                  Killed process 2382, UID 27, (mysqld) total-vm:...kB (RHEL 6), ... (palo_be), UID 0, total-vm: (RHEL 7)
    oom_chosen    Out of memory: Kill process 1234 (python) score 1031 or sacrifice child
    oom_invoked   python invoked oom-killer: gfp_mask=0x..., order=0, oom_score_adj=0
    oom_reaped    oom_reaper: reaped process 1234 (python), now anon-rss:0kB, ...
    oom_memcg     Task in /kubepods/pod1/abc killed as a result of limit of /kubepods/pod1 (cgroup v1)
    xid           NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
    gpu_lost      NVRM: The NVIDIA GPU 0000:b3:00.0 ... has fallen off the bus (no Xid line)

`read_gpu_identity` reads what the driver prints before a GPU's first Xid (`NVRM: GPU at
PCI:0000:3b:00: GPU-<uuid>`, `NVRM: GPU Board Serial Number: ...`): no event of its own, the
transcript loader gives it to the Xid events of that bus.
"""

from __future__ import annotations

import re

from ...shell_words import SCRIPT_LINE, SIGNALS, STATUS_SIGNALS, exit_meaning, signal_name
from ..clock_text import SYSLOG_MONTH, month_number, parse_wall_clock

_STATUS = "|".join(sorted((re.escape(s) for s in STATUS_SIGNALS if s != "killed by signal"), key=len, reverse=True))
_CORE = r"(?:\s*\(core dumped\))?"

_KILL_FAILED = (
    # bash builtin (also -bash:, /bin/bash: line 3:, ./stop.sh: line 3:); a minus is a group
    re.compile(r"(?:^|:\s)kill: \((?P<pid>-?\d+)\) - (?P<reason>No such process|Operation not permitted)\s*$", re.I),
    # util-linux kill
    re.compile(r"(?:^|:\s)kill: sending signal to (?P<pid>-?\d+) failed: (?P<reason>No such process|Operation not permitted)", re.I),
    # procps kill
    re.compile(r"(?:^|:\s)kill: \((?P<pid>-?\d+)\): (?P<reason>No such process|Operation not permitted)", re.I),
    # zsh
    re.compile(r"(?:^|:\s)kill: kill (?P<pid>-?\d+) failed: (?P<reason>no such process|operation not permitted)", re.I),
    # busybox / dash with a pid
    re.compile(r"(?:^|:\s)kill: can't kill pid (?P<pid>-?\d+): (?P<reason>No such process|Operation not permitted)", re.I),
    re.compile(r"(?:^|:\s)kill: (?P<pid>-?\d+): (?P<reason>No such process|Operation not permitted)", re.I),
    # pkill / pgrep
    re.compile(r"^pkill: killing pid (?P<pid>\d+) failed: (?P<reason>No such process|Operation not permitted)", re.I),
    # bash job specs
    re.compile(r"(?:^|:\s)kill: (?P<job>%\d+): (?P<reason>no such job)", re.I),
    # dash: `sh: 1: kill: No such process` names no PID: the command says which
    re.compile(r"(?:^|:\s)kill: (?P<reason>No such process|Operation not permitted)\s*$", re.I),
    # killall (psmisc)
    re.compile(r"^(?:killall: )?(?P<pattern>[^\s:]+): (?P<reason>no process found)\s*$", re.I),
)
_JOB_STARTED = re.compile(r"^\[(?P<job>\d+)\] (?P<pid>\d+)(?: \d+)*\s*$")
# bash: [1]+  Killed   python train.py    zsh: [1]  + 4242 killed     python train.py
_JOB = re.compile(
    rf"^\[(?P<job>\d+)\]\s*[+-]?\s+(?:(?P<pid>\d+)\s+)?(?P<status>{_STATUS}|Done|Exit \d+|exit \d+|done|Stopped|stopped|suspended|Running|running)"
    rf"(?P<core>{_CORE})(?:\s+(?P<cmd>.*?))?\s*$", re.I)
# non-interactive bash: `run.sh: line 7:  4242 Killed    python train.py`
_SCRIPT_STATUS = re.compile(rf"^(?P<script>\S+): {SCRIPT_LINE}\s+(?P<pid>\d+) (?P<status>{_STATUS})(?P<core>{_CORE})(?:\s+(?P<cmd>.*?))?\s*$", re.I)
# zsh: `zsh: killed     python train.py`
_ZSH_STATUS = re.compile(rf"^zsh: (?P<status>{_STATUS})(?P<core>{_CORE})(?:\s+(?P<cmd>.*?))?\s*$")
# zsh's word on each process of a job it reports without the job's number (a pipeline's, or
# pasted without it): `14957 segmentation fault (core dumped)  python train.py`, lower case
_PID_STATUS = re.compile(rf"^(?P<pid>\d+) (?P<status>{_STATUS})(?P<core>{_CORE})\s{{2,}}(?P<cmd>\S.*?)\s*$")
_BARE_STATUS = re.compile(rf"^(?P<status>{_STATUS})(?P<core>{_CORE})\s*$", re.I)
_EXIT = re.compile(
    r"(?i)(?:\bexit(?:ed)?(?: with)?(?: code|=|:| status| code:)\s*|process finished with exit code |"
    r"returned non-zero exit status |make(?:\[\d+\])?: \*\*\* \[[^\]]*\] error )(?P<code>-?\d{1,6})\b")
_NOHUP = re.compile(r"^nohup: (?P<what>ignoring input(?: and (?:appending output to|redirecting stderr to stdout))?|appending output to|"
                    r"redirecting stderr to stdout)(?: ['‘\"`](?P<file>[^'’\"`]+)['’\"`])?\s*$")
_NOHUP_FAILED = re.compile(r"^nohup: (?:failed to run command|cannot run command|can't detach from console)(?: ['‘\"`](?P<cmd>[^'’\"`]+)['’\"`])?(?::\s*(?P<why>.*))?$")
# killall -v / pkill -e: the PIDs a name matched and were signalled
_KILLALL_VERBOSE = re.compile(r"^Killed (?P<name>.+?)\((?P<pid>\d{1,10})\) with signal (?P<sig>\d{1,2})$")
_PKILL_ECHO = re.compile(r"^(?P<name>\S+) killed \(pid (?P<pid>\d{1,10})\)$")
# The terminal's echo of Ctrl-C (`^C`, once a press) alone on a line: the operator interrupted the
# foreground job (the terminal sent SIGINT to its process group)
_CTRL_C = re.compile(r"^(?:\^C)+$")
_TIMEOUT = re.compile(r"^timeout: sending signal (?P<sig>\w+) to command ['‘\"`](?P<cmd>[^'’\"`]+)['’\"`]")

# -- kernel ---------------------------------------------------------------------------------
_KB = r"(?P<{0}>[\d,]+)kB"
_OOM_KILLED = re.compile(
    r"(?P<cgroup>Memory cgroup out of memory: )?(?:Out of memory(?: \([^)]*\))?: )?[Kk]illed process (?P<pid>\d{1,10})"
    r"(?:, UID (?P<uid_old>\d+),)? \((?P<name>.*?)\)(?=[ ,.]|$)(?:, UID (?P<uid_el7>\d+),)?"
    r"(?: total-vm:" + _KB.format("vm") + r",? anon-rss:" + _KB.format("anon") + r",? file-rss:" + _KB.format("file")
    + r"(?:,? shmem-rss:" + _KB.format("shmem") + r")?)?(?:,? UID:(?P<uid>\d+))?(?: pgtables:" + _KB.format("pgt")
    + r")?(?: oom_score_adj:(?P<adj>-?\d+))?")
_OOM_CHOSEN = re.compile(r"(?P<cgroup>Memory cgroup out of memory: )?(?:Out of memory(?: \([^)]*\))?: )?[Kk]ill process (?P<pid>\d{1,10}) \((?P<name>.*?)\) score (?P<score>-?\d{1,10}) or sacrifice child")
_OOM_CONSTRAINT = re.compile(r"oom-kill:constraint=(?P<constraint>[A-Z_]+),.*?(?:task_memcg=(?P<memcg>[^,]*),)?task=(?P<name>[^,]*),pid=(?P<pid>\d{1,10}),uid=(?P<uid>\d{1,10})")
_OOM_INVOKED = re.compile(r"(?P<name>\S.*?) invoked oom-killer: gfp_mask=(?P<gfp>\S+?),? .*?order=(?P<order>-?\d{1,3}), oom_score_adj=(?P<adj>-?\d{1,5})")
# cgroup v1 (kernels before 4.19): the task's memory cgroup and the one whose limit it hit.
_OOM_MEMCG = re.compile(r"Task in (?P<memcg>\S+) killed as a result of limit of (?P<limit>\S+)")
_OOM_REAPED = re.compile(r"oom_reaper: reaped process (?P<pid>\d{1,10}) \((?P<name>.*?)\), now anon-rss:" + _KB.format("anon"))
_XID = re.compile(r"NVRM: Xid \((?P<bus>[^)]*)\): (?P<xid>\d{1,5})(?:, pid=(?P<pid>'?<?\w+>?'?))?(?:, name=(?P<name>[^,]*))?(?:, (?P<text>.*))?")
# `The NVIDIA GPU 0000:b3:00.0 ... has fallen off the bus` (continued on indented lines), `GPU 0000:3b:00.0:
# GPU has fallen off the bus.` and the older drivers' `GPU at 0000:01:00.0 has fallen off the bus.`
_GPU_LOST = re.compile(r"NVRM: (?:The NVIDIA GPU (?P<bus>[0-9a-fA-F:.]+)|GPU (?:at )?(?P<bus2>[0-9a-fA-F:.]+?):? (?:GPU )?has fallen off the bus"
                       r"|fallen off the bus)")
# What the driver writes where it knows no process: `pid='<unknown>', name=<unknown>`.
_UNKNOWN = "<unknown>"
# A PCI bus as the driver names it (`PCI:0000:3b:00`, `0000:3b:00.0`); a paste that hides it
# (`Xid (PCI:...)`) names none.
_BUS = r"(?:PCI:)?[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
_XID_BUS = re.compile(_BUS)
_KERNEL_KEYS = ("illed process", "ill process", "oom-kill:", "invoked oom-killer", "oom_reaper:", "NVRM: Xid",
                "fallen off the bus", "killed as a result of limit of", "blocked for more than")
# the hung-task detector's word on a process in uninterruptible sleep (state D): `INFO: task
# cache_mgr_event:620917 blocked for more than 120 seconds.`
_HUNG_TASK = re.compile(r"\btask (?P<name>\S.{0,40}?):(?P<pid>\d{1,10}) blocked for more than (?P<secs>\d{1,7}) seconds")
# A line a terminal wrapped and the copy kept as one: the wrap shows as a long run of spaces.
_WRAP = re.compile(r" {20,}")
# Python's report of a DataLoader worker that died: the worker's PID and the signal's name.
_WORKER_KILLED = re.compile(r"DataLoader worker \(pid(?:\(s\))? (?P<pid>\d+)\) is killed by signal: (?P<status>[A-Za-z /]+?)\.?\s*$")
# Prefixes a kernel line is pasted with: dmesg `[  518.050606]`, `dmesg -T` `[Sun Mar 30 08:24:00 2025]`,
# `--time-format iso`, syslog/journalctl `May 15 23:09:30 host kernel:` (`-o short-iso`: `2024-05-01T10:00:00+0000
# host kernel:`), `dmesg -x` `kern  :err   :`, RFC 5424 `<3>1 2024-05-01T10:00:00.123456+00:00 host kernel - - -`,
# `talosctl dmesg` `192.168.11.119: kern: warning: [2026-04-22T21:27:51.291660856Z]:`, a markdown quote `> `, a month in
# the locale's words (`kwi 15 07:56:59 host kernel:`) and a bare time of day (`19:15:34  NVRM: ...`).
_ISO = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_KERNEL_PREFIX = re.compile(
    r"(?:\s*(?:>(?=\s)|<\d+>(?:\d{1,2} )?|\[\s*\d+\.\d+\]|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}\]"
    rf"|{_ISO}|\[{_ISO}\]:?|{SYSLOG_MONTH} {{1,2}}\d{{1,2}} \d{{2}}:\d{{2}}:\d{{2}}(?:\.\d+)? \S+ kernel:"
    r"|[\w.-]+ kernel(?::| \S+ \S+ (?:-|\[[^\]]*\]))|[\w.:-]+:(?=\s*kern\s*:)|kern\s*:\s*\w+\s*:|kernel:"
    r"|\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?=\s)))*\s*")
_UPTIME = re.compile(r"\[\s*(?P<s>\d+\.\d+)\]")
# A syslog/journal stamp: before `host kernel:`, or (journal lines of other programs, cut there
# by their reader) before the host alone.
_SYSLOG = re.compile(rf"^(?:>\s*)?(?:<\d+>)?(?P<mon>{SYSLOG_MONTH}) {{1,2}}(?P<day>\d{{1,2}}) (?P<time>\d{{2}}:\d{{2}}:\d{{2}})(?:\.\d+)?"
                     r"(?: \S+(?: kernel:)?)?(?=\s|$)")
_TIME_OF_DAY = re.compile(r"^(?:>\s*)?(?P<time>\d{1,2}:\d{2}:\d{2})(?:[.,]\d+)?(?:\s|$)")
# What the driver prints before a GPU's first Xid: its bus and UUID, then its board serial (may be empty).
_GPU_AT = re.compile(rf"NVRM: GPU at (?P<bus>{_BUS}): "
                     r"(?P<uuid>GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})\s*$")
_GPU_SERIAL = re.compile(r"NVRM: GPU Board Serial Number:[ \t]*(?P<serial>\S*)\s*$")


def kernel_stamp(prefix: str) -> dict:
    """The time a kernel (or journal) line's prefix states: `wall` (a WallClock with a date), `syslog`
    (month as written, in any locale `month_number` reads, day, time: no year), `time_of_day`
    (`HH:MM:SS`, no date), `uptime_s` (seconds since boot); empty when none."""
    out: dict = {}
    m = _UPTIME.search(prefix)
    if m:
        out["uptime_s"] = float(m["s"])
    m = _SYSLOG.match(prefix.strip())
    if m and month_number(m["mon"]) is not None:
        out["syslog"] = (m["mon"], int(m["day"]), m["time"])
        return out
    wall = parse_wall_clock(prefix.replace("[", " ").replace("]", " "))
    if wall is not None:
        out["wall"] = wall
    elif "uptime_s" not in out and (m := _TIME_OF_DAY.match(prefix.strip())):
        out["time_of_day"] = m["time"]
    return out


def read_gpu_identity(line: str) -> dict | None:
    """`NVRM: GPU at PCI:0000:3b:00: GPU-<uuid>` -> {bus, uuid}; `NVRM: GPU Board Serial Number: N`
    -> {serial} (None when the driver printed none); any other line -> None."""
    if "NVRM: GPU " not in line:
        return None
    m = _GPU_AT.search(line)
    if m:
        return {"bus": m["bus"], "uuid": m["uuid"]}
    m = _GPU_SERIAL.search(line)
    if m:
        return {"serial": m["serial"] or None}
    return None


def bus_key(bus: str | None) -> str | None:
    """A PCI bus as one key whatever form names it (`PCI:0000:3b:00`, `0000:3b:00.0`)."""
    if not bus:
        return None
    b = bus.lower().removeprefix("pci:")
    return re.sub(r"\.0$", "", b)


def _kb(v: str | None) -> float:
    return float(v.replace(",", "")) if v else float("nan")


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def kernel_prefix(line: str) -> str:
    """The stamps and tags a kernel line starts with (`[  518.050606]`, `May 15 23:09:30 host
    kernel:`, `kern  :err   :`, ...), a markdown quote left out; '' when it has none."""
    return _KERNEL_PREFIX.match(line).group().strip().removeprefix(">").strip()


def says_kernel(line: str) -> bool:
    """Whether a line holds a word only kernel lines say: no other line gives a kernel fact, so a
    reader that wants those facts alone asks this first (a substring test, not every pattern)."""
    return any(k in line for k in _KERNEL_KEYS)


def read_kernel(line: str) -> dict | None:
    """One kernel line (OOM killer, Xid, a GPU off the bus) -> its fact, with `prefix` (the
    stamps before the kernel message: its time, if any) kept for the caller."""
    if not says_kernel(line):
        return None
    line = _WRAP.sub("", line)
    cut = _KERNEL_PREFIX.match(line)
    prefix, body = line[: cut.end()], line[cut.end():]
    m = _OOM_INVOKED.match(body)
    if m:
        return dict(kind="oom_invoked", process_name=m["name"], oom_score_adj=_int(m["adj"]), order=_int(m["order"]),
                    prefix=prefix)
    for rx, kind in ((_OOM_KILLED, "oom_kill"), (_OOM_CHOSEN, "oom_chosen"), (_OOM_REAPED, "oom_reaped")):
        m = rx.search(body)
        if m:
            d = m.groupdict()
            out = dict(kind=kind, pid=int(d["pid"]), process_name=d["name"], prefix=prefix)
            if kind == "oom_kill":
                out.update(total_vm_kib=_kb(d["vm"]), anon_rss_kib=_kb(d["anon"]), file_rss_kib=_kb(d["file"]),
                           shmem_rss_kib=_kb(d["shmem"]), uid=_int(d["uid"] or d["uid_old"] or d["uid_el7"]), oom_score_adj=_int(d["adj"]),
                           cgroup=bool(d["cgroup"]))
            elif kind == "oom_chosen":
                out.update(score=_int(d["score"]), cgroup=bool(d["cgroup"]))
            return out
    m = _OOM_MEMCG.search(body)
    if m:
        return dict(kind="oom_memcg", memcg=m["memcg"], limit_memcg=m["limit"], prefix=prefix)
    m = _OOM_CONSTRAINT.search(body)
    if m:
        return dict(kind="oom_kill", pid=int(m["pid"]), process_name=m["name"], uid=int(m["uid"]),
                    constraint=m["constraint"], memcg=m["memcg"], prefix=prefix, context=True)
    m = _HUNG_TASK.search(body)
    if m:
        return dict(kind="hung_task", pid=int(m["pid"]), process_name=m["name"], prefix=prefix)
    m = _GPU_LOST.search(body)
    if m and "Xid" not in body:
        return dict(kind="gpu_lost", bus=m["bus"] or m["bus2"], prefix=prefix)
    m = _XID.search(body)
    return _xid_fact(m, prefix) if m else None


def _xid_fact(m: re.Match, prefix: str) -> dict:
    """An `NVRM: Xid` line's fact: what the driver did not know (`<unknown>`) or the paste hid is None."""
    name = m["name"] if m["name"] != _UNKNOWN else None
    return dict(kind="xid", xid=int(m["xid"]), pid=_int((m["pid"] or "").strip("'<>")), process_name=name or None,
                bus=m["bus"] if _XID_BUS.fullmatch(m["bus"]) else None, detail=(m["text"] or "").strip() or None,
                prefix=prefix)


def _status_fact(status: str, core: str | None, cmd: str | None, pid, job) -> dict:
    s = status.lower()
    if s in ("done",):
        return dict(kind="exit", exit_code=0, meaning="success", pid=_int(pid), job=_int(job), job_command=cmd or None)
    if s.startswith("exit "):
        code = int(s.split()[1])
        sig, meaning = exit_meaning(code)
        return dict(kind="exit", exit_code=code, signal=sig, meaning=meaning, pid=_int(pid), job=_int(job), job_command=cmd or None)
    if s in ("stopped", "suspended"):
        return dict(kind="job_stopped", pid=_int(pid), job=_int(job), job_command=cmd or None)
    if s in ("running",):
        return dict(kind="job_running", pid=_int(pid), job=_int(job), job_command=cmd or None)
    return dict(kind="killed", signal=STATUS_SIGNALS.get(s), core_dumped=bool(core and core.strip()), pid=_int(pid),
                job=_int(job), job_command=cmd or None)


def is_job_report(line: str) -> bool:
    """Whether a line is an interactive shell's report of one of its jobs (`[1]+  Killed  python
    train.py`): printed at the prompt, whatever command's output it follows (a `tail -f` stopped
    with Ctrl-C ends on the reports of the jobs that ended meanwhile)."""
    return bool(_JOB.match(line.strip()))


def read_line(line: str) -> dict | None:
    """The process-control fact one (screen-cleaned) output line states, or None.

    Returns a dict with `kind` and what the line says (pid, signal, exit_code, target_pid, ...);
    kernel facts carry `prefix`, the text their time is read from (see `kernel_stamp`).
    """
    s = line.strip()
    if not s or len(s) > 2000:
        return None
    m = _JOB_STARTED.match(s)
    if m:
        return dict(kind="job_started", job=int(m["job"]), pid=int(m["pid"]))
    m = _JOB.match(s)
    if m:
        return _status_fact(m["status"], m["core"], m["cmd"], m["pid"], m["job"])
    m = _SCRIPT_STATUS.match(s)
    if m:
        return _status_fact(m["status"], m["core"], m["cmd"], m["pid"], None)
    m = _ZSH_STATUS.match(s)
    if m:
        return _status_fact(m["status"], m["core"], m["cmd"], None, None)
    m = _PID_STATUS.match(s)
    if m:
        return _status_fact(m["status"], m["core"], m["cmd"], m["pid"], None)
    m = _BARE_STATUS.match(s)
    if m:
        return _status_fact(m["status"], m["core"], None, None, None)
    if "kill" in s or "no process found" in s:
        for rx in _KILL_FAILED:
            m = rx.search(s)
            if m:
                d = m.groupdict()
                raw = d.get("pid")
                return dict(kind="kill_failed", reason=d["reason"].lower(), target_pid=abs(int(raw)) if raw else None,
                            target_is_group=raw.startswith("-") if raw else None, pid=abs(int(raw)) if raw else None,
                            job=int(d["job"][1:]) if d.get("job") else None, target_pattern=d.get("pattern"))
    if s.startswith("nohup:"):
        m = _NOHUP.match(s)
        if m:
            return dict(kind="nohup", output_file=m["file"] or ("nohup.out" if "appending output" in m["what"] and not m["file"] else None))
        m = _NOHUP_FAILED.match(s)
        if m:
            return dict(kind="nohup_failed", reason=(m["why"] or "").strip() or None, job_command=m["cmd"])
    m = _KILLALL_VERBOSE.match(s) or _PKILL_ECHO.match(s)
    if m:
        sig = signal_name(m["sig"]) if m.groupdict().get("sig") else None
        return dict(kind="kill_sent", pid=int(m["pid"]), target_pid=int(m["pid"]), target_is_group=False,
                    process_name=m["name"], **({"signal": sig} if sig else {}))
    if _CTRL_C.match(s):
        return dict(kind="interrupt_key", signal="SIGINT", presses=len(s) // 2)
    m = _TIMEOUT.match(s)
    if m:
        return dict(kind="timeout_kill", signal=signal_name(m["sig"]), job_command=m["cmd"])
    fact = read_kernel(s)
    if fact is not None:
        return fact
    m = _WORKER_KILLED.search(s)
    if m:
        fact = _status_fact(m["status"].strip(), None, None, m["pid"], None)
        if fact["kind"] == "killed":
            fact["process_name"] = "DataLoader worker"  # (the process it names: no command a shell ran)
            return fact
    m = _EXIT.search(s)
    if m:
        code = int(m["code"])
        sig, meaning = exit_meaning(code)
        return dict(kind="exit", exit_code=code, signal=sig, meaning=meaning)
    return None


__all__ = ["SIGNALS", "STATUS_SIGNALS", "bus_key", "kernel_prefix", "kernel_stamp", "read_gpu_identity", "read_kernel",
           "read_line"]
