"""The batch report on the bundled capture: every page written, self-contained, right numbers,
and rendered in a real browser."""

import html
import json
import os
import re
from pathlib import Path

import pytest
from support.browser import figures_rendered

from dflash_postmortem.errors import MissingDependencyError, PostmortemError
from dflash_postmortem.report import kernels as report_kernels
from dflash_postmortem.report.build import build_report, notebooks

REPO = Path(__file__).resolve().parents[2]
PAGES = ["01_overview", "02_throughput_drop", "03_failed_restart", "04_recovery", "05_replay_ab"]


@pytest.fixture(scope="session")
def full_report(tmp_path_factory, bundled_dir, report_kernels) -> Path:
    """All notebooks on the real 2 x H200 capture, built once for every test in this file."""
    return build_report(bundled_dir, tmp_path_factory.mktemp("report"), progress=False, kernels=report_kernels)


def _page(index: Path, name: str) -> str:
    return (index.parent / f"{name}.html").read_text(encoding="utf-8")


def test_every_notebook_has_a_page_linked_from_the_index(full_report):
    assert [p.stem for p in notebooks()] == PAGES
    index = full_report.read_text()
    for name in PAGES:
        assert f"<a href='{name}.html'>" in index
        assert (full_report.parent / "executed" / f"{name}.ipynb").exists()
    assert "class='failed'" not in index


def test_index_is_a_summary_card(full_report):
    index = full_report.read_text()
    # when: the capture's first and last stamps
    assert "2026-11-30 05:20:20 – 05:25:11 UTC" in index
    # why: the cause chain, each link with the lines that show it, opening on their view
    chain = index[index.index("Cause chain"):index.index("Headline numbers")]
    assert "the shell could not open /workspace/train_opt2.log" in chain
    assert 'href="evidence/logs/operator.log.html#L9"' in chain
    # the headline numbers, the overview figure, and the question each page answers
    assert re.search(r"baseline throughput</div><div class='v'>14\d\.\dK tok/s", index)
    assert "time to detect" in index and "GPU-hours lost" in index
    assert index.count('class="plotly-graph-div"') == 1
    # where the GPU time went: one bar of both GPUs' seconds by class, the same as the ledger's
    card = index[index.index("Where the GPU time went"):index.index("<h2>Overview")]
    widths = dict(re.findall(r"<span class='(\w+)' style='width:([\d.]+)%", card))
    assert list(widths) == ["productive", "degraded", "starting", "restarting"]
    assert abs(sum(float(w) for w in widths.values()) - 100) < 0.01
    assert "GPU 0, GPU 1 each (288 s): productive 154 s (53%)" in card
    for question in ("What happened, when, and what did it cost?", "Why did throughput drop?",
                     "Did the restart come up?", "Did it recover, and fully?", "What does each knob cost?"):
        assert f"<strong>{question}</strong>" in index


def test_every_evidence_link_opens_its_line(full_report, bundled_dir):
    """Each link into a file view lands on a row holding that very line of the file, escaped."""
    out = full_report.parent
    links = 0
    for page in [full_report, *(out / f"{n}.html" for n in PAGES)]:
        for href in set(re.findall(r'href="(evidence/[^"#]+)#L(\d+)"', page.read_text())):
            view, line = out / href[0], int(href[1])
            rel = href[0][len("evidence/"):-len(".html")]
            want = (bundled_dir / rel).read_text(encoding="utf-8").split("\n")[line - 1]
            row = re.search(rf'<tr id="L{line}" class="cited">.*?<td class="t">(.*?)</td></tr>', view.read_text(), re.S)
            assert row and html.unescape(row.group(1)) == want, (page.name, href)
            links += 1
    assert links >= 25


def test_index_says_what_happened(full_report):
    index = full_report.read_text()
    # The capture: 146.8K tok/s baseline, the regressed run at about half of it, one failed restart.
    m = re.search(r"At 05:22:17 UTC throughput fell from (\d+\.\d)K tok/s to (\d+\.\d)K tok/s", index)
    assert m, index
    assert 140 < float(m.group(1)) < 155 and 60 < float(m.group(2)) < 90
    # The cause, the missing path and the stale process, by name.
    assert "started with --fast-linear-attn 0 --use-reentrant 0" in index
    assert ("The restart at 05:23:01 UTC never came up: log path does not exist, process never started: "
            "the shell could not open /workspace/train_opt2.log") in index
    assert "the stale python process 579, older than the launch" in index
    # page 01 tells the same sentences as text to read: a list wrapped at words, not console output
    page = _page(full_report, "01_overview")
    said = re.split(r"class=.pm-sentences.", page, maxsplit=1)[1].split("</ul>", 1)[0]
    assert said.count("<li>") >= 3 and "At 05:22:17 UTC throughput fell from" in said
    assert "never came up" in said and "<pre>At 05:22:17" not in page


