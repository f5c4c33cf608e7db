"""Opening report pages in headless Chromium (playwright), for the report and redaction tests."""

import shutil
from pathlib import Path

import pytest


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def open_pages(folder: Path, shots: Path, check):
    """Open every HTML page of a report in headless Chromium, screenshot it, run `check(page,
    name)`; return the console errors and dialogs seen."""
    exe = chromium()
    if exe is None:
        pytest.skip("no chromium on this machine (make test installs it where apt-get is available)")
    sync_api = pytest.importorskip("playwright.sync_api")
    errors, dialogs = [], []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=exe,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        # A report opens with no internet: any request other than its own files is an error.
        page.on("request", lambda r: None if r.url.startswith(("file:", "data:", "about:", "blob:"))
                else errors.append(f"network request: {r.url}"))
        for html in sorted(folder.glob("*.html")):
            page.goto(html.as_uri())
            page.wait_for_load_state("load")
            check(page, html.stem)
            page.screenshot(path=str(shots / f"{html.stem}.png"), full_page=True)
        browser.close()
    return errors, dialogs


def figures_rendered(page, name: str) -> None:
    """Every plotly div on the page drew its SVG (as many as the page has newPlot calls)."""
    expected = page.content().count("Plotly.newPlot(")
    if expected:
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20000)
        page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length >= {expected}", timeout=20000)
    plots = page.locator(".js-plotly-plot")
    assert plots.count() == expected, name
    for i in range(plots.count()):
        assert plots.nth(i).locator(".main-svg").count() >= 1, f"{name}: figure {i} has no SVG"
        assert plots.nth(i).bounding_box()["height"] > 100, f"{name}: figure {i} is collapsed"


def follow_evidence_links(page, limit: int = 3) -> list[str]:
    """Click the page's first evidence links; each must open its file view scrolled to the cited
    line, that row highlighted. Returns the refs followed."""
    followed = []
    refs = page.locator("a.pm-ref")
    start = page.url
    for i in range(min(limit, refs.count())):
        link = refs.nth(i)
        if not link.is_visible():
            continue
        ref = link.get_attribute("data-ref")
        line = int(ref.rsplit(":", 1)[1])
        link.click()
        page.wait_for_load_state("load")
        target = page.locator(":target")
        assert target.get_attribute("id") == f"L{line}", (ref, page.url)
        box, height = target.bounding_box(), page.viewport_size["height"]
        header = page.locator("header").bounding_box()
        # in view, and not hidden under the sticky header
        assert box is not None and header["y"] + header["height"] - 1 <= box["y"] < height, f"{ref}: {box}"
        assert "cited" in (target.get_attribute("class") or ""), ref
        followed.append(ref)
        page.goto(start)
        page.wait_for_load_state("load")
    return followed
