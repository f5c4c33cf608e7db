"""Write notebooks/NN_topic.ipynb from the cell lists below (outputs stripped, kernelspec kept).

    .venv/bin/python scripts/make_notebooks.py            # regenerate all notebooks
    .venv/bin/python scripts/make_notebooks.py --expected # also record the checked headline outputs

Cells are short calls into the package; the story each notebook tells lives here in one place.
A cell whose first line is `# HEADLINE` shows the notebook's one-line headline. With --expected
every notebook is executed on the bundled h200-2gpu capture and the headlines are written to
tests/notebook_headlines.json, which tests/report/test_build.py compares with the report's executed
notebooks. The notebooks themselves are always written with every output stripped.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from dflash_postmortem.report.lab_kernel import LANGUAGE_INFO

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
CHECK = "# HEADLINE"
HEADLINES = REPO / "tests" / "notebook_headlines.json"
BUNDLED = "../data/incidents/h200-2gpu"

# Lines fit a code cell's width in JupyterLab (79 characters): Lab does not wrap code.
PARAMETERS = '''# Parameters: papermill overrides these; in JupyterLab, point them
# at your own incident (a folder, optionally with incident.toml).
incident_dir: str = "../data/incidents/h200-2gpu"  # evidence folder
timezone: str = ""  # IANA zone for sources without one; "": incident.toml/UTC'''

LOAD = '''import dflash_postmortem as pm
from dflash_postmortem.present import figures, sentences, tables
from dflash_postmortem.report.notebook import load, setup

setup()
inc, findings = load(incident_dir, timezone)'''

NOTEBOOKS_SPEC = {
    "01_overview": [
        ("md", "# What happened, when, and what did it cost?\n\nThe incident at a glance: three sentences from the findings, the "
               "headline numbers, the timeline, and every source on one UTC clock in one figure."),
        ("params", PARAMETERS),
        ("code", LOAD + "\ntl = pm.timeline(inc, findings)"),
        ("md", "## What happened"),
        ("code", "sentences.Sentences(pm.what_happened(inc, findings, tl.impact))"),
        ("md", "## Headline numbers\n\nBaseline and degraded throughput, time to detect, mitigate and recover, "
               "and what the incident cost in GPU-hours and tokens."),
        ("code", f"{CHECK}\nsentences.Headline(sentences.headline_text(findings))"),
        ("code", "tables.headline(findings, tl)"),
        ("md", "## Where the GPU time went\n\nEvery second of the incident window on every GPU a job used, in one "
               "class: productive, degraded (the share lost to a drop), starting, stalled, redone (steps "
               "repeated after a resume), restarting, down. Each row sums to the window."),
        ("code", "tables.gpu_time(inc)"),
        ("code", "figures.plot_gpu_time(pm.ledger(inc))"),
        ("md", "The same GPU time by job and attempt, with the lines that show each part: an attempt's start "
               "and first step, the line where it stalled or slowed, the end before a gap and the start after it."),
        ("code", "tables.gpu_time_by_attempt(inc)"),
        ("md", "## Timeline"),
        ("code", "tables.timeline_table(tl)"),
        ("md", "## Everything on one clock\n\nThroughput per run, GPU memory and utilization per GPU, what was "
               "alive when, and the events and findings. Hover a marker to see the evidence line it cites "
               "(`file:line`); shaded bands are findings."),
        ("code", "figures.plot_overview(**tables.overview(inc, findings))"),
        ("md", "## Findings"),
        ("code", "tables.findings_table(findings)"),
        ("md", "## What was loaded\n\nEvery file in the folder, the format it was recognised as, lines read, parsed "
               "and skipped, and the assumptions made (for example a file with no time zone)."),
        ("code", 'columns = ["path", "format", "read", "parsed", "skipped", "rows",\n'
                 '           "start", "end", "assumptions"]\ninc.load_report.to_frame()[columns]'),
        ("md", "How the evidence was read: each attempt's stall threshold and where it came from, how its ranks' "
               "rates were combined, and where its lines' rates swing (levels are taken over windows)."),
        ("code", 'from dflash_postmortem.model import reading_notes\n\nsentences.Sentences(reading_notes(inc) or ["nothing assumed"])'),
    ],
    "02_throughput_drop": [
        ("md", "# Why did throughput drop?\n\nThe change point(s) in tokens/s, the level before and after, how each "
               "run's step throughput is distributed, what changed between the runs (flags, config), the warnings "
               "and errors near the change, and the root-cause candidates ranked by the evidence behind them."),
        ("params", PARAMETERS),
        ("code", LOAD),
        ("code", "from dflash_postmortem.analysis import throughput_levels\nfrom dflash_postmortem.detect import throughput\n\n"
                 "series = throughput.series(inc)\nsegments = throughput.segments(series)"),
        ("md", "## Change points and levels"),
        ("code", f"{CHECK}\nsentences.Headline(sentences.levels_text(segments))"),
        ("code", "crossings = throughput_levels.band_crossings(segments)\n"
                 "figures.plot_change_points(series, segments, crossings)"),
        ("code", "tables.levels(segments)"),
        ("md", "## Step throughput per run"),
        ("code", "figures.plot_throughput_distribution(series)"),
        ("md", "## What changed between the runs\n\nCommand-line flags of each launch and the runs' wandb config. "
               "Bookkeeping settings (run name, duration, PID file) are listed last."),
        ("code", "tables.config_diff(inc, findings)"),
        ("md", "## Warnings and errors near the change"),
        ("code", "tables.warnings_near(inc, findings, minutes=10)"),
        ("md", "## Root-cause candidates, ranked by evidence"),
        ("code", "tables.root_causes(inc, findings)"),
    ],
    "03_failed_restart": [
        ("md", "# Did the restart come up?\n\nFor each launch, a checklist with times: process started, log created, "
               "log growing, GPU memory held by the new PID, first training step. Then the `ps` view (stale "
               "processes against new ones) and the verdict with the exact evidence lines."),
        ("params", PARAMETERS),
        ("code", LOAD),
        ("md", "## Launch checklist"),
        ("code", f"{CHECK}\nsentences.Headline(sentences.restart_text(findings))"),
        ("code", "tables.launch_checklist(inc, findings)"),
        ("md", "## Processes seen by `ps`: stale against new"),
        ("code", "tables.process_view(inc, findings)"),
        ("md", "## Verdicts and evidence"),
        ("code", "sentences.verdicts(findings)"),
    ],
    "04_recovery": [
        ("md", "# Did it recover, and fully?\n\nTime to recover, throughput against the baseline after the "
               "relaunch, a partial recovery and its reason, and the GPU roles incident.toml expects against what "
               "the GPUs show (memory per GPU, coloured by expected role; GPUs that hold memory but sit idle)."),
        ("params", PARAMETERS),
        ("code", LOAD),
        ("code", "from dflash_postmortem.analysis import source_choice, throughput_levels\n\n"
                 "start, end = throughput_levels.recovery_window(inc, findings)"),
        ("md", "## Recovery"),
        ("code", f"{CHECK}\nsentences.Headline(sentences.recovery_text(findings))"),
        ("code", "tables.recovery_table(findings)"),
        ("code", "samples = source_choice.throughput_samples(inc)\n"
                 "baseline = throughput_levels.baseline(inc, findings)\n"
                 "figures.plot_throughput(samples, baseline=baseline,\n"
                 "                        recovery_fraction=inc.config.recovery_fraction)"),
        ("md", "## GPU roles: expected against observed\n\nMedian memory and utilization per GPU over the recovery "
               "window (or the last run when there is no recovery finding)."),
        ("code", "roles = tables.gpu_roles(inc, start, end)\nfigures.plot_memory_by_role(roles)"),
        ("code", "roles"),
        ("code", "tables.role_findings(findings, inc)"),
    ],
    "05_replay_ab": [
        ("md", "# What does each knob cost?\n\nReplay runs switch suspected root causes on and off on purpose. This "
               "notebook reads them (the runs' wandb config gives each run's knob settings, the logs or wandb give "
               "tok/s) and shows each run against the baseline run: which knobs it changed and its tok/s with "
               "spread. A run that changed several knobs at once is marked: its effect cannot be split between them."),
        ("params", PARAMETERS.replace("# evidence folder", "# replay runs")
                             .replace("incidents/h200-2gpu\"", "incidents/h200-2gpu-replay-ab\"")),
        ("code", LOAD),
        ("code", "from dflash_postmortem.analysis import replay_ab\n\neffects = replay_ab.replay_effects(inc)"),
        ("md", "## Knob settings per run"),
        ("code", "replay_ab.knob_settings(inc)"),
        ("md", "## Measured effect on tok/s"),
        ("code", f"{CHECK}\nsentences.Headline(sentences.effects_text(effects))"),
        ("code", "figures.plot_replay_ab(effects)"),
        ("code", "effects"),
    ],
}


def build(name: str, cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = new_notebook()
    # The kit's own kernel (installed with the package; see pyproject's data-files).
    nb.metadata["kernelspec"] = {"name": "dflash-postmortem", "display_name": "Python (dflash-postmortem)",
                                 "language": "python"}
    # what the kit's kernel says of its language: opening the notebook in Lab changes nothing
    nb.metadata["language_info"] = dict(LANGUAGE_INFO)
    for kind, src in cells:
        if kind == "md":
            nb.cells.append(new_markdown_cell(src))
        else:
            cell = new_code_cell(src)
            if kind == "params":
                cell.metadata["tags"] = ["parameters"]
            nb.cells.append(cell)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{name[:2]}-{i:02d}"  # stable ids: regenerating gives the same file
    return nb


def headline(nb: nbformat.NotebookNode, path: Path) -> str:
    """Execute a copy on the bundled capture and return what its headline cell says (as text)."""
    import papermill

    done = papermill.execute_notebook(nb, None, parameters={"incident_dir": BUNDLED}, kernel_name="dflash-postmortem",
                                      progress_bar=False, cwd=str(path.parent))
    for cell in done.cells:
        if cell.cell_type == "code" and cell.source.startswith(CHECK):
            return "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs
                           if o.get("output_type") == "execute_result")
    raise SystemExit(f"{path.name}: no {CHECK} cell")


def main(argv: list[str]) -> None:
    expected = {}
    for name, cells in NOTEBOOKS_SPEC.items():
        path = NOTEBOOKS / f"{name}.ipynb"
        nb = build(name, cells)
        nbformat.validate(nb)
        nbformat.write(nb, str(path))
        if "--expected" in argv:
            expected[name] = headline(nb, path)
        print(path.relative_to(REPO))
    if expected:
        HEADLINES.write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(HEADLINES.relative_to(REPO))


if __name__ == "__main__":
    main(sys.argv[1:])