def test_plotly_js_is_written_once_beside_the_pages(full_report):
    from plotly.offline import get_plotlyjs_version

    js = (full_report.parent / "plotly.min.js").read_text(encoding="utf-8")
    # the plotly.js that plotly.py writes figures for, and it knows every trace type they draw
    assert re.search(rf"plotly\.js[^\n]* v{re.escape(get_plotlyjs_version())}\n", js[:2000])
    knows = set(re.findall(r'moduleType:"trace",name:"(\w+)"', js))
    pages = [full_report, *(full_report.parent / f"{name}.html" for name in PAGES)]
    drawn = {trace.get("type", "scatter") for page in pages for trace in _traces(page.read_text(encoding="utf-8"))}
    assert {"scatter", "bar"} <= drawn and drawn <= knows, (drawn, knows)
    # one copy for the folder: no page carries plotly.js inline
    assert [p.name for p in full_report.parent.glob("*.js")] == ["plotly.min.js"]


def test_plotly_js_for_another_plotly_py_is_plotly_pys_own(tmp_path, monkeypatch):
    """The vendored cartesian bundle only for the plotly.js version it is; figures written for
    another may need trace types it lacks, so plotly.py's full bundle is written instead."""
    import plotly.offline

    from dflash_postmortem.report.build import write_plotly_js
    from dflash_postmortem.vendor import PLOTLY_CARTESIAN, PLOTLY_JS_VERSION

    monkeypatch.setattr(plotly.offline, "get_plotlyjs_version", lambda: PLOTLY_JS_VERSION)
    assert write_plotly_js(tmp_path).read_bytes() == PLOTLY_CARTESIAN.read_bytes()
    monkeypatch.setattr(plotly.offline, "get_plotlyjs_version", lambda: "99.0.0")
    assert write_plotly_js(tmp_path).read_text(encoding="utf-8") == plotly.offline.get_plotlyjs()


def _traces(page: str) -> list[dict]:
    """The traces of every figure on a page: the data list of each `Plotly.newPlot(id, data, ...)`
    (a figure's template lists every trace type; only its data says what it draws)."""
    decoder, traces = json.JSONDecoder(), []
    for call in re.finditer(r"Plotly\.newPlot\(\s*", page):
        _, at = decoder.raw_decode(page, call.end())  # the div's id
        at = re.compile(r"\s*,\s*").match(page, at).end()
        data, _ = decoder.raw_decode(page, at)
        traces += data
    return traces


@pytest.mark.parametrize("name", PAGES)
def test_pages_load_plotly_from_the_folder_and_fetch_nothing(full_report, name):
    page = _page(full_report, name)
    # plotly.js from the folder where the page draws a figure; nothing where it draws none
    drawn = "Plotly.newPlot(" in page
    assert re.findall(r'<script[^>]*\ssrc="([^"]*)"', page) == (["plotly.min.js"] if drawn else [])
    assert not re.search(r"plotly\.js v\d+\.\d+\.\d+", page)
    assert len(page.encode()) < 1_000_000  # the page itself stays small without the library
    # No script is loaded from anywhere: the report opens with no internet.
    assert not re.search(r'<script[^>]*\ssrc="https?://', page)
    assert "load_incident(" not in page and "from dflash_postmortem" not in page  # code hidden


def test_overview_headline_and_no_missing_source(full_report):
    page = _page(full_report, "01_overview")
    m = re.search(r"baseline (\d+\.\d)K tok/s -&gt; degraded (\d+\.\d)K tok/s \((0\.\d\d)\) -&gt; recovery (\d+\.\d)K", page)
    assert m, "headline line missing"
    assert float(m.group(3)) < 0.6 and float(m.group(4)) > 140
    assert "GPU-hours lost" in page and "time to detect" in page
    assert "no data from" not in page  # every source of the overview exists in this capture


def test_restart_page_names_the_missing_log_path(full_report):
    page = _page(full_report, "03_failed_restart")
    assert "/workspace/train_opt2.log" in page
    assert "logs/operator.log:" in page  # verdicts cite transcript lines
    assert "stale (predates the launch)" in page


