"""Every finding's title and detail, written from its numbers: the one place a finding's sentences
are made.

A detector decides what happened and measures it; what it returns is the kind, the times, the
evidence and the numbers its kind declares (numbers.py). `findings.finding` asks this module for
the title and the detail, so that a title says exactly what the numbers say, and the incident
story (present/sentences.py) and the tables read the same numbers.

Some numbers are phrases: what a check saw ("process 4242 started"), a reason, a root-cause
candidate, each already one observation with its own values. They are numbers of the finding
(tables list them one per line), not sentences about it; the sentences are here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pandas as pd

from ..units import clock, clock_within, duration, figure, rate, tok_s
from .numbers import declared


def written(kind: str, start, end, within_s, n: dict) -> tuple[str, str]:
    """(title, detail) of a finding of `kind` from `start` to `end` with numbers `n`."""
    return _BY_KIND[kind](_Finding(kind, start, end, within_s, n))


class _Finding:
    """What a sentence may read: the times and the numbers its kind declares, by name (`f.run`;
    a number the finding does not carry reads as None)."""

    def __init__(self, kind: str, start, end, within_s, numbers: dict):
        self.kind, self.start, self.end, self.within_s, self.n = kind, start, end, within_s, numbers

    def __getattr__(self, key: str):
        # A sentence that reads an undeclared number is a misspelling: fail where it is written.
        if key not in declared(self.kind):
            raise AttributeError(f"{self.kind} declares no number {key!r} (detect/numbers.py)")
        return self.n.get(key)

    @property
    def when(self) -> str:
        """The start as its source gives it (`05:23:01 (up to 2 s later)` where it is rough; a
        line nothing dates, a pasted error's, has none)."""
        return clock_within(self.start, self.within_s) if pd.notna(self.start) else "an unknown time"


def one_line(text) -> str:
    """An error or a command whole, on one line: where it is shown, the page or terminal cuts it
    (with an ellipsis and the whole text a hover away)."""
    return " ".join(str(text or "ended").split())


def _host(f: _Finding) -> str:
    """`host a: ` for a finding a fleet, or an incident of several hosts, judged on one host."""
    return f"host {f.host}: " if f.host_named and f.host is not None else ""


# --- throughput -----------------------------------------------------------------------------------

def started_again(run, launch) -> str:
    """A run started again under its own name (`run X was started again at T`), where a drop or
    a level came with the new start rather than with another run."""
    return f"run {run} was started again" + (f" at {clock(launch)}" if launch is not None and pd.notna(launch) else "")


def _regression(f: _Finding) -> tuple[str, str]:
    u = f.unit
    where = ((f"began when {started_again(f.run_after, f.run_after_launch)}" if f.run_after == f.run_before
              else f"began when run {f.run_after} started (after run {f.run_before})") if f.across_runs
             else f"within run {f.run_after}")
    cands = f.candidates or []
    steadily = " steadily" if f.gradual else ""
    levels = ("its first lines' level, then its last lines'" if f.gradual else "segment levels")
    return (f"throughput fell{steadily} from {rate(f.baseline_tok_per_s, u).removesuffix(' ' + u)} to "
            f"{rate(f.degraded_tok_per_s, u)} ({f.ratio:.2f} of baseline)",
            f"Throughput {where}: baseline {figure(f.baseline_tok_per_s, u)} {u}, degraded "
            f"{figure(f.degraded_tok_per_s, u)} {u} ({levels} "
            f"{', '.join(figure(v, u) for v in f.levels_tok_per_s)}). "
            + ("Root-cause candidates: " + "; ".join(cands) + "." if cands
               else "No root-cause candidate in the evidence."))


def _episode(f: _Finding) -> str:
    return "stall" if f.episode == "stall" else "regression"


def _recovery(f: _Finding) -> tuple[str, str]:
    u = f.unit
    return (f"throughput recovered to {rate(f.level_tok_per_s, u)} ({f.ratio:.2f} of baseline)",
            f"From {clock(f.start)} run {f.run} sustained at least {f.recovery_fraction:.0%} of the "
            f"{figure(f.baseline_tok_per_s, u)} {u} baseline ({f.sustained_samples} consecutive samples), "
            f"{f.time_to_recover_s:.0f} s after the {_episode(f)} began.")


def _partial_recovery(f: _Finding) -> tuple[str, str]:
    u = f.unit
    level, frac, base = f.level_tok_per_s, f.recovery_fraction, f.baseline_tok_per_s
    reasons = f.reasons or []
    if f.relaunch:  # a run started after the drop that never reached the floor
        return (f"relaunch {f.run} came back at {rate(level, u)} ({f.ratio:.2f} of baseline)",
                f"Run {f.run} trained at {figure(level, u)} {u} from {clock(f.start)} to {clock(f.end)}, "
                f"below {frac:.0%} of the {figure(base, u)} {u} baseline. "
                + ("Likely reason: " + "; ".join(reasons) + "." if reasons
                   else "No reason in the evidence (no per-process GPU samples, no flag difference)."))
    return (f"partial recovery to {rate(level, u)} ({f.ratio:.2f} of baseline)",
            f"Throughput came back to {figure(level, u)} {u}, below {frac:.0%} of the {figure(base, u)} {u} "
            "baseline. " + ("Likely reason: " + "; ".join(reasons) + "." if reasons
                            else "No likely reason in the evidence."))


def _no_recovery(f: _Finding) -> tuple[str, str]:
    return ("throughput never recovered in the data",
            f"No throughput samples after the {_episode(f)} ending {clock(f.start)}.")


# --- starts ---------------------------------------------------------------------------------------

def _failed_restart(f: _Finding) -> tuple[str, str]:
    word = "start" if f.first_start else "restart"  # the first start of the incident is no restart
    # The title takes the why up to its first colon or parenthesis: what is missing, or the line
    # that shows it (quoted: its own colons are no end of the why), goes after it.
    return (f"{word} at {f.when} never came up: {re.split(r':| [(]', f.why, maxsplit=1)[0]}",
            f.why + ". Checks: " + "; ".join(f.checks_seen) + "."
            + (f" Its supervisor gave up at {clock(f.gave_up_at)}: `{f.gave_up}`." if f.gave_up else ""))


def _slow_start(f: _Finding) -> tuple[str, str]:
    late = (f"its first step came {f.first_step_after_s:,.0f} s after the launch" if f.first_step_after_s is not None
            else "still starting when the evidence ends, with no sign that it failed")
    return f"slow start after launch at {f.when}", "; ".join(f.checks_seen) + f". Slow, not failed: {late}."


def _verified_start(f: _Finding) -> tuple[str, str]:
    return (f"restart at {f.when} verified by dflash-postmortem launch",
            f"The launcher checked the start itself: {f.launcher_said}. First training step logged at "
            f"{clock(f.end)}" + (f" by PID {f.pid}" if f.pid is not None else "") + ".")


def _never_trained(f: _Finding) -> tuple[str, str]:
    creep = ""
    if f.memory_from is not None:
        (t0, lo), (t1, hi) = f.memory_from, f.memory_to
        creep = (f"; GPU memory went from {lo:,.0f} MiB at {clock(t0)} to {hi:,.0f} MiB at {clock(t1)}"
                 + (" and was still growing" if f.memory_growing else ""))
    how_ended = f"it was gone by {clock(f.end)}" if f.gone else f"still no step at {clock(f.end)}"
    return (f"launch at {f.when} never reached training: stuck after `{f.last_stage}`",
            f"Run {f.run or '?'} wrote its start-up stages up to `{f.last_stage}` at {clock(f.last_stage_time)} "
            f"and nothing after it for {f.seconds_in_stage:,.0f} s{creep}; no training step; {how_ended}.")


def _stale_process(f: _Finding) -> tuple[str, str]:
    counted = f"; the process count at {clock(f.counted_at)} counted it" if f.counted_at is not None else ""
    return (f"stale python process {f.pid} predates the launch at {clock(f.launch)}",
            f"PID {f.pid} (`{f.command}`) was started {pd.Timestamp(f.start):%H:%M} and seen from "
            f"{clock(f.first_seen)} to {clock(f.end)}: it predates the launch and is "
            f"not the launched trainer, so its existence does not mean training is running{counted}.")


# --- deaths and stalls ----------------------------------------------------------------------------

def _training_died(f: _Finding) -> tuple[str, str]:
    on_rank = f" on rank {f.error_rank}" if f.error_rank is not None else ""
    ended = f.end_message
    gave_up = f" Its supervisor gave up at {clock(f.gave_up_at)}: `{f.gave_up}`." if f.gave_up else ""
    after = gave_up + " Nothing started it again in the evidence."
    if f.restarted_at is not None:
        gap = (f.restarted_at - f.ended).total_seconds()
        by = f.restarted_by if f.restarted_by != "unknown" else "next"
        after = gave_up + (f" The {by} start at {clock(f.restarted_at)}, {gap:.0f} s later, began attempt {f.next_attempt}"
                           + (f"; it resumed at step {f.resumed_step}, so {f.redone_steps} step(s) up to "
                              f"{f.reached_step} were done again" if f.reached_step is not None else
                              f"; it resumed at step {f.resumed_step}: no step was done again" if f.resumed_step is not None
                              else "") + ".")
    verb = {"time_limit": "reached its time limit", "stopped_by_signal": "was stopped by a signal from outside its shell"}.get(f.kind, "died")
    return (f"run {f.run or f.script or '?'} {verb} at {f.when}: {one_line(f.error)}",
            f"Attempt {f.attempt} (run {f.run or '?'}, started {clock(f.started)} by {f.started_by}) trained from "
            f"{clock(f.first_step_time)}; its last step line was at "
            f"{clock(f.last_step_time) if f.last_step_time is not None else '?'}; "
            f"at {clock(f.start)}{on_rank}: `{f.error}`; it ended at {clock(f.ended)}"
            + (f" (`{one_line(ended)}`)" if ended and ended != f.error else "")
            + (f". {_listed(f.silent_logs)} wrote nothing after the last step: what the others waited for"
               if f.silent_logs else "")
            + (f". Rank(s) {ranks_text(f.stopped_ranks)} logged no error of their own before the launcher stopped them"
               if f.stopped_ranks else "") + f".{after}")


def _process_died(f: _Finding) -> tuple[str, str]:
    ranks = f" (rank{'s' if len(f.ranks) > 1 else ''} {ranks_text(f.ranks)})" if f.ranks else ""
    ended = f" It ended with `{one_line(f.end_message)}`" if f.end_message else ""
    at = f" at {clock(f.ended)}" if ended and f.ended is not None else ""
    what = "processes" if len(f.ranks) > 1 else "a process"
    steps = (f"no launch of its run (its {f.steps_logged} step lines, up to step {f.last_step}, placed at no start)"
             if f.steps_logged else "no launch of its run and no training step")
    at_when = f" at {f.when}" if pd.notna(f.start) else ""
    if f.launcher_signalled:  # told to stop from outside: nothing of its workers failed first
        return (f"the launcher was stopped by {f.signal or 'a signal'}{at_when}: {one_line(f.error)}",
                f"`{f.source}` holds the launcher's word that a signal told it to stop, and {steps}: `{f.error}`."
                + (f"{ended}{at}." if ended else ""))
    return (f"{what} died{ranks}{at_when}: {one_line(f.error)}",
            f"`{f.source}` holds what ended {what}{ranks} and {steps}"
            f" (an error pasted alone, or a log's tail): `{f.error}`." + (f"{ended}{at}." if ended else ""))


def _loss_not_finite(f: _Finding) -> tuple[str, str]:
    name = f.metric.removeprefix("train/")
    at = f" at step {f.step}" if f.step is not None else ""
    before = (f" (it was {f.last_finite_value:.4g} at step {f.last_finite_step})" if f.last_finite_value is not None
              and f.last_finite_step is not None else "")
    # (an overflow's skipped step only where the log shows the run scaling its loss)
    why = ": skipped steps, as an fp16 overflow skips them" if f.loss_scaled else ""
    after = (f"; a finite value came back later ({f.lines_not_finite} of its {f.lines_after + 1} lines from there "
             f"are not a number{why})" if f.finite_after else
             f"; it stayed so to the end of the log ({f.lines_after} more lines): the run trained on without learning")
    return (f"{name} of run {f.run or '?'} {became(f.value)}{at}",
            f"`{f.source}`: {f.metric} {became(f.value)}{at}{before}{after}.")


def became(value: str) -> str:
    """What a non-finite value (`nan`, `inf`, `-inf` as the numbers keep it) is, in words: a page
    shows no raw `nan` (tests/report: a pandas missing value leaking reads the same)."""
    return {"inf": "became infinite", "-inf": "became negative infinite"}.get(value, "stopped being a number")


def ranks_text(ranks: list) -> str:
    """`1, 2, 3`: the first eight, then how many more."""
    return ", ".join(str(r) for r in ranks[:8]) + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")


def _listed(paths: list) -> str:
    return ", ".join(f"`{p}`" for p in paths)


def _stall(f: _Finding) -> tuple[str, str]:
    title = (f"stall: GPUs hold memory at ~0 % utilization with no step for {duration(f.seconds)}" if f.idle
             else f"stall: no step for {duration(f.seconds)} while {f.alive} was alive")
    held_by = ("; held by " + ", ".join(f"PID {p} ({m:.0f} MiB)" for p, m in f.holder_mib.items())
               if f.holder_mib else "")
    gpu_text = (f" GPU memory stayed allocated (up to {f.max_memory_mib:.0f} MiB{held_by}) with utilization at "
                f"most {f.util_pct_mostly:.0f} % in {f.idle_share:.0%} of the samples;"
                if f.util_pct_mostly is not None else "")
    began = (f"Nothing dates run {f.run or '?'}'s steps; a line says it had been silent since {clock(f.start)} "
             f"(`{f.said_silent}`), and it stepped no further until" if f.said_silent
             else f"Run {f.run or '?'} logged its last step at {clock(f.start)} and nothing after it until")
    return title, (f"{began} {clock(f.end)}:{gpu_text} its process was alive throughout"
                   + (f"; likely cause: {f.cause}" if f.cause else "") + ".")


def _lingering(f: _Finding) -> tuple[str, str]:
    who = f"PID {f.pid}" if f.pid is not None else "its process"
    held = ("; it held " + ", ".join(f"{m:.0f} MiB (PID {p})" for p, m in f.holder_mib.items())
            + (f" at ~{f.util_pct_mostly:.0f} % utilization" if f.idle and f.util_pct_mostly is not None else "")
            if f.holder_mib else "")
    until = (f"until {clock(f.end)}: {f.end_message}" if f.end_message else f"and was last seen alive at {clock(f.end)}")
    return (f"run {f.run or '?'} finished but {who} did not exit for {duration(f.seconds)}",
            f"Run {f.run or '?'} wrote nothing after {clock(f.start)} ({f.stop_line}), yet {who} lived on "
            f"{until}{held}.")


def _pass(p: dict) -> str:
    """One pass of a loop by its run and PID (`run lr-1e-4 (PID 31095)`)."""
    return f"run {p['run'] or '?'}" + (f" (PID {p['pid']})" if p.get("pid") is not None else "")


def interrupted_loop(numbers: dict) -> str:
    """What each interrupt of a loop stopped and what the loop did next, from the numbers of an
    `interrupt_went_on` finding: its detail, and the story's sentence after its time."""
    f = _Finding("interrupt_went_on", None, None, 0.0, numbers)
    told = []
    for k, p in enumerate(f.went_on):
        step = f", its last step line step {p['last_step']}" if p.get("last_step") is not None else ""
        said = f" (`{one_line(p['said'])}`)" if p.get("said") else ""
        nxt = f"run {p['next_run'] or '?'}" + (f" (PID {p['next_pid']})" if p.get("next_pid") is not None else "")
        told.append((f"an interrupt stopped {_pass(p)}{step}{said}" if k == 0 else
                     f"at {clock(p['stopped_at'])} an interrupt stopped it{step}{said}")
                    + f", and the loop went on with {nxt} at {clock(p['next_start'])}")
    ended = f.ended
    if ended is not None:
        step = f" (its last step line step {ended['last_step']})" if ended.get("last_step") is not None else ""
        left = (" (no pass was left)" if f.passes is not None and f.ran >= f.passes else
                f" ({f.ran} of its {f.passes} passes had started)" if f.passes is not None else "")
        told.append(f"the interrupt at {clock(ended['stopped_at'])} stopped {_pass(ended)}{step} and the loop "
                    f"ended{left}")
    keys = (f"; the terminal shows Ctrl-C (`^C`) pressed {f.key_presses} time{'s' if f.key_presses != 1 else ''}"
            if f.key_presses else "")
    # bash leaves a loop only if its command died of the interrupt: one that handled it, or that
    # exited with a status of its own after its KeyboardInterrupt's traceback, went on
    handled = {p.get("handled") for p in f.went_on}
    how = ("Each trainer handled the interrupt and exited" if handled == {True} else
           "Each trainer ended in a KeyboardInterrupt traceback and exited with a status of its own, not killed "
           "by the signal" if handled == {False} else "No trainer was killed by the interrupt: each exited")
    return "; ".join(told) + keys + f". {how}, so bash went on with the loop; only an interrupt that kills the command ends a loop"


def _interrupt_went_on(f: _Finding) -> tuple[str, str]:
    first = f.went_on[0]
    more = len(f.went_on) - 1
    title = (f"an interrupt at {clock(f.start)} stopped only {_pass(first)}: its loop went on with run "
             f"{first['next_run'] or '?'}" + (f" ({more} more time{'s' if more > 1 else ''} after)" if more else ""))
    return title, f"At {clock(f.start)} " + interrupted_loop(f.n) + "."


# --- kills ----------------------------------------------------------------------------------------

def _who(f: _Finding) -> str:
    return f"PID {f.pid}" + (f" (run {f.run})" if f.run else "")


def _kill_failed(f: _Finding) -> tuple[str, str]:
    title = f"the kill at {clock(f.start)} did not stop {_who(f)}"
    if not f.refused:  # it raised no error, and its target lived on
        again = (f"; the kill at {clock(f.aimed_again_at)} was aimed at it again" if f.aimed_again_at is not None
                 else "")
        return title, (f"`{f.message}` reached {_who(f)}, which was still {', '.join(f.still)} until "
                       f"{clock(f.until)}{again}: the {f.signal} did not end it.")
    if f.group:
        meaning = (f"`kill -- -{f.pid}` names process group {f.pid}, but PID {f.pid} does not lead a group"
                   + (f" (its group is {f.process_group})" if f.process_group is not None else "")
                   + ": the PID named a process, not a process group, and nothing was signalled")
    else:
        meaning = f"the signal did not reach PID {f.pid}"
    return title, f"`{f.message}`: {meaning}."


def _survivor(f: _Finding) -> tuple[str, str]:
    held = ("; it held " + ", ".join(f"{m:.0f} MiB on GPU {g}" for g, m in sorted(f.memory_mib_by_gpu.items()))
            if f.memory_mib_by_gpu else "")
    return (f"{_who(f)} survived the failed kill and kept running until {clock(f.until)}",
            f"After the kill at {clock(f.start)} {_who(f)} was still {', '.join(f.still)} until "
            f"{clock(f.until)}{held}: whatever was started meanwhile shared its GPUs.")


# --- GPU placement --------------------------------------------------------------------------------

def _role_mismatch(f: _Finding) -> tuple[str, str]:
    heavy, light = f.observed_heavy, f.observed_light
    seen = f.observed_classes or {gpu: "heavy" if gpu in heavy else "light" for gpu in f.gpus_out_of_place}
    exp_text = " + ".join(f"{len(v)} {k}" for k, v in f.expected_roles.items())
    out_of_place = ", ".join(
        f"GPU {gpu} is {seen[gpu]} ({f.memory_mib.get(gpu, float('nan')):.0f} MiB), "
        f"expected {'heavy' if gpu in f.expected_heavy else 'light'}" for gpu in f.gpus_out_of_place)
    on_gpus = "".join(f" On GPU {gpu}: " + ", ".join(f"PID {pid} ({name}, {mib:.0f} MiB)" for pid, name, mib in procs)
                      + "." for gpu, procs in (f.holders_by_gpu or {}).items())
    return (f"{_host(f)}GPU roles: observed {len(heavy)} heavy + {len(light)} light, expected {exp_text}",
            f"From {clock(f.start)} to {clock(f.end)} the memory footprint "
            f"{'of ' + str(f.host) + ' ' if _host(f) else ''}shows {len(heavy)} heavy and {len(light)} light GPUs; "
            f"incident.toml expects {exp_text} ({len(f.expected_heavy)} heavy). Out of place: {out_of_place}."
            + on_gpus)


def _idle_allocated_gpu(f: _Finding) -> tuple[str, str]:
    return (f"{_host(f)}GPU {f.gpu} holds {f.memory_mib:.0f} MiB but sits idle",
            f"GPU {f.gpu}{' of ' + str(f.host) if _host(f) else ''} held {f.memory_mib:.0f} MiB at "
            f"{f.max_util_pct:.0f} % utilization or less from {clock(f.start)} to {clock(f.end)}"
            + (" while other GPUs were busy." if f.beside_busy else "."))


# --- the fleet ------------------------------------------------------------------------------------

def _straggler(f: _Finding) -> tuple[str, str]:
    tok = (f" Its job ran at {tok_s(f.tok_per_s_during)} tok/s against {tok_s(f.tok_per_s_before)} before and "
           f"{tok_s(f.fleet_tok_per_s)} on the other hosts."
           if f.tok_per_s_during is not None and f.tok_per_s_before and f.fleet_tok_per_s else "")
    span = f"From {clock(f.start)} to {clock(f.end)} ({f.minutes:.0f} min)"
    if f.gpu is None:
        return (f"host {f.host} is the fleet's straggler: {tok_s(f.host_tok_per_s)} tok/s against "
                f"{tok_s(f.fleet_median_tok_per_s)}",
                f"{span} host {f.host}'s job ran at {tok_s(f.host_tok_per_s)} tok/s while the fleet's median was "
                f"{tok_s(f.fleet_median_tok_per_s)}, and no GPU of its own was setting the pace." + tok)
    if f.shown_by == "clock":
        power = (f", {f.power_w:.0f} W against {f.peers_power_w:.0f} W" if f.power_w is not None
                 and f.peers_power_w is not None else "")
        heat = f", {f.temp_c:.0f} C against {f.peers_temp_c:.0f} C" if f.temp_c is not None and f.peers_temp_c is not None else ""
        why = [r for r in f.clock_reasons or [] if r not in (f.peers_clock_reasons or [])]
        return (f"host {f.host} GPU {f.gpu} sets the pace: its SM clock at {f.sm_clock_mhz:.0f} MHz against its "
                f"peers' {f.peers_sm_clock_mhz:.0f} MHz",
                f"{span} GPU {f.gpu} of {f.host} ran at {f.sm_clock_mhz:.0f} MHz against {f.peers_sm_clock_mhz:.0f} MHz "
                f"on the host's other busy GPUs{power}{heat}"
                + (f"; the driver held its clocks down for {', '.join(why)}" if why else "")
                + f". At {f.util_pct:.0f} % utilization beside their {f.peers_util_pct:.0f} %, utilization does not "
                "show it: the others wait inside their collectives." + tok)
    return (f"host {f.host} GPU {f.gpu} sets the pace: {f.util_pct:.0f} % busy while its peers wait at "
            f"{f.peers_util_pct:.0f} %",
            f"{span} GPU {f.gpu} of {f.host} ran at {f.util_pct:.0f} % utilization and {f.sm_clock_mhz:.0f} MHz "
            f"(the fleet's busy GPUs: {f.fleet_sm_clock_mhz:.0f} MHz) while the host's other GPUs waited at "
            f"{f.peers_util_pct:.0f} % and the fleet ran at {f.fleet_util_pct:.0f} %." + tok)


def _gpu_error(f: _Finding) -> tuple[str, str]:
    said = f" The host's logs say: {f.message}" if f.message else ""
    if f.gpu is None:  # error lines, and every GPU still reporting
        return (f"host {f.host}: {f.events} GPU error event(s), every GPU still reporting",
                f"{f.message} ({clock(f.start)}); no GPU of {f.host} went silent in the captures.")
    return (f"host {f.host} GPU {f.gpu} {'is lost' if f.lost else 'stopped answering'}: "
            f"{f.samples_missing} samples with no reading",
            f"From {clock(f.start)} nvidia-smi still lists GPU {f.gpu} of {f.host} but reads nothing from it "
            f"({f.samples_missing} samples to {clock(f.end)}; last reading {clock(f.last_reading, missing='never')})."
            + said)


def _restart_never_came_up(f: _Finding) -> tuple[str, str]:
    mem = f.gpu_memory_after_mib
    return (f"host {f.host}: the relaunch at {clock(f.start)} never came up",
            f"{f.host} was relaunched at {clock(f.start)}; in the {f.minutes_watched:.0f} minutes after it "
            + ("the host reported no GPU samples at all" if mem is None
               else f"no GPU of the host held more than {mem:.0f} MiB")
            + f" and no rank logged a step (last step line: {clock(f.last_step_time, missing='none')}).")


_BY_KIND: dict[str, Callable[[_Finding], tuple[str, str]]] = {
    "throughput_regression": _regression, "recovery": _recovery, "partial_recovery": _partial_recovery,
    "no_recovery": _no_recovery, "failed_restart": _failed_restart, "slow_start": _slow_start,
    "verified_start": _verified_start, "never_trained": _never_trained, "stale_process": _stale_process,
    "training_died": _training_died, "time_limit": _training_died, "stopped_by_signal": _training_died, "process_died": _process_died,
    "loss_not_finite": _loss_not_finite, "kill_failed": _kill_failed, "survivor": _survivor, "stall": _stall, "lingering": _lingering,
    "interrupt_went_on": _interrupt_went_on,
    "role_mismatch": _role_mismatch, "idle_allocated_gpu": _idle_allocated_gpu,
    "straggler": _straggler, "gpu_error": _gpu_error, "restart_never_came_up": _restart_never_came_up,
}

# The kinds this module writes: every kind numbers.py declares (tests/detect/test_finding_text.py).
KINDS = frozenset(_BY_KIND)
