"""Every bundled incident's words (its pinned sentences and finding titles) read clean and cite
lines its files hold; the reports of the fewest incidents that show every kind of finding, figure
and evidence view built, read and opened in a real headless Chromium: each opens offline, draws
its figures, and its evidence links land on their lines. Those reports' front page and overview
page are built (there every finding, sentence and evidence line of the incident is shown); a page
about some findings (a drop, a failed start, a recovery) is built and drawn for the fewest
incidents that have every kind of finding it is about (`PAGE_KINDS`). The replay page draws replay
runs, which no bundled incident's findings are about: tests/report/test_build.py draws every page
of a report."""

import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from support.browser import figures_rendered, follow_evidence_links, reader_text_problems

from dflash_postmortem.loaders.encoding import detect as detect_encoding
from dflash_postmortem.present.evidence_views import WHOLE_FILE_LINES, read_lines
from dflash_postmortem.report.build import build_report

REPO = Path(__file__).resolve().parents[2]
# What a reader must never see: markup left raw (a backtick), a value as Python prints it, a count
# of one with a plural noun.
RAW = re.compile(r"`|\b(?:nan|NaN|NaT|nanK)\b|<NA>|(?<![\d.,])1 (?:rows|lines|files|GPUs|processes|findings|samples|attempts|runs|events|seconds)\b")

BUNDLED = sorted(p.name for p in (REPO / "data" / "incidents").iterdir() if p.is_dir())
# what each bundled incident's report says, pinned (tests/test_bundled_findings.py)
PINNED = json.loads((REPO / "tests" / "bundled_findings.json").read_text())


def _features(incident: str) -> set[str]:
    """What an incident's report shows that another's may not: the kinds of its findings and the
    figures of its impact (tests/bundled_findings.json, what its pages say), and the kinds of
    evidence view its files open in (`_views`)."""
    said = PINNED.get(incident, {})
    out = {"finding:" + f["id"].split("@")[0] for f in said.get("findings", [])} or {"finding:none"}
    out |= {"impact:" + k for k, v in said.get("impact", {}).items() if v is not None}
    return out | _views(incident)


def _views(incident: str) -> set[str]:
    """The kinds of evidence view (present/evidence_views.py) the incident's files would open in,
    as the report writes them: a binary file's records listed, a file shown whole or as windows
    around its cited lines, a file read in another encoding than UTF-8 or with terminal escapes
    taken out. (A file's name says nothing of its view: a `.log` and a `.csv` are both text.)"""
    root, out = REPO / "data" / "incidents" / incident, set()
    for p in root.rglob("*"):
        if not p.is_file() or p.name == "README.md":
            continue
        lines = read_lines(root, str(p.relative_to(root)))
        if lines is None:
            out.add("view:binary")
            continue
        out.add("view:windowed" if len(lines) > WHOLE_FILE_LINES else "view:whole")
        with open(p, "rb") as f:
            head = f.read(4096)
        codec = detect_encoding(head).codec
        out |= {f"view:{codec}"} if codec != "utf-8" else set()
        out |= {"view:escapes"} if b"\x1b" in head else set()
    return out


def _covering(incidents: list[str]) -> list[str]:
    """The fewest incidents (greedily, ties by name) whose reports together show every feature of
    all of them: drawn in Chromium, they draw every kind of finding, figure and evidence view
    the bundled reports have. Each Chromium page costs about half a second of CPU, most of it
    plotly.js; the 22 reports' 132 pages were a quarter of the test run's CPU."""
    features = {name: _features(name) for name in incidents}
    left, chosen = set().union(*features.values()), []
    while left:
        best = max(sorted(features), key=lambda n: len(features[n] & left))
        chosen.append(best)
        left -= features[best]
    return sorted(chosen)


IN_BROWSER = _covering(BUNDLED)
# the pages every report has built (each page costs its kernel a second of CPU, and Chromium half
# a second to draw)
OVERVIEW = ["01_overview"]
# The pages about some findings, and the kinds of finding each is about (its headline, tables and
# figures: notebooks/)
PAGE_KINDS = {
    "02_throughput_drop": {"throughput_regression"},
    "03_failed_restart": {"failed_restart", "slow_start", "never_trained", "stale_process", "verified_start"},
    "04_recovery": {"recovery", "partial_recovery", "no_recovery", "role_mismatch", "idle_allocated_gpu"},
}


def _page_cover(page: str) -> list[str]:
    """The fewest incidents (greedily; of those whose whole report is drawn anyway first, then by
    name) whose findings have every kind the page is about that the bundled reports have."""
    kinds = {n: {f[len("finding:"):] for f in _features(n) if f.startswith("finding:")} & PAGE_KINDS[page]
             for n in BUNDLED}
    left, chosen = set().union(*kinds.values()), []
    while left:
        best = max(sorted(kinds, key=lambda n: n not in IN_BROWSER), key=lambda n: len(kinds[n] & left))
        chosen.append(best)
        left -= kinds[best]
    return chosen


PAGE_COVER = {page: _page_cover(page) for page in PAGE_KINDS}
DRAWN = sorted(set(IN_BROWSER).union(*PAGE_COVER.values()))


def _pages(incident: str) -> list[str]:
    """The pages built for an incident's report: its overview, and each page it is in the cover of."""
    return OVERVIEW + [page for page, cover in PAGE_COVER.items() if incident in cover]


_BUILT: dict[str, Path] = {}