def test_replay_page_marks_runs_that_changed_several_knobs(full_report):
    # h200-2gpu's `regressed` run flipped two knobs at once: its drop cannot be split between them.
    page = _page(full_report, "05_replay_ab")
    assert "regressed (use_reentrant=0, fast_linear_attn=0): 74.9K (0.51x)" in page
    assert "several knobs at once: not separable" in page


def test_only_rejects_unknown_notebooks():
    with pytest.raises(PostmortemError, match="no such notebook"):
        notebooks(["99"])


def test_unknown_parameter_is_rejected(tmp_path, bundled_dir, report_kernels):
    with pytest.raises(PostmortemError, match=r"unknown notebook parameter\(s\) \['colour'\]"):
        build_report(bundled_dir, tmp_path, only=["01"], params={"colour": "red"}, progress=False, kernels=report_kernels)


def test_static_export_without_kaleido_says_how_to_get_it(monkeypatch):
    import sys

    from dflash_postmortem.report.build import export_static

    monkeypatch.setitem(sys.modules, "kaleido", None)  # import fails as if not installed
    with pytest.raises(MissingDependencyError, match="kaleido"):
        export_static(None, Path("unused"))


@pytest.mark.browser
def test_every_page_renders_in_headless_chromium(full_report, tmp_path, browser):
    seen = {}

    def check(page, name):
        figures_rendered(page, name)
        seen[name] = page.locator(".js-plotly-plot").count()
        if name == "01_overview":
            # where the GPU time went: a bar per GPU, a segment per class it spent time in
            bars = page.locator(".js-plotly-plot").first
            assert bars.locator(".barlayer .trace").count() == 4 and bars.locator(".barlayer path").count() == 8
            # the stacked overview: five panels sharing one time axis, with data traces drawn
            fig = page.locator(".js-plotly-plot").nth(1)
            assert fig.locator(".cartesianlayer .subplot").count() == 5
            assert fig.locator(".heatmaplayer image").count() == 2  # memory and utilization per GPU
            assert fig.locator(".scatterlayer .trace").count() >= 6  # 3 runs, lifetimes, events, findings

    errors, dialogs = browser.open_pages(full_report.parent, check)
    if os.environ.get("DFLASH_UPDATE_SCREENSHOTS"):
        _docs_screenshots(full_report.parent, browser)
    assert sorted(seen) == sorted([*PAGES, "index"])
    assert seen["01_overview"] == 2 and seen["02_throughput_drop"] == 2 and seen["04_recovery"] == 2
    assert errors == [] and dialogs == []
    # a picture of the page as drawn (one viewport: a full-page shot of every page cost this test
    # two thirds of its time; `DFLASH_UPDATE_SCREENSHOTS=1` takes the docs' full pages)
    shot = browser.new_page()
    shot.goto((full_report.parent / "01_overview.html").as_uri())
    figures_rendered(shot, "01_overview")
    shot.screenshot(path=str(tmp_path / "01_overview.png"))
    shot.context.close()
    assert (tmp_path / "01_overview.png").stat().st_size > 20_000


def _sanitize(text: str) -> str:
    """The replacements of notebooks/nbval_sanitize.cfg: clocks, PIDs and paths never decide."""
    import configparser

    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(REPO / "notebooks" / "nbval_sanitize.cfg")
    for section in cfg.sections():
        text = re.sub(cfg[section]["regex"], cfg[section]["replace"], text)
    return text


def test_headline_cells_say_what_they_said_when_reviewed(full_report):
    """Each notebook's `# HEADLINE` cell, executed on the real capture, says the reviewed line.

    tests/notebook_headlines.json is written by `scripts/make_notebooks.py --expected`; a change
    there is a change in what the report says, and shows up in review as a diff.
    """
    import json

    import nbformat

    expected = json.loads((REPO / "tests" / "notebook_headlines.json").read_text(encoding="utf-8"))
    assert set(expected) == set(PAGES)
    for name in PAGES:
        nb = nbformat.read(str(full_report.parent / "executed" / f"{name}.ipynb"), as_version=4)
        (cell,) = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("# HEADLINE")]
        (shown,) = [o for o in cell.outputs if o.get("output_type") == "execute_result"]
        assert _sanitize(shown["data"]["text/plain"]) == _sanitize(expected[name]), name
        # read as a paragraph of text, not console output
        assert shown["data"]["text/html"].startswith("<p class='pm-headline'") and "<pre" not in shown["data"]["text/html"]



