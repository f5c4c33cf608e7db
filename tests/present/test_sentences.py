"""Every sentence, on the real captures: the formatters, the notebooks' headlines (the same lines
tests/notebook_headlines.json holds), the verdicts, the report index's summary and the terminal."""

import json
import warnings

import pandas as pd
import pytest
from support.bundled import NAMES, loaded
from support.incidents import smi_stream_only

import dflash_postmortem as pm
from dflash_postmortem import units
from dflash_postmortem.analysis import replay_ab
from dflash_postmortem.detect import throughput
from dflash_postmortem.present import sentences as text

T = pd.Timestamp("2026-11-30 05:22:17.687", tz="UTC")


def test_one_formatter_each():
    assert units.clock(T) == "05:22:17"
    assert units.clock(T, date=True, utc=True) == "2026-11-30 05:22:17 UTC"
    assert units.clock(None) == "" and units.clock(pd.NaT, missing="?") == "?"
    # a time its source gives only roughly says how much later it may be; to the second says nothing more
    assert units.clock_within(T, 2.0) == "05:22:17 (up to 2 s later)"
    assert units.clock_within(T, 1.0) == units.clock_within(T, None) == units.clock_within(T, 0.0) == "05:22:17"
    assert units.start_clock(T, 60.0) == "05:22 (to the minute)"
    assert (units.duration(91.0), units.duration(4785.6), units.duration(None)) == ("91 s", "4,786 s", "n/a")
    assert (units.tok_s(146812.5), units.tok_s(74918.0), units.tok_s(21500)) == ("146.8K", "74.9K", "21.5K")
    assert (units.gpu_hours(0.0253), units.gpu_hours(5.049), units.gpu_hours(1234.5)) == ("0.03", "5.05", "1,234.50")
    # tokens lost are rates times seconds: three digits, not eight
    assert [units.tokens(v) for v in (8966020.0, 48837975.0, 979389.0, 512.0, 2.5e9)] == ["8.97M", "48.8M", "979K", "512", "2.5B"]
    # no number, no digits: a missing level or count reads n/a, never nanK
    for missing in (float("nan"), None, pd.NA):
        assert units.tok_s(missing) == units.gpu_hours(missing) == units.tokens(missing) == "n/a"
    assert units.share(64.0, 75.0) == "64 s (85%)" and units.share(64.0, float("nan")) == units.share(64.0, 0) == "64 s"
    assert text.one_line("a\n  b\tc", 10) == "a b c" and text.one_line("x" * 12, 10) == "x" * 9 + "…"
    assert text.gpu_label("node17", 5, True) == "node17:GPU 5" and text.gpu_label("node17", 5, False) == "GPU 5"


@pytest.fixture(scope="module")
def headlines(repo_dir) -> dict:
    """The reviewed lines every notebook's `# HEADLINE` cell prints on the bundled capture."""
    return {k: v.strip() for k, v in json.loads((repo_dir / "tests" / "notebook_headlines.json").read_text()).items()}


def test_headlines_say_what_was_reviewed(bundled_incident, bundled_findings, headlines):
    segments = throughput.segments(throughput.series(bundled_incident))
    assert text.headline_text(bundled_findings) == headlines["01_overview"]
    assert text.levels_text(segments) == headlines["02_throughput_drop"]
    assert text.restart_text(bundled_findings) == headlines["03_failed_restart"]
    assert text.recovery_text(bundled_findings) == headlines["04_recovery"]
    assert text.effects_text(replay_ab.replay_effects(bundled_incident)) == headlines["05_replay_ab"]


def test_headlines_without_evidence():
    nothing = pm.detect(pm.Incident())
    assert text.headline_text(nothing) == "no throughput regression found"
    assert text.levels_text(throughput.segments(throughput.series(pm.Incident()))) == (
        "no data from training logs or wandb runs (train/tok_per_s)")
    assert text.restart_text(nothing) == "failed restarts: 0; slow starts: 0; stale processes: 0"
    assert text.recovery_text(nothing) == "no throughput drop, nothing to recover from"
    assert text.effects_text(replay_ab.replay_effects(pm.Incident())).startswith("no data from replay runs")


