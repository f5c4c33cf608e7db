"""What systemd says about a unit's main process, in `journalctl -u X` and `systemctl status X`
output: each line's fact, with the unit as the job and the restart counter as the attempt.

    Jan 02 03:04:05 host systemd[1]: Started train.service - Train job.          attempt_start
    ... systemd[1]: train.service: Main process exited, code=exited, status=1/FAILURE   exit (exit_code 1)
    ... systemd[1]: train.service: Main process exited, code=killed, status=9/KILL      killed (SIGKILL)
    ... systemd[1]: train.service: A process of this unit has been killed by the OOM killer.   oom_kill
    ... systemd-oomd[512]: Killed /system.slice/train.service due to memory pressure for ...   oom_kill
    ... systemd[1]: train.service: Failed with result 'oom-kill'.                 attempt_end (reason oom-kill)
    ... systemd[1]: train.service: Scheduled restart job, restart counter is at 3.   restart_scheduled
    ... systemd[1]: train.service: Killing process 1234 (python3) with signal SIGKILL.   kill_sent
    ... systemd[1]: train.service: Sent signal SIGKILL to main process 1234 (python3) on client request.   kill_sent
    ... systemd[1]: train.service: State 'stop-sigterm' timed out. Killing.        timeout
    ... systemd[1]: Stopped Train job.  /  train.service: Deactivated successfully.   attempt_end (stopped, success)
    ● train.service - Train job                                                   (the unit of the lines below)
         Active: failed (Result: oom-kill) since Tue 2024-01-02 03:04:05 UTC; 5min ago   attempt_end
         Active: active (running) since ...                                       attempt_start (Main PID's pid)
       Main PID: 1234 (code=killed, signal=KILL)                                  killed (pid 1234)

Older systemd wrote `main process exited` in lower case, `Unit train.service entered failed
state.`, `train.service failed.` and `holdoff time over, scheduling restart.`; those are read too.
A start is attempt N when `restart counter is at N` came since the unit's last start, else 0 (a
start by hand resets the counter); lines before the file's first start of a unit take the
counter that follows them less one. `Started Train job.` names only the unit's description: it
belongs to the unit whose description that is, or to the only unit the text names. Lines about
units that no process fact or status header names (the many other services of a whole journal)
are not read.

Each fact carries `prefix`: the journal stamp its time is read from (`kernel_stamp` reads it),
or, for `Active: ... since <time>`, that time.
"""

from __future__ import annotations

import re

from ...shell_words import exit_meaning, signal_name
from ..clock_text import SYSLOG_MONTH, parse_wall_clock

BY = "systemd"
_UNIT = r"[\w@:.\\-]+\.(?:service|scope|socket|timer|mount|slice|target|path|swap)"
_ISO = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
# The journal's prefix before `systemd[1]: ` (short, short-precise, short-iso, short-monotonic; none in `-o cat`).
_SYSTEMD_LINE = re.compile(
    rf"^(?P<prefix>(?:(?:{SYSLOG_MONTH}) {{1,2}}\d{{1,2}} \d{{2}}:\d{{2}}:\d{{2}}(?:\.\d+)?|{_ISO}|\[\s*\d+\.\d+\])"
    r"(?: \S+)? )?(?P<ident>systemd(?:-oomd)?)(?:\[\d+\])?: (?P<msg>.*?)\s*$")  # the host may be cut out
# systemd-oomd kills a whole cgroup under memory pressure: `Killed /system.slice/train.service due to
# memory pressure for ...` (v247+), `... due to memory used (15.2G) / total (15.5G) and swap used ...`.
_OOMD_KILLED = re.compile(r"^Killed (?P<cgroup>/\S+?)(?: due to (?P<why>.*))?$")
_UNIT_AT_END = re.compile(rf"(?:^|/)(?P<unit>{_UNIT})$")
_OOMD_KILLING = re.compile(r"^oomd attempting to kill (?P<pid>\d+) with (?P<sig>\w+)")  # v249-v250
_UNIT_MSG = re.compile(rf"^(?:Unit )?(?P<unit>{_UNIT})(?::| (?=entered|failed|holdoff))\s*(?P<what>.*)$")
_MAIN_EXITED = re.compile(r"^[Mm]ain process exited, code=(?P<how>exited|killed|dumped), status=(?P<status>-?\d+)(?:/(?P<name>\w+))?")
_FAILED_RESULT = re.compile(r"^Failed with result '(?P<result>[\w-]+)'")
_RESTART_AT = re.compile(r"^Scheduled restart job, restart counter is at (?P<n>\d+)")
_KILLING = re.compile(r"^(?:Killing process|Sent signal (?P<sent>SIG\w+) to main process) (?P<pid>\d+) \((?P<name>[^)]*)\)"
                      r"(?: with signal (?P<sig>SIG\w+))?")
