"""The attempt model: the one account of every start of training in an incident.

    attempts.py   every start, whatever showed it (a command typed or traced, a launcher's or
                  scheduler's restart, a trainer process, a log or run that begins), its
                  processes, ranks, GPUs, logs and runs, and how it ended
    launches.py   what each start led to (its flags, process, log, run, first step), as the
                  detectors and tables read it
    kills.py      which processes a kill reached (PIDs, PID files, patterns, process groups)
    log_files.py  each attempt's own log file: written, empty, never created, or not in the folder
    pace.py       the job's one measure of speed: tok/s where a trainer logs tokens, else steps/s
                  counted from its step counter
    progress.py   each attempt's progress from its step and token counters, as levels over windows
    changepoints.py  change points of a signal's mean (PELT on the l2 cost), and its best one step
    states.py     each attempt's states over time (starting, training, degraded, stalled, hung,
                  exited, killed, never trained), every change citing its line
    ledger.py     every GPU-second of the incident in one class (productive, degraded, starting,
                  stalled, restarting, down, redone)
    notes.py      what it assumed in reading them (stall thresholds, ranks combined, alternating
                  rates), for the load report
    kept.py       the attempts, states and ledger as the cache of loaded incidents keeps them
    computed.py   the memo: each result computed once per incident and shared
    carried.py    what one read of a growing folder keeps for the next (the live watch): the
                  attempts that are over, taken again where their rows are unchanged

Pure functions of an Incident, no I/O; detectors (detect/) find patterns over what they return.
May import: the contracts (docs/architecture.md, "Who may import whom").
"""

from .attempts import attempts
from .ledger import ledger
from .notes import reading_notes
from .progress import progress
from .states import states

__all__ = ["attempts", "ledger", "progress", "reading_notes", "states"]
