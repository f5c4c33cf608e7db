"""Settings for every test process, the notebooks' (nbval) too.

nbval runs the notebooks here: they share one loaded incident (see notebook.load). The cache
folder is set before any kernel starts, so every notebook kernel of this test process inherits
it; it lives as long as the process.
"""

import atexit
import os
import shutil
import tempfile

from dflash_postmortem.report_cache import CACHE_ENV

if not os.environ.get(CACHE_ENV):
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="dflash-nbval-")
    atexit.register(shutil.rmtree, os.environ[CACHE_ENV], True)

# The tests run on more workers than cores (Makefile: much of a test run waits on kernels,
# servers, browsers and replayed trainers); torch and numpy in each keep to one thread, so
# the workers share the cores instead of each spreading over all of them.
os.environ.setdefault("OMP_NUM_THREADS", "1")


# Files whose tests each go to whichever worker is free (each builds a whole report); every other
# file's tests run on one worker, in order: its module fixtures are made once, and a notebook's
# cells run in one kernel.
EACH_TEST_ALONE = {"tests/test_report_bundled.py"}


def pytest_xdist_make_scheduler(config, log):
    """The test workers (pytest-xdist) take a file at a time (EACH_TEST_ALONE aside). xdist's
    own `loadgroup` cannot express it on pytest >= 9.2, whose test ids it can no longer rewrite."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in EACH_TEST_ALONE else path

    return ByFile(config, log)
