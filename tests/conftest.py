"""Shared test fixtures: where the real data lives (all of it inside the repository)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUNDLED = REPO / "data" / "incidents" / "h200-2gpu"
# Public samples the repository owns (SOURCES.tsv says where each came from).
REAL_WORLD = REPO / "tests" / "fixtures" / "real-world"


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every browser test of this test process (support/browser.py)."""
    from support.browser import Browser

    b = Browser()
    yield b
    b.close()


@pytest.fixture(scope="session")
def report_kernels():
    """Kernels shared by the reports this test process builds (`build_report(..., kernels=)`):
    they start once, as `dflash-postmortem report A B C` starts them once. One, not one a page:
    the test workers already keep every core busy, and each kernel costs seconds of CPU to
    start and warm up (the pages queue for it, as they would on a small machine; while a
    worker waits on its kernel, the other workers have the cores)."""
    from dflash_postmortem.report.kernels import shared_kernels

    with shared_kernels(pages=1, progress=False) as kernels:
        yield kernels


@pytest.fixture
def cli_report_kernels(monkeypatch, report_kernels):
    """`dflash-postmortem report` called in this test process builds on the shared kernels above
    instead of starting its own (a kernel costs seconds of CPU to start; how a report starts its
    kernels is tested in tests/report/test_build.py and, from a fresh install, test_packaging.py)."""
    import contextlib

    from dflash_postmortem.report import kernels

    monkeypatch.setattr(kernels, "shared_kernels", lambda *args, **kwargs: contextlib.nullcontext(report_kernels))


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO


@pytest.fixture(scope="session")
def bundled_dir() -> Path:
    """The real 2 x H200 capture committed in the repository."""
    return BUNDLED


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return REAL_WORLD


SEED = REPO / "data" / "incidents" / "seed-8gpu-reconstruction"


@pytest.fixture(scope="session")
def bundled_incident(bundled_dir):
    """The bundled H200 capture, loaded once for the detector and timeline tests."""
    import warnings

    from dflash_postmortem import load_incident

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_incident(bundled_dir)


@pytest.fixture(scope="session")
def seed_dir() -> Path:
    """The synthetic reconstruction of the write-up's 8-GPU incident (scripts/make_seed_reconstruction.py)."""
    return SEED


@pytest.fixture(scope="session")
def seed_incident(seed_dir):
    import warnings

    from dflash_postmortem import load_incident

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_incident(seed_dir)


@pytest.fixture(scope="session")
def bundled_findings(bundled_incident):
    from dflash_postmortem.detect import detect

    return detect(bundled_incident)


@pytest.fixture(scope="session")
def seed_findings(seed_incident):
    from dflash_postmortem.detect import detect

    return detect(seed_incident)


@pytest.fixture(scope="session")
def line_at():
    """line_at(root, 'file:line') -> the text of that line (fails the test if it does not exist)."""

    def read(root: Path, ref: str) -> str:
        path, _, n = ref.rpartition(":")
        # Lines end at \n only: a terminal log's carriage returns are inside its lines.
        lines = (root / path).read_bytes().decode("utf-8", "replace").split("\n")
        assert n.isdigit() and 1 <= int(n) <= len(lines), f"{ref}: no such line"
        return lines[int(n) - 1]

    return read


# The modules that take the most CPU (docs/benchmarks.md), first: xdist's loadscope hands whole
# modules to the workers in collection order, and the watch's replays, collected last
# (tests/watch), ran alone at the end of the run while the other workers were done. The stories
# of the recorded incidents come after the pins, which keep each incident they load in the
# shared cache (support/bundled.py): by then the stories read most of them back.
_HEAVY_FIRST = (
    "watch/test_live.py", "test_bundled_findings.py", "report/test_bundled_reports.py",
    "loaders/training_log/test_bulk_lines.py", "loaders/test_following.py", "test_lab.py", "test_corpus.py",
    "detect/test_recorded_incidents.py", "test_fuzz.py", "store/test_fleet.py", "present/test_figures.py",
    "store/test_object_storage.py", "model/test_carried.py", "test_cli.py", "replay/test_train.py",
)


@pytest.hookimpl(trylast=True)  # (after pytest's own reordering by parametrized fixtures)
def pytest_collection_modifyitems(config, items):
    rank = {module: i for i, module in enumerate(_HEAVY_FIRST)}
    # (a stable sort: each module's tests, and the other modules, keep their order)
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0].removeprefix("tests/"), len(rank)))
