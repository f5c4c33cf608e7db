"""Live following of an incident folder: `dflash-postmortem watch DIR` reads the files of a
training run while they grow and announces what changes ("attempt 2 started", "throughput
fell", "stall", "a kill that did not stop its target", "not starting: ...").

    live.py           the follow loop: a look at the folder, what is new since the last one
    pacing.py         when a look reads the folder again (events at once, steady growth
                      within the watch's share of a core)
    announcements.py  an `Announcement` of one change, a `JobStatus` of each job now, and the
                      one status line that sums them up
    sinks.py          where they go: the terminal, a chat webhook, a command of the user's, a
                      Prometheus endpoint, or several of them at once
    command.py        `dflash-postmortem watch`: its options, its outputs, the NVML recorder

On the top floor with the CLI ("apps"): it may import anything of the package
(docs/architecture.md, "Who may import whom").
"""
