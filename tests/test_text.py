"""Every sentence, on the real captures: the formatters, the notebooks' headlines (the same lines
tests/notebook_headlines.json holds), the verdicts, the report index's summary and the terminal."""

import json

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem import text, units
from dflash_postmortem.detect import replay_ab, throughput

T = pd.Timestamp("2026-11-30 05:22:17.687", tz="UTC")


def test_one_formatter_each():
    assert units.clock(T) == "05:22:17"
    assert units.clock(T, date=True, utc=True) == "2026-11-30 05:22:17 UTC"
    assert units.clock(None) == "" and units.clock(pd.NaT, missing="?") == "?"
    assert (units.duration(91.0), units.duration(4785.6), units.duration(None)) == ("91 s", "4,786 s", "n/a")
    assert (units.tok_s(146812.5), units.tok_s(74918.0), units.tok_s(21500)) == ("146.8K", "74.9K", "21.5K")
    assert (units.gpu_hours(0.0253), units.gpu_hours(5.049), units.gpu_hours(1234.5)) == ("0.03", "5.05", "1,234.50")
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
                        "05:23:01 restart at 05:23:01 never came up: log path does not exist, process never started"]
    _, body, evidence = claims.items[1]
    assert "/workspace/train_opt2.log" in body and evidence[0] == "logs/operator.log:8"
    assert "<code>logs/operator.log:8</code>" in claims._repr_html_()
    marked = text.Claims([("<b>x</b>", "a <script> line", ["log:1 <i>"])])._repr_html_()
    assert "<script>" not in marked and "&lt;script&gt;" in marked and "&lt;i&gt;" in marked
    assert text.Missing("no <data>")._repr_html_().endswith(">no &lt;data&gt;</p>")
    assert repr(text.verdicts(bundled_findings.iloc[:0])) == "no failed restart: every launch came up"


def test_what_happened_with_nothing_found():
    inc = pm.Incident()
    assert text.what_happened(inc, pm.detect(inc)) == [
        "Nothing went wrong that the evidence shows between ? and ?: "
        "no throughput regression, stall, failed restart or start that never trained."]
    assert pm.what_happened is text.what_happened


def test_summary_lines_end_with_the_evidence(bundled_incident, bundled_findings):
    lines = text.summary_lines(bundled_incident, bundled_findings)
    assert lines[:-1] == pm.what_happened(bundled_incident, bundled_findings,
                                          pm.timeline(bundled_incident, bundled_findings).impact)
    assert lines[-1] == "39 source files loaded, 0 could not be read, 2 not recognised."


def test_terminal_text(seed_incident, seed_findings):
    out = text.format_for_terminal(seed_incident, seed_findings)
    assert out.startswith("What happened\n  At 20:20:09 UTC throughput fell from 21.5K tok/s to 12.4K tok/s")
    assert "\nCause chain\n" in out and "failed_restart" in out
    # the impact in the same units as every page: seconds, K tok/s, GPU-hours to the hundredth
    assert "  time to detect 4,291 s, to mitigate 4,582 s, to recover 4,786 s" in out
    assert ("  8 GPUs held (GPUs named in incident.toml roles); GPU-hours lost 5.05 of 10.64 held; "
            "tokens lost 48,837,975 against 21.5K tok/s") in out


def test_inspect_prints_the_load_report_then_the_findings(bundled_incident):
    out = text.render_inspect(bundled_incident)
    head, _, rest = out.partition("\n\nWhat happened\n")
    assert head.splitlines()[:3] == ["Incident: h200-2gpu", f"Root: {bundled_incident.root}",
                                     "Clock: UTC (sources without a zone read as UTC)"]
    assert "\nFiles: 41 — 39 loaded, 0 failed, 2 not recognised\n" in head
    assert head.endswith("\nSpan: 2026-11-30 05:20:20 UTC .. 2026-11-30 05:25:11 UTC")
    assert rest.startswith("  At 05:22:17 UTC throughput fell from 146.8K tok/s to 74.9K tok/s")
    assert "\nFindings (4)\n  [warning] 2026-11-30 05:20:00 stale_process: " in out
    assert "\nTimeline (UTC)\n  05:22:17  first sign " in out
    assert "time to detect 41 s, to mitigate 60 s, to recover 91 s" in out