@pytest.fixture
def built(incident, tmp_path_factory, report_kernels) -> Path:
    """The incident's report index, built once per test process (its tests share a worker:
    conftest.py schedules a bundled incident's tests together), with its pages (`_pages`)."""
    if incident not in _BUILT:
        _BUILT[incident] = build_report(REPO / "data" / "incidents" / incident, tmp_path_factory.mktemp("report"),
                                        only=_pages(incident), progress=False, kernels=report_kernels)
    return _BUILT[incident]


# Elements whose text a reader sees apart from what is around them (innerText breaks a line or
# a cell there); the text inside one runs on (a number in <b> and its noun are one phrase).
_APART = {"p", "div", "td", "th", "tr", "li", "ul", "ol", "table", "br", "pre", "section", "header", "footer",
          "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "details", "summary", "caption", "figcaption", "nav"}


class _Text(HTMLParser):
    """A page's text as a reader gets it: what is outside scripts and styles, apart where the
    page sets it apart."""

    def __init__(self):
        super().__init__()
        self.parts, self._skip = [], 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("script", "style")
        if tag in _APART:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style") and self._skip > 0
        if tag in _APART:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def _text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return "".join(parser.parts)


# a value as Python prints it, or a count of one with a plural noun, in the words a report shows
# (the pinned sentences keep their backticks: the report draws them as code)
RAW_VALUE = re.compile(RAW.pattern.removeprefix("`|"))


@pytest.mark.parametrize("incident", BUNDLED)
def test_every_bundled_incidents_words_read_clean_and_its_causes_cite_lines_its_files_hold(incident):
    """What every bundled incident's report says (its pinned sentences and finding titles,
    tests/bundled_findings.json) holds no raw value, and each cause a finding cites names a line
    its file holds. Built and read whole (below) are the reports of the incidents that together
    show every kind of finding, figure, page and evidence view (`DRAWN`): a report is the same
    notebooks and views drawn from these words and lines, and the other 47 builds were a tenth of
    the test run's CPU."""
    said = PINNED[incident]
    words = said["what_happened"] + [f["title"] for f in said["findings"]]
    assert [w for w in words if RAW_VALUE.search(w)] == []
    root = REPO / "data" / "incidents" / incident
    for ref in (c for f in said["findings"] for c in f["caused_by"] if c.startswith("event:")):
        path, _, line = ref.removeprefix("event:").rpartition(":")
        lines = read_lines(root, path)
        assert (root / path).is_file() and (lines is None or int(line) <= len(lines)), ref


@pytest.mark.parametrize("incident", DRAWN)  # each its own test worker where one is free (conftest.py)
def test_every_drawn_report_reads_clean_and_its_evidence_links_have_their_lines(incident, built):
    """Each covering incident's report, built: the index and its pages (`_pages`), no raw markup or
    raw value in their text, and every evidence link's view holds the line it names."""
    pages = {p.stem: p.read_text(encoding="utf-8") for p in built.parent.glob("*.html")}
    assert set(pages) == {"index", *_pages(incident)}
    links, views = 0, {}
    for name, html in pages.items():
        assert RAW.findall(_text(html)) == [], name
        for ref, href in re.findall(r'<a class="pm-ref" data-ref="([^"]+)" href="([^"]+)"', html):
            target, _, anchor = unescape(href).partition("#")
            view = built.parent / unquote(target)
            assert view.is_file(), (name, ref, href)
            if view not in views:
                views[view] = view.read_text(encoding="utf-8")
            assert anchor == "L" + ref.rsplit(":", 1)[1] and f'id="{anchor}"' in views[view], (name, ref, href)
            links += 1
    findings = PINNED.get(incident, {}).get("findings", [None])
    assert links >= (3 if findings else 1), links


@pytest.mark.browser
@pytest.mark.parametrize("incident", DRAWN)
def test_the_reports_covering_every_feature_open_offline_in_chromium(incident, built, browser):
    """The reports of IN_BROWSER and of each page's cover in Chromium, index and every page built:
    figures drawn, no raw markup or raw value in the text as drawn, no console error, no network
    request, and evidence links open their line: each page's first, and the first into every file
    the report cites on its first three links of a page."""
    followed, opened = {}, set()

    def check(page, name):
        figures_rendered(page, name)
        said = RAW.findall(page.inner_text("body"))
        assert said == [], (name, said)
        assert reader_text_problems(page) == {}, name
        # each page's first link, and the first into each file no page has opened yet
        followed[name] = follow_evidence_links(page, browser.evidence_view(), opened=opened)

    errors, dialogs = browser.open_pages(built.parent, check)
    assert errors == [] and dialogs == []
    assert set(followed) == {"index", *_pages(incident)}
    # every incident cites evidence on its overview: each finding its lines (two files at least
    # among its first links), a run without one at least the starts it reviewed
    findings = PINNED.get(incident, {}).get("findings", [None])
    assert len(followed["01_overview"]) >= (2 if findings else 1), followed


def test_the_covering_reports_show_every_feature_and_are_fewer():
    """The cover is a cover: every feature of every bundled report is in one of IN_BROWSER's,
    and it leaves reports out (else it saves nothing)."""
    every = set().union(*(_features(n) for n in BUNDLED))
    covered = set().union(*(_features(n) for n in IN_BROWSER))
    assert every == covered and {"finding:stall", "view:binary", "view:escapes", "impact:tokens_lost"} <= every
    assert len(IN_BROWSER) < len(BUNDLED)
    # each page about some findings is drawn with every kind of them that a bundled report has
    for page, kinds in PAGE_KINDS.items():
        had = {k for k in kinds if f"finding:{k}" in every}
        drawn = {k for n in PAGE_COVER[page] for k in kinds if f"finding:{k}" in _features(n)}
        assert had and drawn == had, page
