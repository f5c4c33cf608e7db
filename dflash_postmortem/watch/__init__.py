"""Live following of an incident folder: `dflash-postmortem watch DIR` reads the files of a
training run while they grow and announces what changes ("attempt 2 started", "throughput
fell", "stall", "a kill that did not stop its target", "not starting: ...").

What lives here so far is the output side and its contract: `announcements.py` (an
`Announcement` of one change, a `JobStatus` of each job now, and the one status line that sums
them up) and `sinks.py` (where they go: the terminal, a chat webhook, a command of the user's,
a Prometheus endpoint, or several of them at once).

On the top floor with the CLI ("apps"): it may import anything of the package
(docs/architecture.md, "Who may import whom").
"""