_TIMED_OUT = re.compile(r"^State '(?P<state>[\w-]+)' timed out\. (?P<action>\w+)")
_LIFECYCLE = re.compile(rf"^(?P<verb>Started|Starting|Stopped|Stopping|Failed to start) (?:(?P<unit>{_UNIT})(?: - (?P<desc>.*?))?|(?P<text>.*?))(?:\.|\.\.\.)?$")
# systemctl status: the unit's header, its state since when, its main process.
_HEADER = re.compile(rf"^\s*[●○×*]\s+(?P<unit>{_UNIT})(?: - (?P<desc>.*))?$")
_ACTIVE = re.compile(r"^\s*Active: (?P<state>[\w-]+)(?: \((?P<sub>[\w-]+)\))?(?: \(Result: (?P<result>[\w-]+)\))?"
                     r"(?: since (?P<since>[^;]+?))?(?:; (?P<ago>.+? ago))?\s*$")
_MAIN_PID = re.compile(r"^\s*Main PID: (?P<pid>\d+) \((?:code=(?P<how>exited|killed|dumped), (?:status|signal)="
                       r"(?P<status>[\w-]+)(?:/(?P<name>\w+))?|(?P<program>[^)]*))\)")
_ENDED = {"Succeeded.": "success", "Deactivated successfully.": "success", "failed.": "failed",
          "entered failed state.": "failed"}


def _process_end(how: str, status: str, name: str | None) -> dict:
    """`code=exited, status=1/FAILURE` -> an exit; `code=killed, status=9/KILL` (or `signal=KILL`)
    and `code=dumped` -> killed by that signal."""
    if how == "exited":
        code = int(status) if status.lstrip("-").isdigit() else None
        sig, meaning = exit_meaning(code) if code is not None else (None, None)
        return dict(kind="exit", exit_code=code, signal=sig, meaning=meaning)
    sig = signal_name(name or status)
    return dict(kind="killed", signal=sig, core_dumped=how == "dumped")


def read_unit_line(line: str) -> dict | None:
    """One line's systemd fact (see the module docstring), without the job's attempt: `unit` names
    the unit, or `description` where the line names only that. None for any other line."""
    m = _SYSTEMD_LINE.match(line.strip())
    if m is None:
        # `journalctl -o cat` prints the message alone: only a unit's process facts are read so
        u = _UNIT_MSG.match(line.strip())
        fact = _unit_fact(u["what"]) if u is not None else None
        return dict(fact, unit=u["unit"], prefix="") if fact is not None else _status_line(line)
    prefix, msg = m["prefix"] or "", m["msg"]
    if m["ident"] == "systemd-oomd":
        k = _OOMD_KILLED.match(msg)
        if k is not None:
            u = _UNIT_AT_END.search(k["cgroup"])
            return dict(kind="oom_kill", unit=u["unit"] if u else k["cgroup"], cgroup_path=k["cgroup"], reason=k["why"],
                        killer="systemd-oomd", prefix=prefix)
        k = _OOMD_KILLING.match(msg)
        if k is not None:  # names a process, not a unit: the unit's own lines follow
            return dict(kind="oom_kill", pid=int(k["pid"]), signal=signal_name(k["sig"]), killer="systemd-oomd",
                        prefix=prefix, no_unit=True)
        return None
    u = _UNIT_MSG.match(msg)
    if u is not None:
        unit, what = u["unit"], u["what"]
        fact = _unit_fact(what)
        if fact is not None:
            return dict(fact, unit=unit, prefix=prefix)
        return dict(kind=None, unit=unit, prefix=prefix)  # a line about the unit that states nothing we read
    lm = _LIFECYCLE.match(msg)
    if lm is not None:
        verb = lm["verb"]
        kind = {"Started": "attempt_start", "Stopped": "attempt_end", "Failed to start": "attempt_end"}.get(verb, "stage")
        fact = dict(kind=kind, prefix=prefix, verb=verb)
        if verb in ("Stopped", "Failed to start"):
            fact["reason"] = "stopped" if verb == "Stopped" else "failed to start"
        if lm["unit"]:
            fact.update(unit=lm["unit"], description=lm["desc"])
        else:
            fact["description"] = lm["text"]
        return fact
    return None


