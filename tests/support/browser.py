"""Opening report pages in headless Chromium (playwright), for the report and redaction tests.

One browser per test process (`browser` fixture, tests/conftest.py): starting Chromium costs a
second or two, and every report test opens a dozen pages. The reports open in one tab of one
browser context, as a reader opens one report after another: a fresh context starts a renderer
and compiles plotly.js again, about two CPU-seconds a report (docs/benchmarks.md)."""

import shutil
from pathlib import Path

import pytest


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """A headless Chromium, started on first use and closed at the end of the test process."""

    def __init__(self):
        self._playwright = self._browser = None
        self._tab = self._view = None

    def _started(self):
        if self._browser is None:
            exe = chromium()
            if exe is None:
                pytest.skip("no chromium on this machine (make test installs it where apt-get is available)")
            sync_api = pytest.importorskip("playwright.sync_api")
            self._playwright = sync_api.sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=exe,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                      "--disable-sync", "--no-first-run", "--disable-quic"],
            )
        return self._browser

    def new_page(self, **options):
        """A page in a context of its own (closed with `page.context.close()`). Tests that need a
        browser take it from here: a second Playwright in one process finds this one's event loop
        running and refuses to start."""
        return self._started().new_context(**options).new_page()

    def close(self):
        if self._browser is not None:
            self._browser.close()
            self._playwright.stop()

    def _tabs(self):
        """The tab reports open in and the tab beside it that evidence links open in, one of each
        per test process (the view tab: the report page is not drawn again for every link)."""
        if self._tab is None:
            context = self._started().new_context(viewport={"width": 1400, "height": 1000})
            self._tab, self._view = context.new_page(), context.new_page()
        return self._tab, self._view

    def open_pages(self, folder: Path, check):
        """Open every HTML page of a report, run `check(page, name)` on each; return the console
        errors and dialogs seen."""
        errors, dialogs = [], []
        page, view = self._tabs()
        context = page.context

        def console(m):
            if m.type == "error":
                errors.append(m.text)

        def dialog(d):
            dialogs.append(d.message)
            d.dismiss()

        def request(r):
            # A report opens with no internet: any request other than its own files is an error.
            if not r.url.startswith(("file:", "data:", "about:", "blob:")):
                errors.append(f"network request: {r.url}")

        listeners = [(tab, event, handler) for tab in (page, view)
                     for event, handler in (("console", console), ("pageerror", lambda e: errors.append(str(e))),
                                            ("dialog", dialog))] + [(context, "request", request)]
        for target, event, handler in listeners:
            target.on(event, handler)
        try:
            for html in sorted(folder.glob("*.html")):
                page.goto(html.as_uri())
                page.wait_for_load_state("load")
                check(page, html.stem)
        finally:
            for target, event, handler in listeners:
                target.remove_listener(event, handler)
            page.goto("about:blank")  # the next report starts from an empty tab
        return errors, dialogs

    def evidence_view(self):
        """The tab evidence links open in (see `follow_evidence_links`)."""
        return self._tabs()[1]


def figures_rendered(page, name: str) -> None:
    """Every plotly div on the page drew its SVG (as many as the page has newPlot calls)."""
    # counted in the page's scripts, not its serialized DOM (drawn figures make that large)
    expected = page.evaluate("[...document.scripts].reduce((n, s) => n + s.text.split('Plotly.newPlot(').length - 1, 0)")
    if expected:
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20000)
        page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length >= {expected}", timeout=20000)
    plots = page.locator(".js-plotly-plot")
    assert plots.count() == expected, name
    for i in range(plots.count()):
        assert plots.nth(i).locator(".main-svg").count() >= 1, f"{name}: figure {i} has no SVG"
        assert plots.nth(i).bounding_box()["height"] > 100, f"{name}: figure {i} is collapsed"


# What a reader must see whole or not at all, read from the page as drawn (issue #28): a flag as
# Python prints it in a table cell, a GPU left unknown, a text cut without its whole form a hover
# away, a headline number with a second bar inside its card, a sentence of the story set as
# console output.
_READER_CHECKS = """() => {
  const cells = [...document.querySelectorAll('td, th')].map(e => e.innerText.trim());
  const leaves = [...document.querySelectorAll('body *')].filter(e => !e.closest('svg, script, style')
      && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.includes('\u2026')));
  const cut = leaves.filter(e => {
      const t = e.closest('[title]');
      return !(t && t.title.length > e.innerText.replace('\u2026', '').trim().length);
  }).map(e => e.innerText.trim().slice(0, 80));
  return {
    flags: cells.filter(t => t === 'True' || t === 'False'),
    unknown_gpu: (document.body.innerText.match(/GPU \\?(?![\\w])/g) || []).length,
    cut: cut,
    double_bars: [...document.querySelectorAll('.numbers > div div')].filter(e => getComputedStyle(e).borderLeftWidth !== '0px').length,
    story_in_pre: [...document.querySelectorAll('pre')].filter(e => /^\\s*(?:At|The start|The restart) \\d/.test(e.innerText)).length,
  };
}"""


def reader_text_problems(page) -> dict:
    """What a reader trips on in the page's text (see _READER_CHECKS): each list or count empty."""
    found = page.evaluate(_READER_CHECKS)
    return {k: v for k, v in found.items() if v}


def follow_evidence_links(page, view, limit: int = 3, opened: set[str] | None = None) -> list[str]:
    """The page's first evidence links, each opened where its click leads, in `view` (a tab beside
    the page, so the report page is not drawn again for every link): the file view must scroll to
    the cited line, that row highlighted, in view below the sticky header. Returns the refs.
    `opened`: the files whose views the report's other pages already opened; after the page's
    first link, a link into one of them is passed over (the same view, another line)."""
    followed = []
    refs = page.locator("a.pm-ref")
    for i in range(min(limit, refs.count())):
        link = refs.nth(i)
        if not link.is_visible():
            continue
        ref = link.get_attribute("data-ref")
        file = ref.rsplit(":", 1)[0]
        if opened is not None and followed and file in opened:
            continue
        line = int(ref.rsplit(":", 1)[1])
        view.goto(link.evaluate("a => a.href"))  # the link's URL, resolved as a click resolves it
        view.wait_for_load_state("load")
        target = view.locator(":target")
        assert target.get_attribute("id") == f"L{line}", (ref, view.url)
        box, height = target.bounding_box(), view.viewport_size["height"]
        header = view.locator("header").bounding_box()
        # in view, and not hidden under the sticky header
        assert box is not None and header["y"] + header["height"] - 1 <= box["y"] < height, f"{ref}: {box}"
        assert "cited" in (target.get_attribute("class") or ""), ref
        followed.append(ref)
        if opened is not None:
            opened.add(file)
    return followed