def test_verdicts_cite_their_evidence_and_escape_it(bundled_findings):
    claims = text.verdicts(bundled_findings)
    headings = [h for h, _, _ in claims.items]
    assert headings == ["05:20:00 stale python process 579 predates the launch at 05:23:01",
                        # its title names its time: not said twice
                        "restart at 05:23:01 never came up: log path does not exist, process never started"]
    _, body, evidence = claims.items[1]
    assert "/workspace/train_opt2.log" in body and evidence[0] == "logs/operator.log:8"
    assert "<code>logs/operator.log:8</code>" in claims._repr_html_()
    # the commands the sentences quote are code in HTML, not text between backticks
    assert "`" in str(claims) and "`" not in claims._repr_html_()
    assert text.html_text("a `kill -- -789` &amp; `x`") == "a <code>kill -- -789</code> &amp; <code>x</code>"
    marked = text.Claims([("<b>x</b>", "a <script> line", ["log:1 <i>"])])._repr_html_()
    assert "<script>" not in marked and "&lt;script&gt;" in marked and "&lt;i&gt;" in marked
    assert text.Missing("no <data>")._repr_html_().endswith(">no &lt;data&gt;</p>")
    assert repr(text.verdicts(bundled_findings.iloc[:0])) == "no failed restart: every launch came up"


def test_what_happened_with_nothing_found():
    inc = pm.Incident()
    assert text.what_happened(inc, pm.detect(inc)) == [
        "No evidence to tell from: 0 files read, none with a row (no step, GPU sample, process or event)."]
    assert pm.what_happened is text.what_happened


def test_nothing_went_wrong_only_where_training_ran(tmp_path, bundled_dir, repo_dir):
    """GPU samples alone show no training: the page says what it saw, not that all went well."""
    inc = smi_stream_only(tmp_path, bundled_dir)
    assert text.what_happened(inc, pm.detect(inc)) == [
        f"No training seen in 1 file: no training step between 05:20:20 UTC and 05:25:09 UTC "
        f"({len(inc.gpus):,} GPU samples), so nothing can be said of how it went."]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ran = pm.load_incident(repo_dir / "data" / "incidents" / "h200-1gpu-alternating")  # a healthy run
    assert text.what_happened(ran, pm.detect(ran)) == [
        "Nothing went wrong that the evidence shows between 02:48:12 UTC and 02:48:54 UTC: "
        "no throughput regression, stall, failed restart or start that never trained."]


def test_the_sources_line_says_what_the_evidence_was(bundled_incident):
    assert text.sources_line(bundled_incident) == "39 source files loaded, 0 could not be read, 2 not recognised"


def test_terminal_text(seed_incident, seed_findings):
    # Wide enough that no sentence wraps: the content, whatever the terminal.
    out = text.format_for_terminal(seed_incident, seed_findings, width=200)
    assert out.startswith("What happened\n  At 20:20:09 UTC throughput fell from 21.5K tok/s to 12.4K tok/s")
    assert "\nCause chain\n" in out and "failed_restart" in out
    # the impact in the same units as every page: seconds, K tok/s, GPU-hours to the hundredth
    assert "  time to detect 4,291 s, to mitigate 4,582 s, to recover 4,786 s" in out
    assert ("  8 GPUs held (GPUs named in incident.toml roles); GPU-hours lost 5.05 of 10.64 held; "
            "tokens lost 48.8M against 21.5K tok/s") in out




def _cited(findings) -> set[str]:
    """Every `file:line` detect() cites: the findings' evidence and their causes' evidence."""
    return ({ref for refs in findings["evidence"] for ref in refs}
            | {ref for links in findings["caused_by"] for link in links for ref in link["evidence"]})


@pytest.mark.parametrize("name", NAMES)
def test_inspect_fits_the_width_and_shows_every_cited_line_whole(name, repo_dir):
    inc, found = loaded(name)
    cited = _cited(found)
    assert cited or found.empty, "every finding cites evidence"
    if found.empty:  # the incidents recorded without one: the page says so and fits
        page = text.render_inspect(inc, verbose=True, width=100)
        assert "Nothing went wrong" in page and max(len(x) for x in page.splitlines()) <= 100
        return
    lengths = {}
    for width in (100, 60):
        lines = text.render_inspect(inc, width=width).splitlines()
        assert max(len(line) for line in lines) <= width
        # whole: each ref is a word of its own (a list's comma aside), never broken across lines
        words = {w.rstrip(",") for line in lines for w in line.split()}
        assert cited <= words, sorted(cited - words)
        lengths[width] = len(lines)
    assert lengths[60] > lengths[100]  # what did not fit was wrapped, not cut


