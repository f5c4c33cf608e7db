"""What `dflash-postmortem inspect` prints, on the real captures: the story first, one line per
file, every line within the width, every cited line whole with -v (terminal_view.py)."""


import pytest
from support.bundled import NAMES, loaded

from dflash_postmortem.present import terminal_view


def _cited(findings) -> set[str]:
    """Every `file:line` detect() cites: the findings' evidence and their causes' evidence."""
    return ({ref for refs in findings["evidence"] for ref in refs}
            | {ref for links in findings["caused_by"] for link in links for ref in link["evidence"]})


def _sections(out: str) -> list[str]:
    return [line for line in out.splitlines() if line and not line.startswith(" ")]


def test_terminal_text(seed_incident, seed_findings):
    # Wide enough that no sentence wraps: the content, whatever the terminal.
    out = terminal_view.format_for_terminal(seed_incident, seed_findings, width=200)
    assert out.startswith("What happened\n  At 20:20:09 UTC throughput fell from 21.5K tok/s to 12.4K tok/s")
    assert "\nCause chain\n" in out and "failed_restart" in out
    # the impact in the same units as every page: seconds, K tok/s, GPU-hours to the hundredth
    assert "  time to detect 4,291 s, to mitigate 4,582 s, to recover 4,786 s" in out
    assert ("  8 GPUs held (GPUs named in incident.toml roles); GPU-hours lost 5.05 of 10.64 held; "
            "tokens lost 48.8M against 21.5K tok/s") in out


@pytest.mark.parametrize("name", NAMES)
def test_inspect_fits_the_width_and_shows_every_cited_line_whole(name, repo_dir):
    inc, found = loaded(name)
    cited = _cited(found)
    assert cited or found.empty, "every finding cites evidence"
    if found.empty:  # the incidents recorded without one: the page says so and fits
        page = terminal_view.render_inspect(inc, verbose=True, width=100, findings=found)
        assert "went wrong that the evidence shows" in page and max(len(x) for x in page.splitlines()) <= 100
        return
    lengths = {}
    for width in (100, 60):
        lines = terminal_view.render_inspect(inc, width=width, findings=found).splitlines()
        assert max(len(line) for line in lines) <= width
        # whole: each ref is a word of its own (a list's comma aside), never broken across lines
        words = {w.rstrip(",") for line in lines for w in line.split()}
        assert cited <= words, sorted(cited - words)
        lengths[width] = len(lines)
    assert lengths[60] > lengths[100]  # what did not fit was wrapped, not cut


def test_inspect_tells_what_happened_first_then_one_line_per_file(bundled_incident):
    out = terminal_view.render_inspect(bundled_incident, width=100)
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
    assert rows[terminal_view.shorten_label(long_path, 33)] == "wandb-debug-log: no rows; 10 of 12 lines skipped"
    assert long_path not in out
    # the details are behind -v
    assert "skipped 26: repeated header line" not in out and "Frames:" not in out


def test_verbose_shows_every_detail_whole(bundled_incident, bundled_findings):
    out = terminal_view.render_inspect(bundled_incident, verbose=True, width=100, findings=bundled_findings)
    assert max(len(line) for line in out.splitlines()) <= 100
    for f in bundled_incident.load_report.files:
        assert f"\n  {f.path}\n" in out  # whole, on a line of its own where the status would not fit beside it
    assert "      skipped 26: repeated header line (lines 47, 48, 93, 94, 139)\n" in out
    assert "      assumed: no time zone in file, read as UTC\n" in out
    assert "\nFrames:\n  gpus               1206 rows\n" in out
    # each finding's detail, and the text of each line it cites, next to the ref
    assert "the shell could not open\n      /workspace/train_opt2.log for the redirect" in out
    assert "        logs/operator.log:9      bash: line 1: /workspace/train_opt2.log: No such file or directory\n" in out
    assert "bash: line 1:" not in terminal_view.render_inspect(bundled_incident, width=100, findings=bundled_findings)


def test_labels_end_with_an_ellipsis_and_the_width_has_a_floor(bundled_incident, bundled_findings):
    path = "wandb/wandb/offline-run-20261130_052027-3lsy4q7j/logs/debug-internal.log"
    assert terminal_view.shorten_label(path, 33) == "…3lsy4q7j/logs/debug-internal.log"  # 33 characters
    assert terminal_view.shorten_label("logs/train.log", 33) == "logs/train.log"
    narrow = terminal_view.render_inspect(bundled_incident, width=10, findings=bundled_findings).splitlines()
    assert max(len(line) for line in narrow) == terminal_view.MIN_WIDTH


def test_inspect_says_where_the_gpu_time_went(bundled_incident, bundled_findings):
    from dflash_postmortem.present.terminal_view import render_inspect

    out = render_inspect(bundled_incident, width=100, findings=bundled_findings)
    section = out.split("Where the GPU time went\n", 1)[1].split("\n\n", 1)[0]
    assert all(len(line) <= 100 for line in section.splitlines())
    each = "(288 s): productive 154 s (53%), degraded 21 s (7%), starting 94 s (33%), restarting 19 s (7%)"
    assert " ".join(section.split()) == f"GPU 0, GPU 1 each {each}"
