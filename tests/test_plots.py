"""The figures, drawn from the real captures: which traces sit on which axes, the level changes
marked, the bands and lines, and what a figure says when its source is missing."""

import pandas as pd
import pytest
from support.incidents import smi_stream_only

import dflash_postmortem as pm
from dflash_postmortem import plots, tables
from dflash_postmortem.detect import levels, replay_ab, sources, throughput

T = lambda x: pd.Timestamp(f"2026-11-30 {x}", tz="UTC")  # noqa: E731  the bundled capture's day


@pytest.fixture(scope="module")
def overview(bundled_incident, bundled_findings):
    return plots.plot_overview(**tables.overview(bundled_incident, bundled_findings))


def test_overview_puts_each_source_on_its_own_panel(overview):
    on = {(t.type, t.name): (t.xaxis, t.yaxis) for t in overview.data}
    assert on == {
        ("scatter", "run baseline"): ("x", "y"), ("scatter", "run regressed"): ("x", "y"), ("scatter", "run fixed"): ("x", "y"),
        ("heatmap", "GiB"): ("x2", "y2"), ("heatmap", "%"): ("x3", "y3"),
        ("scatter", "process lifetime"): ("x4", "y4"), ("scatter", "run lifetime"): ("x4", "y4"),
        ("scatter", "GPU process lifetime"): ("x4", "y4"),
        ("scatter", "events"): ("x5", "y5"), ("scatter", "findings"): ("x5", "y5"),
    }
    memory, util = (t for t in overview.data if t.type == "heatmap")
    assert memory.y == util.y == ("GPU 0", "GPU 1")
    assert overview.layout.title.text == "Overview: h200-2gpu"
    # every source of the overview exists in this capture: only the five panel titles are annotations
    assert [a.text for a in overview.layout.annotations] == [
        "Throughput per run (tokens/s)", "GPU memory used (GiB)", "GPU utilization (%)",
        "Lifetimes: runs, processes, PIDs on GPUs", "Events and findings"]


def test_overview_marks_findings_and_shades_their_periods(overview):
    marks = next(t for t in overview.data if t.name == "findings")
    # stale process (warning), regression and failed restart (critical), recovery (info)
    assert marks.marker.color == ("#ff7f0e", "#d62728", "#d62728", "#2ca02c")
    assert marks.hovertext[1].startswith("<b>throughput fell from 146.8K to 74.9K tok/s (0.51 of baseline)</b>"
                                         "<br>05:22:17 UTC · critical<br>evidence:<br>logs/operator.log:3")
    # one band per period finding, drawn across all five panels
    bands = {(s.x0, s.x1, s.fillcolor) for s in overview.layout.shapes}
    assert bands == {(T("05:22:17"), T("05:22:57"), "#d62728"), (T("05:23:01.707"), T("05:23:16.774"), "#d62728"),
                     (T("05:23:48"), T("05:25:11"), "#2ca02c")}
    assert len(overview.layout.shapes) == 3 * 5


def test_overview_lifetimes_name_processes_and_runs(overview):
    life = [t for t in overview.data if t.xaxis == "x4"]
    bars = {y for t in life for y in t.y if y is not None}
    assert {"run baseline", "run regressed", "run fixed", "PID 598 on GPU 0,1", "PID 971 on GPU 0,1",
            "PID 1391 on GPU 0,1", "PID 579 python3 -c import time; time.sleep(100000)"} <= bars


def test_a_missing_source_is_said_on_its_panel(tmp_path, bundled_dir):
    inc = smi_stream_only(tmp_path, bundled_dir)
    fig = plots.plot_overview(**tables.overview(inc, pm.detect(inc)))
    said = {(a.text, a.xref) for a in fig.layout.annotations if a.text.startswith("no data from")}
    assert said == {("no data from training logs or wandb runs (train/tok_per_s)", "x domain"),
                    ("no data from process captures (ps, nvidia-smi compute-apps, training logs)", "x4 domain"),
                    ("no data from logs or shell transcripts (no events)", "x5 domain")}
    assert [t.type for t in fig.data] == ["heatmap", "heatmap"]  # the GPU panels it has data for
    series = throughput.series(inc)
    segments = throughput.segments(series)
    empty = plots.plot_change_points(series, segments, levels.band_crossings(segments))
    assert [a.text for a in empty.layout.annotations] == ["no data from training logs or wandb runs (train/tok_per_s)"]


