"""Every bundled incident's report in a real headless Chromium: it opens offline, draws its
figures, and its evidence links land on their lines."""

import json
import re
from pathlib import Path

import pytest
from support.browser import figures_rendered, follow_evidence_links, reader_text_problems

from dflash_postmortem.report.build import build_report

REPO = Path(__file__).resolve().parents[2]
PAGES = ["01_overview", "02_throughput_drop", "03_failed_restart", "04_recovery", "05_replay_ab"]
# What a reader must never see: markup left raw (a backtick), a value as Python prints it, a count
# of one with a plural noun.
RAW = re.compile(r"`|\b(?:nan|NaN|NaT|nanK)\b|<NA>|(?<![\d.,])1 (?:rows|lines|files|GPUs|processes|findings|samples|attempts|runs|events|seconds)\b")

BUNDLED = sorted(p.name for p in (REPO / "data" / "incidents").iterdir() if p.is_dir())


@pytest.mark.browser
@pytest.mark.parametrize("incident", BUNDLED)  # each its own test worker where one is free (conftest.py)
def test_every_bundled_report_opens_offline_and_its_evidence_links_land(incident, tmp_path, browser, report_kernels):
    """The index and every page of each bundled incident's report in Chromium: figures drawn, no
    raw markup or raw value in the text, no console error, no network request, and evidence links
    open their line: each page's first, and
    the first into every file the report cites on its first three links of a page."""
    index = build_report(REPO / "data" / "incidents" / incident, tmp_path / "report", progress=False,
                         kernels=report_kernels)
    followed, opened = {}, set()

    def check(page, name):
        figures_rendered(page, name)
        said = RAW.findall(page.inner_text("body"))
        assert said == [], (name, said)
        assert reader_text_problems(page) == {}, name
        # each page's first link, and the first into each file no page has opened yet
        followed[name] = follow_evidence_links(page, browser.evidence_view(), opened=opened)

    errors, dialogs = browser.open_pages(index.parent, check)
    assert errors == [] and dialogs == []
    assert set(followed) == {"index", *PAGES}
    # every incident cites evidence somewhere: each finding its lines, a run without one at
    # least the starts it reviewed
    findings = json.loads((REPO / "tests" / "bundled_findings.json").read_text()).get(incident, {}).get("findings", [None])
    assert sum(len(v) for v in followed.values()) >= (3 if findings else 1), followed