def _docs_screenshots(report: Path, browser) -> None:
    """docs/report.md's pictures, taken from this report: the index, the overview figure and the
    view of the line the failed restart cites (DFLASH_UPDATE_SCREENSHOTS=1 rewrites them)."""
    docs = REPO / "docs" / "img"
    docs.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    try:
        page.goto((report / "index.html").as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg")
        page.screenshot(path=str(docs / "report-index.png"))
        page.goto((report / "01_overview.html").as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg")
        page.locator(".js-plotly-plot").first.screenshot(path=str(docs / "report-overview.png"))
        page.set_viewport_size({"width": 1600, "height": 600})
        page.goto((report / "evidence" / "logs" / "operator.log.html").as_uri() + "#L9")
        page.screenshot(path=str(docs / "report-evidence.png"))
    finally:
        page.context.close()


def _notebook(path: Path, *sources: str) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "dflash-postmortem", "display_name": "Python (dflash-postmortem)",
                                 "language": "python"}
    params = nbformat.v4.new_code_cell('incident_dir: str = ""  # the incident')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {path.stem}?"), params,
                *(nbformat.v4.new_code_cell(s) for s in sources)]
    nbformat.write(nb, str(path))


def test_a_failing_page_is_named_and_the_pages_after_it_run_clean(tmp_path, bundled_dir, monkeypatch):
    # The pages share one kernel: a page that fails leaves it usable, and none of its variables
    # reach the next page.
    book = tmp_path / "notebooks"
    book.mkdir()
    _notebook(book / "01_first.ipynb", "print('first ran on', incident_dir.split('/')[-1])")
    _notebook(book / "02_broken.ipynb", "leak = 1", "raise ValueError('boom')")
    _notebook(book / "03_after.ipynb", "assert 'leak' not in globals(), 'a variable of page 02 survived'",
              "print('after ran')")
    monkeypatch.setenv("DFLASH_NOTEBOOKS", str(book))
    monkeypatch.setattr(report_kernels, "MAX_KERNELS", 1)  # the three pages in one kernel, in order
    with pytest.raises(PostmortemError, match=r"notebook\(s\) failed: 02_broken \(ValueError: boom\)"):
        build_report(bundled_dir, tmp_path / "out", progress=False)
    out = tmp_path / "out"
    assert "class='failed'>failed: ValueError: boom" in (out / "index.html").read_text()
    assert "first ran on h200-2gpu" in (out / "01_first.html").read_text()
    assert "after ran" in (out / "03_after.html").read_text()
    assert "ValueError" in (out / "02_broken.html").read_text()  # the failing page is written too


def test_a_kernel_that_dies_before_its_first_reply_is_started_again_on_new_ports(monkeypatch):
    """Kernels starting at the same moment (the report's own, another test worker's) may pick one
    free port: the loser dies binding it, before replying to kernel_info (a CI run at 1363d56
    failed so). The kernel is started again by a new manager (new ports), and its page runs."""
    warm_up, tries = report_kernels._warm_up, []

    def dies_once(km):
        tries.append(km.connection_file)
        if len(tries) == 1:
            km.shutdown_kernel(now=True)
            raise RuntimeError("Kernel died before replying to kernel_info")
        warm_up(km)

    monkeypatch.setattr(report_kernels, "_warm_up", dies_once)
    with report_kernels.shared_kernels(pages=1, progress=False) as kernels:
        batch = kernels.run(["page"], lambda km, page: (km.is_alive(), km.connection_file), lambda page, result: None)
        (alive, used), = batch.results().values()
    assert len(tries) == 2 and tries[0] != tries[1]
    assert alive and used == tries[1]


def test_pages_fail_with_why_where_no_kernel_starts(monkeypatch):
    # no kernel at all (twice dead before its first reply): each page fails with why, where the
    # report had waited for a kernel to take its pages forever
    import threading

    def dies(km):
        km.shutdown_kernel(now=True)
        raise RuntimeError("Kernel died before replying to kernel_info")

    monkeypatch.setattr(report_kernels, "_warm_up", dies)
    out = {}

    def report():
        with report_kernels.shared_kernels(pages=2, progress=False) as kernels:
            batch = kernels.run(["a", "b"], lambda km, page: page, lambda page, result: None)
            try:
                batch.results()
            except PostmortemError as e:
                out["error"] = str(e)

    t = threading.Thread(target=report, daemon=True)
    t.start()
    t.join(timeout=120)
    assert not t.is_alive(), "the report waits for a kernel that never started"
    assert out["error"] == "no kernel could start for the pages: RuntimeError: Kernel died before replying to kernel_info"