def _unit_fact(what: str) -> dict | None:
    m = _MAIN_EXITED.match(what)
    if m:
        return _process_end(m["how"], m["status"], m["name"])
    m = _FAILED_RESULT.match(what)
    if m:
        return dict(kind="attempt_end", reason=m["result"])
    m = _RESTART_AT.match(what)
    if m:
        return dict(kind="restart_scheduled", restart_count=int(m["n"]))
    if what.startswith("holdoff time over, scheduling restart"):
        return dict(kind="restart_scheduled")
    if re.match(r"Service RestartSec=\S+ expired, scheduling restart", what):
        return dict(kind=None)  # the `Scheduled restart job` line that follows says it with the counter
    if what.startswith("A process of this unit has been killed by the OOM killer"):
        return dict(kind="oom_kill")
    if what.startswith("systemd-oomd killed"):  # `systemd-oomd killed 5 process(es) in this unit.`
        return dict(kind="oom_kill", killer="systemd-oomd")
    m = _KILLING.match(what)
    if m:
        return dict(kind="kill_sent", target_pid=int(m["pid"]), pid=int(m["pid"]), process_name=m["name"],
                    signal=signal_name(m["sig"] or m["sent"]))
    m = _TIMED_OUT.match(what)
    if m:
        return dict(kind="timeout", what=f"systemd state {m['state']}", action=m["action"])
    if what.startswith("Start request repeated too quickly"):
        # its start limit hit: systemd stops restarting the unit (a supervisor giving up)
        return dict(kind="gave_up", reason="start-limit-hit")
    if what in _ENDED:
        return dict(kind="attempt_end", reason=_ENDED[what])
    return None


def _status_line(line: str) -> dict | None:
    """`systemctl status`: the unit header, `Active:` and `Main PID:` lines."""
    m = _HEADER.match(line)
    if m:
        return dict(kind=None, unit=m["unit"], description=m["desc"], header=True)
    m = _ACTIVE.match(line)
    if m:
        state = m["state"]
        since = (m["since"] or "").strip()
        if state in ("active", "reloading") and m["sub"] in ("running", "exited"):
            return dict(kind="attempt_start", prefix=since, active=f"{state} ({m['sub']})", status_line=True)
        if state in ("failed", "inactive") or m["sub"] == "auto-restart":
            if not since and state == "inactive":
                return dict(kind=None, status_line=True)  # never ran
            return dict(kind="attempt_end", prefix=since, reason=m["result"] or ("stopped" if state == "inactive" else state),
                        active=f"{state} ({m['sub'] or m['result']})", status_line=True)
        return dict(kind=None, status_line=True)
    m = _MAIN_PID.match(line)
    if m:
        if m["how"]:
            return dict(_process_end(m["how"], m["status"], m["name"]), pid=int(m["pid"]), status_line=True)
        return dict(kind=None, pid=int(m["pid"]), program=m["program"], main_pid=True, status_line=True)
    return None


def _status_blocks(raw: dict[int, dict]) -> dict[int, dict]:
    """Line -> what its `systemctl status` block says elsewhere: the main PID (printed below the
    `Active:` line) and the time the unit entered its state (for the `Main PID:` exit status)."""
    out: dict[int, dict] = {}
    block: dict = {}
    for n in sorted(raw):
        f = raw[n]
        if f.get("header"):
            block = {}
        if f.get("status_line"):
            if f.get("main_pid"):
                block["pid"] = f["pid"]
            if f.get("active") and f.get("prefix"):
                block["since"] = f["prefix"]
            out[n] = block
    return out


