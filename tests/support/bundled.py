"""The bundled incidents as most tests read them: through the kit's own cache of loaded incidents
(report_cache, the one every report page reads), which the root conftest points at one folder for
all test processes. The first process to need an incident loads and detects it; the others read
it back (0.7 CPU-s for all 18 against 10 loading them). `tests/test_bundled_findings.py` loads
each one afresh: the pin on what the kit finds does not go through the cache; it then keeps
what it loaded there (`keep`), for the incident's report test, which runs next on the same worker
(the root conftest), to read back instead of loading and detecting it again."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem.report import cache as report_cache
from dflash_postmortem.report.notebook import load_cached

INCIDENTS = Path(__file__).resolve().parents[2] / "data" / "incidents"
NAMES = sorted(p.name for p in INCIDENTS.iterdir() if p.is_dir())


def loaded(name: str) -> tuple[pm.Incident, pd.DataFrame]:
    """A bundled incident and its findings (the load report lists what was assumed: its warnings
    are silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_cached(str(INCIDENTS / name))


def keep(name: str, inc: pm.Incident, findings: pd.DataFrame) -> None:
    """Keep a bundled incident loaded and detected elsewhere in the cache, as `loaded` would
    have kept it (the entry of a load with the default options)."""
    if report_cache.unsafe_folder(report_cache.cache_dir()) is None:
        report_cache.write(report_cache.entry(INCIDENTS / name), inc, findings)