def test_change_points_mark_the_changes_across_the_baseline_band(bundled_incident):
    series = throughput.series(bundled_incident)
    segments = throughput.segments(series)
    fig = plots.plot_change_points(series, segments, levels.band_crossings(segments))
    assert [(t.name, len(t.x)) for t in fig.data] == [("run baseline", 202), ("run regressed", 70), ("run fixed", 296),
                                                     ("segment level", 2), ("segment level", 2), ("segment level", 2)]
    assert [(s.x0, s.line.dash, s.line.color) for s in fig.layout.shapes] == [
        (T("05:22:17"), "dash", "#d62728"), (T("05:23:48"), "dash", "#d62728")]
    assert [a.text for a in fig.layout.annotations] == ["146.8K → 74.9K", "74.9K → 147.0K"]


def test_throughput_draws_the_baseline_and_the_recovery_line(bundled_incident, bundled_findings):
    fig = plots.plot_throughput(sources.throughput_samples(bundled_incident),
                                baseline=levels.baseline(bundled_incident, bundled_findings),
                                recovery_fraction=bundled_incident.config.recovery_fraction)
    assert [t.name for t in fig.data] == ["run baseline", "run regressed", "run fixed"]
    assert [(s.y0, s.line.dash) for s in fig.layout.shapes] == [(146812.5, "dash"), (146812.5 * 0.9, "dot")]
    assert [a.text for a in fig.layout.annotations] == ["baseline 146.8K", "recovered above 90%"]
    assert fig.layout.yaxis.title.text == "tokens/s"


def test_distribution_is_one_box_per_run(bundled_incident):
    fig = plots.plot_throughput_distribution(throughput.series(bundled_incident))
    assert [(t.type, t.name, len(t.y)) for t in fig.data] == [("box", "run baseline", 202), ("box", "run regressed", 70),
                                                             ("box", "run fixed", 296)]


def test_memory_by_role_hatches_the_allocated_idle_gpu(seed_incident, seed_findings):
    roles = tables.gpu_roles(seed_incident, *levels.recovery_window(seed_incident, seed_findings))
    fig = plots.plot_memory_by_role(roles)
    assert [(t.name, list(t.x), list(t.marker.pattern.shape)) for t in fig.data] == [
        ("expected: target", ["GPU 0", "GPU 1", "GPU 2", "GPU 3", "GPU 4", "GPU 5"], ["", "", "", "", "", "/"]),
        ("expected: drafter", ["GPU 6", "GPU 7"], ["", ""])]
    assert fig.data[0].y[5] == 8.5 and fig.data[0].text[5] == "allocated, idle"


def test_replay_ab_colours_runs_by_how_many_knobs_they_changed(bundled_incident):
    effects = replay_ab.replay_effects(bundled_incident)
    fig = plots.plot_replay_ab(effects)
    bar = fig.data[0]
    assert bar.x == ("baseline", "regressed<br>use_reentrant=0, fast_linear_attn=0", "fixed")
    assert bar.marker.color == ("#7f7f7f", "#d62728", "#1f77b4")  # baseline grey, two knobs red
    assert list(bar.y) == [146812.5, 74918.0, 146969.5]
    assert fig.layout.shapes[0].y0 == 146812.5  # the baseline's line


def test_gpu_memory_is_one_line_per_gpu_from_its_best_source(bundled_incident):
    fig = plots.plot_gpu_memory(sources.gpu_samples(bundled_incident.gpus, "memory_used_mib"))
    assert [(t.name, len(t.x)) for t in fig.data] == [("GPU 0", 290), ("GPU 1", 290)]
    assert fig.layout.yaxis.title.text == "GiB"
