"""The notebooks as files (parameters, stripped outputs, short cells) and as runs: on the seed
reconstruction, and on folders that hold only one kind of source."""

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from dflash_postmortem.report.build import build_report, notebooks
from dflash_postmortem.report.lab_kernel import LANGUAGE_INFO

CHECK = "# HEADLINE"
MAX_CELL_LINES = 7  # a longer cell is a function that belongs in the package
REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "data" / "incidents" / "seed-8gpu-reconstruction"


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.stem)
def test_every_parameter_is_typed_and_commented(path):
    import papermill  # at use: every test worker collects this module

    params = papermill.inspect_notebook(str(path))
    assert {"incident_dir", "timezone"} <= set(params)
    for name, p in params.items():
        assert p["inferred_type_name"] not in (None, "None"), f"{path.stem}: {name} has no type"
        assert p["help"].strip(), f"{path.stem}: {name} has no comment"
    assert params["incident_dir"]["default"].strip("\"'").startswith("../data/incidents/")


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.stem)
def test_committed_stripped_with_kernelspec_and_short_cells(path):
    nb = nbformat.read(str(path), as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "dflash-postmortem"  # the kit's kernel, installed with it
    # what that kernel says of its language, so that opening the notebook in Lab changes nothing
    assert nb.metadata["language_info"] == LANGUAGE_INFO and "version" not in LANGUAGE_INFO
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert cell.outputs == [] and cell.execution_count is None, f"{path.stem}: outputs not stripped"
        if cell is not tagged[0]:
            assert len(cell.source.splitlines()) <= MAX_CELL_LINES, cell.source
        # JupyterLab does not wrap code: a line past a cell's width runs off it
        assert max(map(len, cell.source.splitlines()), default=0) <= 79, cell.source
    assert sum(c.source.startswith(CHECK) for c in nb.cells if c.cell_type == "code") == 1


def test_notebook_files_match_their_generator():
    """scripts/make_notebooks.py is the source: the committed files are what it writes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_notebooks", REPO / "scripts" / "make_notebooks.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for name, cells in gen.NOTEBOOKS_SPEC.items():
        built = gen.build(name, cells)
        committed = nbformat.read(str(REPO / "notebooks" / f"{name}.ipynb"), as_version=4)
        assert [c.source for c in built.cells] == [c.source for c in committed.cells], name


@pytest.fixture(scope="module")
def seed_report(tmp_path_factory, report_kernels) -> Path:
    return build_report(SEED, tmp_path_factory.mktemp("seed"), progress=False, kernels=report_kernels)


def _executed_text(index: Path, name: str) -> str:
    nb = nbformat.read(str(index.parent / "executed" / f"{name}.ipynb"), as_version=4)
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            out.append(o.get("text", ""))
            out += [v for k, v in o.get("data", {}).items() if k in ("text/plain", "text/html") and isinstance(v, str)]
    return "\n".join(out)


def test_seed_reconstruction_tells_the_write_ups_story(seed_report):
    # The write-up's figures: 21.5K tok/s baseline, 12.4K degraded, a restart that never came up.
    assert "baseline 21.5K tok/s -> degraded 12.4K tok/s (0.58)" in _executed_text(seed_report, "01_overview")
    assert re.search(r"baseline band crossed: 21.5K -> 12.4K tok/s at \S+, 12.\dK -> 2\d.\dK", _executed_text(seed_report, "02_throughput_drop"))
    restart = _executed_text(seed_report, "03_failed_restart")
    assert re.search(r"failed restarts: [1-9]", restart)
    roles = _executed_text(seed_report, "04_recovery")
    assert "allocated, idle" in roles  # GPU 5 holds memory and does nothing after the relaunch
    index = seed_report.read_text()
    assert "throughput fell from 21.5K tok/s to 12.4K tok/s" in index


# Each notebook on a folder holding one kind of source, picked so that what the notebook needs
# most is the missing part: it must run and say what it has no data from.
SINGLE_SOURCE = {
    "01_overview": "logs/smi_stream.csv",
    "02_throughput_drop": "logs/smi_stream.csv",
    "03_failed_restart": "logs/train.log",
    "04_recovery": "logs/train.log",
    "05_replay_ab": "logs/ps_aux_snapshots.txt",
}


@pytest.mark.parametrize("name, source", SINGLE_SOURCE.items(), ids=list(SINGLE_SOURCE))
def test_notebook_runs_on_a_single_source(tmp_path, bundled_dir, name, source, report_kernels):
    folder = tmp_path / "incident"
    (folder / Path(source).parent).mkdir(parents=True)
    shutil.copy(bundled_dir / source, folder / source)
    index = build_report(folder, tmp_path / "report", only=[name], progress=False, kernels=report_kernels)
    text = _executed_text(index, name)
    assert "no data from" in text, text[:2000]
    assert "Traceback" not in text
