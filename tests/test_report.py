"""The batch report: papermill runs, HTML with plotly.js embedded once, checked in a real browser."""

import re
import shutil
from pathlib import Path

import pytest

from dflash_postmortem.report import build_report, notebooks


@pytest.fixture(scope="module")
def overview_report(tmp_path_factory, bundled_dir):
    out = tmp_path_factory.mktemp("report")
    index = build_report(bundled_dir, out, only=["01"], progress=False)
    return index


def test_report_writes_index_and_overview(overview_report):
    out = overview_report.parent
    assert (out / "01_overview.html").exists()
    index = overview_report.read_text()
    assert '<a href="01_overview.html">01_overview</a>' in index
    assert "h200-2gpu" in index


def test_plotly_js_is_embedded_once_and_nothing_is_fetched(overview_report):
    page = (overview_report.parent / "01_overview.html").read_text()
    # plotly.js's bundle starts with its version banner; exactly one copy per page.
    assert len(re.findall(r"plotly\.js v\d+\.\d+\.\d+", page)) == 1
    assert "cdn.plot.ly" not in page and "cdn.jsdelivr.net/npm/mathjax" not in page
    assert page.count("Plotly.newPlot(") >= 2  # throughput and GPU memory


def test_code_is_hidden_by_default(overview_report):
    page = (overview_report.parent / "01_overview.html").read_text()
    assert "load_incident(" not in page


def test_only_rejects_unknown_notebooks():
    from dflash_postmortem.errors import PostmortemError

    with pytest.raises(PostmortemError, match="no such notebook"):
        notebooks(["99"])


def test_unknown_parameter_is_rejected(tmp_path, bundled_dir):
    from dflash_postmortem.errors import PostmortemError

    with pytest.raises(PostmortemError, match=r"unknown notebook parameter\(s\) \['colour'\]"):
        build_report(bundled_dir, tmp_path, only=["01"], params={"colour": "red"}, progress=False)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
def test_overview_renders_in_headless_chromium(overview_report, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("no chromium on this machine (make test installs it where apt-get is available)")
    sync_api = pytest.importorskip("playwright.sync_api")
    errors = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=exe,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        for html in sorted(Path(overview_report.parent).glob("*.html")):
            page.goto(html.as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=str(tmp_path / f"{html.stem}.png"), full_page=True)
            if html.stem == "index":
                continue
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20000)
            # every figure drew its SVG, and the throughput figure has data traces in it
            n_plots = page.locator(".js-plotly-plot").count()
            n_svg = page.locator(".js-plotly-plot .main-svg").count()
            assert n_plots >= 2 and n_svg >= n_plots
        browser.close()
    assert errors == []
