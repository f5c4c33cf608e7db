"""Settings for every test process, the notebooks' (nbval) too.

nbval runs the notebooks here: they share one loaded incident (see notebook.load). The cache
folder is set before any kernel starts, so every notebook kernel of this test process inherits
it; it lives as long as the process.
"""

import atexit
import gc
import os
import shutil
import tempfile

import pytest

from dflash_postmortem import memory_collector
from dflash_postmortem.report.cache import CACHE_ENV

if not os.environ.get(CACHE_ENV):
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="dflash-nbval-")
    atexit.register(shutil.rmtree, os.environ[CACHE_ENV], True)

# The tests run on more workers than cores (Makefile: much of a test run waits on kernels,
# servers, browsers and replayed trainers); torch and numpy in each keep to one thread, so
# the workers share the cores instead of each spreading over all of them.
os.environ.setdefault("OMP_NUM_THREADS", "1")


# Every file's tests run on one worker, in order: its module fixtures are made once, and a
# notebook's cells run in one kernel. These files are split by bundled incident instead (their
# tests named `test[incident]`): each incident goes to whichever worker is free (its report is
# ten seconds and more), where its pin (what the kit says of it, loaded afresh) runs first and
# keeps what it loaded and detected in the cache of loaded incidents (support/bundled.py), for
# its report, its ledger, its overview and its terminal view to read back instead of loading
# and detecting it again (where the pin ran elsewhere, each file loaded every incident anew: 45 s
# of CPU in a run).
PIN = "tests/test_bundled_findings.py"
BY_INCIDENT = {PIN, "tests/report/test_bundled_reports.py", "tests/model/test_ledger.py",
               "tests/present/test_terminal_view.py", "tests/present/test_figures.py"}
# Files that take a worker from tens of seconds to minutes (a replayed trainer in real time, a
# Slurm cluster, a JupyterLab server, an S3 server and dask workers, pip building a wheel,
# incidents read again at each of their moments, a watched session replayed at its own pace: it
# started last in a timed run and the run waited 14 s on it alone): each
# starts early, so that none is left for the end of the run with the other workers idle, and no
# more of them run at once than the machine has cores, so that the many short files keep going
# beside them (the Slurm test mostly waits on its daemons: its worker's core goes to the others).
LONG = {
    "tests/loaders/launchers/test_slurm_live.py",
    "tests/loaders/test_following.py",
    "tests/replay/test_scenario_full.py",
    "tests/replay/test_scenario_stall.py",
    "tests/replay/test_scenario_survivor.py",
    "tests/store/test_dask.py",
    "tests/store/test_object_storage.py",
    "tests/test_lab.py",
    "tests/test_packaging.py",
    "tests/watch/test_pacing.py",
}
_HERE = os.path.dirname(os.path.abspath(__file__))
assert all(os.path.isfile(os.path.join(_HERE, f)) for f in BY_INCIDENT | LONG), "a file named above is gone"


# Tests that measure speed (`alone`) live here and run after the rest with nothing beside them
# (Makefile): that run collects this folder only, not the whole suite to pick one test out of it.
ALONE = "tests/alone/"


def pytest_collection_modifyitems(config, items):
    stray = [i.nodeid for i in items if i.get_closest_marker("alone") and not i.nodeid.startswith(ALONE)]
    if stray:  # it would run in neither part of `make test`
        raise pytest.UsageError(f"tests marked `alone` belong in {ALONE}: {', '.join(stray)}")
    # each incident's pin before its report (BY_INCIDENT), the rest in collection order
    at = [n for n, i in enumerate(items) if _path(i.nodeid) in BY_INCIDENT]
    for n, item in zip(at, sorted((items[n] for n in at), key=lambda i: _path(i.nodeid) != PIN), strict=True):
        items[n] = item


def pytest_collection_finish(session):
    """What collection imported (pandas, torch, hypothesis, the kit: about 240,000 objects) lives
    as long as the test process: frozen, a full collection of the cyclic GC no longer walks it,
    and the youngest generation is collected at the kit's pace, not every 700 allocations
    (dflash_postmortem/memory_collector.py, as the kit's commands and report kernels pace it).
    Measured on test_live, test_bundled_findings and test_corpus in one process: the GC's own
    time from 7.1 s to 0.8 s of 115 s."""
    gc.collect()
    memory_collector.tune()


def _path(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)  # (a run without xdist: `-p no:xdist`)
def pytest_xdist_make_scheduler(config, log):
    """The test workers (pytest-xdist) take a file at a time (or a bundled incident's tests,
    BY_INCIDENT), at most one LONG file per core at once. xdist's own `loadgroup` cannot express
    it on pytest >= 9.2, whose test ids it can no longer rewrite."""
    from xdist.scheduler import LoadScopeScheduling

    at_once = max(1, min(len(os.sched_getaffinity(0)), int(config.getvalue("numprocesses") or 1) - 1))

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = _path(nodeid)
            return "bundled" + nodeid[nodeid.index("["):] if path in BY_INCIDENT and "[" in nodeid else path  # test[name]

        def _assign_work_unit(self, node) -> None:
            # The next file in xdist's order (most tests first), but a long one while fewer than
            # `at_once` workers have one, and not one while they do (as long as others remain);
            # among the rest, a bundled incident (BY_INCIDENT: ten seconds and more each)
            # before the short files: xdist's order would leave them all for the end, where the
            # many short files can no longer fill the cores beside them.
            running = sum(any(s in LONG and not all(done.values()) for s, done in work.items())
                          for work in self.assigned_work.values())
            queue = list(self.workqueue)
            want = [s for s in queue if (s in LONG) == (running < at_once)]
            heavy = [s for s in want if s.startswith("bundled[")]
            scope = (heavy or want or queue)[0]
            self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return ByFile(config, log)
