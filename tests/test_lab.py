"""The notebooks in a real JupyterLab, driven by headless Chromium: they open on the kit's kernel,
every cell runs, evidence refs are links into the Lab's files, and no output is typeset as math
(a `$` in a shell command stays a dollar)."""

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from support.browser import chromium
from support.servers import free_port, wait_until_ready

REPO = Path(__file__).resolve().parents[1]
PAGES = ["01_overview", "02_throughput_drop", "03_failed_restart", "04_recovery", "05_replay_ab"]
TOKEN = "dflash-lab-test"
# A cell that must be typeset where MathJax runs: proof the check below can fail.
CONTROL = 'from IPython.display import HTML\nHTML("<p class=\\"control\\">control $x^2$ math</p>")'


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab over a copy of the notebooks and the bundled incident, the app exposed to the
    page so the test can run every cell; stopped at the end."""
    pytest.importorskip("jupyterlab", reason="JupyterLab is the `lab` extra (make setup installs it)")
    if chromium() is None:
        pytest.skip("no chromium on this machine (make test installs it where apt-get is available)")
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(REPO / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns("*.py", "__pycache__", "*.cfg"))
    for incident in ("h200-2gpu", "h200-2gpu-replay-ab"):  # the notebooks' default incident_dir
        shutil.copytree(REPO / "data" / "incidents" / incident, root / "data" / "incidents" / incident)
    control = json.loads((root / "notebooks" / "03_failed_restart.ipynb").read_text())
    control["cells"].append({"cell_type": "code", "execution_count": None, "id": "control", "metadata": {},
                             "outputs": [], "source": CONTROL})
    (root / "notebooks" / "03_failed_restart.ipynb").write_text(json.dumps(control))
    # Lab renders only the cells near the view by default (windowing): every cell in the page, so
    # what each output shows can be read from the page after run-all
    tracker = root / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    port = free_port()
    env = {**os.environ, "DFLASH_POSTMORTEM_CACHE": str(root / "cache"), "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(root / "settings")}
    log = open(root / "lab.log", "wb")  # noqa: SIM115 - open while the server runs
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.token={TOKEN}", "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={root}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(f"{url}/api/status?token={TOKEN}", server, "JupyterLab",
                         lambda: (root / "lab.log").read_text(errors="replace"))
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture(scope="module")
def ran(lab, browser):
    """Every notebook opened in Lab, all its cells run; what each shows afterwards."""
    seen = {}
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        for name in PAGES:
            path = f"notebooks/{name}.ipynb"
            if not seen:  # Lab opens once, in a workspace of its own, on the first notebook
                page.goto(f"{lab}/lab/workspaces/dflash/tree/{path}?token={TOKEN}&reset")
            else:  # the others open in it as a reader opens them, each becoming the current one
                page.evaluate("async p => { await jupyterapp.commands.execute('docmanager:open', {path: p, factory: 'Notebook'}); }",
                              path)
            page.wait_for_function(  # this notebook is the current one: run-all acts on it
                "p => window.jupyterapp && jupyterapp.shell.currentWidget && jupyterapp.shell.currentWidget.context"
                " && jupyterapp.shell.currentWidget.context.path === p"
                " && jupyterapp.shell.currentWidget.node.querySelector('.jp-Notebook .jp-Cell')", arg=path, timeout=120000)
            page.wait_for_function(  # the kernel is up before cells are sent to it
                "() => { const w = jupyterapp.shell.currentWidget;"
                " return w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel &&"
                " w.sessionContext.session.kernel.status === 'idle'; }", timeout=120000)
            page.wait_for_timeout(1000)  # what the kernel says of itself reaches the notebook's metadata
            opened = page.evaluate(
                "async () => { const w = jupyterapp.shell.currentWidget;"
                " const info = await w.sessionContext.session.kernel.info;"
                " return {dirty: w.context.model.dirty, language: info.language_info,"
                " kept: w.context.model.getMetadata('language_info')}; }")
            page.evaluate("() => { jupyterapp.shell.activateById(jupyterapp.shell.currentWidget.id);"
                          " return jupyterapp.commands.execute('notebook:run-all-cells'); }")
            _wait_for_all_cells(page, name)
            page.wait_for_timeout(1500)  # MathJax typesets after the outputs render
            seen[name] = page.evaluate("""() => {
                const w = jupyterapp.shell.currentWidget;
                const outputs = [...w.node.querySelectorAll('.jp-OutputArea-output')];
                const control = w.node.querySelector('.control');
                return {
                  kernel: w.sessionContext.kernelDisplayName,
                  spec: w.sessionContext.session.kernel.name,
                  text: outputs.map(o => o.innerText).join('\\n'),
                  math: outputs.filter(o => !(control && o.contains(control)))
                               .map(o => o.querySelectorAll('mjx-container, .MathJax').length)
                               .reduce((a, b) => a + b, 0),
                  control_math: control ? control.querySelectorAll('mjx-container, .MathJax').length : null,
                  refs: [...w.node.querySelectorAll('a.pm-ref')].map(a => [a.dataset.ref, a.getAttribute('href')]),
                  errors: w.node.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]').length,
                };
            }""")
            seen[name]["opened"] = opened
    finally:
        page.context.close()
    return seen


def _wait_for_all_cells(page, name: str, limit_s: float = 300) -> None:
    """Until every code cell has run and the kernel is idle; a cell that fails stops Lab's run-all,
    so the failure says which cells ran and what the last one printed."""
    state = None
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        state = page.evaluate(
            "() => { const w = jupyterapp.shell.currentWidget;"
            " const code = w.content.widgets.filter(c => c.model.type === 'code');"
            " return {counts: code.map(c => c.model.executionCount), status: w.sessionContext.session.kernel.status,"
            " last: (code.filter(c => c.model.executionCount !== null).pop() || {node: {innerText: ''}}).node.innerText.slice(-800)}; }")
        if all(c is not None for c in state["counts"]) and state["status"] == "idle":
            return
        time.sleep(1)
    pytest.fail(f"{name}: not every cell ran in {limit_s:.0f} s: {state}")


@pytest.mark.browser
def test_every_notebook_runs_on_the_kits_kernel(ran):
    for name in PAGES:
        assert ran[name]["spec"] == "dflash-postmortem", name
        assert ran[name]["kernel"] == "Python (dflash-postmortem)", name
        assert ran[name]["errors"] == 0 and "Traceback" not in ran[name]["text"], name


@pytest.mark.browser
def test_opening_a_notebook_changes_nothing(ran):
    """Lab writes what the kernel says of its language into the notebook as it starts: the kit's
    kernel says what the committed notebooks hold (no interpreter version), so a notebook opened
    is not a notebook modified."""
    for name in PAGES:
        opened = ran[name]["opened"]
        assert opened["language"]["name"] == "python" and "version" not in opened["language"], name
        assert opened["kept"] == opened["language"] and opened["dirty"] is False, (name, opened)


@pytest.mark.browser
def test_no_output_is_typeset_as_math(ran):
    # The control cell outside the kit's tables is typeset: MathJax runs in this Lab.
    assert ran["03_failed_restart"]["control_math"] >= 1
    assert {name: ran[name]["math"] for name in PAGES} == dict.fromkeys(PAGES, 0)
    # the shell commands keep their dollars
    assert "kill -TERM $(cat /tmp/capture2/run/regressed.pid)" in ran["01_overview"]["text"]


@pytest.mark.browser
def test_evidence_refs_are_links_to_the_files_in_lab(lab, ran):
    # The kit writes each link relative to the notebook's folder; Lab resolves it to the file it
    # serves, which is the cited file itself.
    refs = dict(ran["03_failed_restart"]["refs"])
    href = refs["logs/operator.log:8"]
    assert href.split("?")[0] == f"{lab}/files/data/incidents/h200-2gpu/logs/operator.log"
    served = urllib.request.urlopen(f"{href.split('?')[0]}?token={TOKEN}", timeout=10).read().decode()
    assert served == (REPO / "data" / "incidents" / "h200-2gpu" / "logs" / "operator.log").read_text()
    assert all(h.split("?")[0].startswith(f"{lab}/files/data/incidents/h200-2gpu/") for _, h in ran["01_overview"]["refs"])
    assert len(ran["01_overview"]["refs"]) >= 10