class Units:
    """The systemd facts of a stretch of lines with each unit's job and attempt, read in one pass
    before they are asked for (an attempt can depend on a later line)."""

    def __init__(self, lines: list[tuple[int, str]]):
        self.facts: dict[int, dict] = {}
        self.year: int | None = None
        self.offset_min: int | None = None
        self._only: str | None = None
        self.held: set[int] = set()  # lines read for the unit they name, with no event
        raw = {n: f for n, s in lines if (f := read_unit_line(s)) is not None}
        if not raw:
            return
        # The units this text is about: those a process fact or a status header names (a whole
        # journal starts and stops many others), or the only unit it names at all (`journalctl -u`).
        every = {f["unit"] for f in raw.values() if f.get("unit")}
        named = {f["unit"] for f in raw.values() if f.get("unit") and (f.get("header") or
                 (f.get("kind") is not None and "verb" not in f))}
        named = every if len(every) == 1 else named
        self._only = next(iter(every)) if len(every) == 1 else None
        # Journal stamps carry no year and no zone; a status line's `since`, printed in the same zone, does.
        walls = [w for f in raw.values() if f.get("active") and (w := parse_wall_clock(f.get("prefix") or ""))]
        self.year = walls[0].naive.year if walls else None
        self.offset_min = walls[0].offset_min if walls else None
        described = {f["description"]: f["unit"] for f in raw.values() if f.get("unit") and f.get("description")}
        self._attempts(raw, named, described)

    def _unit_of(self, f: dict, named: set[str], described: dict[str, str]) -> str | None:
        if f.get("unit"):
            return f["unit"] if f["unit"] in named else None
        if f.get("description") in described:
            return described[f["description"]]
        return self._only  # `Started Train job.` belongs to the unit only when the text names no other

    def _attempts(self, raw: dict[int, dict], named: set[str], described: dict[str, str]) -> None:
        counter: dict[str, int | None] = {}  # unit -> the attempt running now (None: not known yet)
        pending: dict[str, int] = {}  # unit -> the counter a scheduled restart set for the next start
        early: dict[str, list[dict]] = {}  # unit -> facts before its first start, waiting for a counter
        # What the unit's current attempt already said: systemctl status restates its journal tail
        # (`Active: failed` and `Failed with result`), and `Stopped` follows `Failed`.
        said: dict[str, set[str]] = {}
        blocks = _status_blocks(raw)
        status_unit = None
        for n in sorted(raw):
            f = dict(raw[n])
            if f.get("header"):
                status_unit = f["unit"]
                self.held.add(n)
                continue
            block = blocks.get(n, {})
            if f.get("status_line") and "prefix" not in f and block.get("since"):
                f["prefix"] = block["since"]  # the main process ended when the unit entered its state
            unit = status_unit if f.pop("status_line", False) else self._unit_of(f, named, described)
            if f.pop("no_unit", False):
                f.update(by=BY)
                self.facts[n] = f  # systemd-oomd names the process it kills, not its unit
                continue
            if unit is None:
                continue
            if f.pop("main_pid", False):
                self.held.add(n)
                continue
            kind = f.get("kind")
            if kind is None:
                self.held.add(n)
                continue
            if kind == "attempt_start":
                restarted = unit in pending
                counter[unit] = pending.pop(unit, 0) if f.get("active") is None else counter.get(unit)
                for e in early.pop(unit, []):  # the run before this start: the one the counter counted last
                    e["attempt"] = counter[unit] - 1 if restarted and counter[unit] else None
                if f.get("active") and block.get("pid") is not None:
                    f["pid"] = block["pid"]
                said[unit] = set()
            elif kind in ("attempt_end", "exit", "killed"):
                group = "end" if kind == "attempt_end" else "process"
                if group in said.setdefault(unit, set()):
                    f["kind"] = "stage"  # said already for this attempt
                said[unit].add(group)
            if kind == "restart_scheduled":
                if f.get("restart_count") is not None:
                    pending[unit] = f["restart_count"]
                    for e in early.pop(unit, []):
                        e["attempt"] = f["restart_count"] - 1
                    if counter.get(unit) is None and unit not in counter:
                        counter[unit] = f["restart_count"] - 1
            starting = f.get("verb") == "Starting"  # the start that follows: its attempt
            f.update(job=unit, by=BY, attempt=pending.get(unit, 0) if starting else counter.get(unit))
            if unit not in counter and kind != "restart_scheduled" and not starting:
                early.setdefault(unit, []).append(f)
            f.pop("verb", None)
            f.pop("description", None)
            f.pop("active", None)
            f.pop("header", None)
            self.facts[n] = f

    def fact(self, n: int) -> dict | None:
        """The fact of line `n` (a fresh copy), or None; `year` and `offset_min` are what a status
        line of the same text states, for journal stamps that carry neither."""
        f = self.facts.get(n)
        if f is None:
            return None
        stated = {k: v for k, v in (("year", self.year), ("offset_min", self.offset_min)) if v is not None}
        return dict(f, **stated)
