"""Settings for every test process, the notebooks' (nbval) too.

nbval runs the notebooks here: they share one loaded incident (see notebook.load). The cache
folder is set before any kernel starts, so every notebook kernel of this test process inherits
it; it lives as long as the process.
"""

import atexit
import os
import shutil
import tempfile

import pytest

from dflash_postmortem.report_cache import CACHE_ENV

if not os.environ.get(CACHE_ENV):
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="dflash-nbval-")
    atexit.register(shutil.rmtree, os.environ[CACHE_ENV], True)

# The tests run on more workers than cores (Makefile: much of a test run waits on kernels,
# servers, browsers and replayed trainers); torch and numpy in each keep to one thread, so
# the workers share the cores instead of each spreading over all of them.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    """The test workers (pytest-xdist, `--dist loadgroup`) take a file at a time, so a file's
    module fixtures are made once; a test that names a group of its own (a replay scenario, one
    bundled incident's report) goes to whichever worker is free, beside the rest of its file."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