def _sections(out: str) -> list[str]:
    return [line for line in out.splitlines() if line and not line.startswith(" ")]


def test_inspect_tells_what_happened_first_then_one_line_per_file(bundled_incident):
    out = text.render_inspect(bundled_incident, width=100)
    rep = bundled_incident.load_report
    assert _sections(out) == [
        "Incident: h200-2gpu",
        "Span: 2026-11-30 05:20:20 UTC .. 2026-11-30 05:25:11 UTC (sources without a zone read as UTC)",
        "What happened", "Cause chain", "Findings (4)", "Timeline (UTC)", "Impact", "Where the GPU time went",
        f"Files in {bundled_incident.root}: 41 — 39 loaded, 0 failed, 2 not recognised",
        "-v shows every file's skipped lines, assumptions and notes, the clock offsets, the frames, and each",
    ]
    assert "\nWhat happened\n  At 05:22:17 UTC throughput fell from 146.8K tok/s to 74.9K tok/s" in out
    assert "\nFindings (4)\n  [warning] 2026-11-30 05:20:00 stale_process: " in out
    assert "\nTimeline (UTC)\n  05:22:17  first sign " in out
    assert "time to detect 41 s, to mitigate 60 s, to recover 91 s" in out
    # one line per file: the path (its end, after "…", where it is long), format, rows, skipped
    files = out.split("\nFiles in ")[1].split("\n\n")[0].splitlines()[1:]
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in files if not line.startswith("   ")}
    assert len(rows) == len(rep.files) == 41
    assert rows["logs/dmon_um.txt"] == "nvidia-smi-dmon: gpus 576; 28 of 604 lines skipped"
    assert rows["logs/operator.log"] == "shell-transcript: events 24, gpus 4"
    assert rows["snap/apps_idle_noheader.csv"] == "not recognised: empty file"
    long_path = "wandb/wandb/offline-run-20261130_052027-3lsy4q7j/logs/debug-internal.log"
    assert rows[text.shorten_label(long_path, 33)] == "wandb-debug-log: no rows; 10 of 12 lines skipped"
    assert long_path not in out
    # the details are behind -v
    assert "skipped 26: repeated header line" not in out and "Frames:" not in out


def test_verbose_shows_every_detail_whole(bundled_incident):
    out = text.render_inspect(bundled_incident, verbose=True, width=100)
    assert max(len(line) for line in out.splitlines()) <= 100
    for f in bundled_incident.load_report.files:
        assert f"\n  {f.path}\n" in out  # whole, on a line of its own where the status would not fit beside it
    assert "      skipped 26: repeated header line (lines 47, 48, 93, 94, 139)\n" in out
    assert "      assumed: no time zone in file, read as UTC\n" in out
    assert "\nFrames:\n  gpus               1206 rows\n" in out
    # each finding's detail, and the text of each line it cites, next to the ref
    assert "the shell could not open\n      /workspace/train_opt2.log for the redirect" in out
    assert "        logs/operator.log:9      bash: line 1: /workspace/train_opt2.log: No such file or directory\n" in out
    assert "bash: line 1:" not in text.render_inspect(bundled_incident, width=100)


def test_labels_end_with_an_ellipsis_and_the_width_has_a_floor(bundled_incident):
    path = "wandb/wandb/offline-run-20261130_052027-3lsy4q7j/logs/debug-internal.log"
    assert text.shorten_label(path, 33) == "…3lsy4q7j/logs/debug-internal.log"  # 33 characters
    assert text.shorten_label("logs/train.log", 33) == "logs/train.log"
    narrow = text.render_inspect(bundled_incident, width=10).splitlines()
    assert max(len(line) for line in narrow) == text.MIN_WIDTH


def test_inspect_says_where_the_gpu_time_went(bundled_incident):
    from dflash_postmortem.present.sentences import render_inspect

    out = render_inspect(bundled_incident, width=100)
    section = out.split("Where the GPU time went\n", 1)[1].split("\n\n", 1)[0]
    assert all(len(line) <= 100 for line in section.splitlines())
    each = "(288 s): productive 154 s (53%), degraded 21 s (7%), starting 94 s (33%), restarting 19 s (7%)"
    assert " ".join(section.split()) == f"GPU 0, GPU 1 each {each}"
