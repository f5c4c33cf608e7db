"""The live watch following a folder in a thread while something writes it (a replay scenario),
paced as the `watch` command paces it: what it announced, for the tests to compare with the
post-mortem of the finished folder."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

from dflash_postmortem.watch.live import Watch, follow
from dflash_postmortem.watch.pacing import Pacer
from dflash_postmortem.watch.sinks import Sinks


class Said(list):
    """A sink that keeps every announcement."""

    def announce(self, a):
        self.append(a)

    def status(self, jobs):
        pass

    def close(self):
        pass


@contextmanager
def watching(folder: Path, poll_s: float = 0.5):
    """Follow `folder` (created if missing) until the block ends, then one look more; yields the
    list its announcements go to."""
    folder.mkdir(parents=True, exist_ok=True)
    said = Said()
    watch = Watch(folder, pacer=Pacer())
    stop = threading.Event()
    thread = threading.Thread(target=follow, args=(watch, Sinks([said])), kwargs={"poll_s": poll_s, "stop": stop},
                              daemon=True)
    thread.start()
    try:
        yield said
    finally:
        stop.set()
        thread.join(60)
    watch.pacer = None  # the folder as it ended, read whatever the credit
    said.extend(watch.look())
