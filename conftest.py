"""nbval runs the notebooks here: share one loaded incident between them (see notebook.load).

The cache folder is set before any kernel starts, so every notebook kernel of this test process
inherits it; it lives as long as the process.
"""

import atexit
import os
import shutil
import tempfile

from dflash_postmortem.report_cache import CACHE_ENV

if not os.environ.get(CACHE_ENV):
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="dflash-nbval-")
    atexit.register(shutil.rmtree, os.environ[CACHE_ENV], True)
