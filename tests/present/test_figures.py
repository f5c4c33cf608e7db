"""The figures, drawn from the real captures: which traces sit on which axes, the level changes
marked, the bands and lines, the event lanes, the capped labels and minute-resolution starts, one
colour per run across figures, and what a figure says when its source is missing."""

import html

import pandas as pd
import pytest
from support.bundled import NAMES, loaded
from support.incidents import smi_stream_only

import dflash_postmortem as pm
from dflash_postmortem.analysis import replay_ab
from dflash_postmortem.analysis import source_choice as sources
from dflash_postmortem.analysis import throughput_levels as levels
from dflash_postmortem.detect import throughput
from dflash_postmortem.model.launches import outcomes
from dflash_postmortem.present import figures as plots
from dflash_postmortem.present import tables

T = lambda x: pd.Timestamp(f"2026-11-30 {x}", tz="UTC")  # noqa: E731  the bundled capture's day


@pytest.fixture(scope="module")
def overview(bundled_incident, bundled_findings):
    return plots.plot_overview(**tables.overview(bundled_incident, bundled_findings))


def test_overview_puts_each_source_on_its_own_panel(overview):
    on = [(t.type, t.name, t.xaxis, t.yaxis) for t in overview.data]
    assert on == [
        ("scatter", "run baseline", "x", "y"), ("scatter", "run regressed", "x", "y"), ("scatter", "run fixed", "x", "y"),
        ("heatmap", "GiB", "x2", "y2"), ("heatmap", "%", "x3", "y3"),
        # lifetimes: processes, runs (each in its colour), PIDs on GPUs, the starts ps gives to the minute
        ("scatter", "process lifetime", "x4", "y4"), ("scatter", "run baseline", "x4", "y4"),
        ("scatter", "GPU process lifetime", "x4", "y4"), ("scatter", "run regressed", "x4", "y4"),
        ("scatter", "run fixed", "x4", "y4"), ("scatter", "start known only as a range (ps)", "x4", "y4"),
        # events in lanes, then the findings
        ("scatter", "process control", "x5", "y5"), ("scatter", "launches", "x5", "y5"), ("scatter", "GPU", "x5", "y5"),
        ("scatter", "stages", "x5", "y5"), ("scatter", "commands and other", "x5", "y5"),
        ("scatter", "findings (by severity)", "x5", "y5"),
    ]
    memory, util = (t for t in overview.data if t.type == "heatmap")
    assert memory.y == util.y == ("GPU 0", "GPU 1")
    assert overview.layout.title.text == "Overview: h200-2gpu"
    # every source of the overview exists in this capture: only the five panel titles are annotations
    assert [a.text for a in overview.layout.annotations] == [
        "Throughput per run (tokens/s)", "GPU memory used (GiB)", "GPU utilization (%)",
        "Lifetimes: runs, processes, PIDs on GPUs", "Events and findings"]
    # the width follows the page; the height gives 10 lifetimes and 6 lanes a row each
    assert overview.layout.width is None and overview.layout.yaxis4.domain[1] - overview.layout.yaxis4.domain[0] > 0.15


def test_overview_marks_findings_and_shades_their_periods(overview):
    marks = next(t for t in overview.data if t.name == "findings (by severity)")
    # stale process (warning), regression and failed restart (critical), recovery (info)
    assert marks.marker.color == ("#ff7f0e", "#d62728", "#d62728", "#2ca02c")
    assert marks.hovertext[1].startswith("<b>throughput fell from 146.8K to 74.9K tok/s (0.51 of baseline)</b>"
                                         "<br>05:22:17 UTC · critical<br>evidence:<br>logs/operator.log:3")
    # one band per period finding, in its kind's colour, drawn across all five panels
    bands = {(s.x0, s.x1, s.fillcolor, s.name) for s in overview.layout.shapes}
    assert bands == {(T("05:22:17"), T("05:22:57"), "#d62728", "shaded: throughput regression"),
                     (T("05:23:01.707"), T("05:23:16.774"), "#6a3d9a", "shaded: failed restart"),
                     (T("05:23:48"), T("05:25:11"), "#2ca02c", "shaded: recovery")}
    assert len(overview.layout.shapes) == 3 * 5


def test_overview_lifetimes_name_processes_and_runs(overview):
    labels = set(overview.layout.yaxis4.ticktext)
    assert {"run baseline", "run regressed", "run fixed", "PID 598 on GPU 0,1", "PID 971 on GPU 0,1",
            "PID 1391 on GPU 0,1", "PID 579 python3 -c import time; time.sl…"} <= labels
    # one row per lifetime, first at the top: labels may repeat once capped, rows never merge
    assert list(overview.layout.yaxis4.categoryarray) == [str(i) for i in range(9, -1, -1)]


def test_a_missing_source_is_said_on_its_panel(tmp_path, bundled_dir):
    inc = smi_stream_only(tmp_path, bundled_dir)
    fig = plots.plot_overview(**tables.overview(inc, pm.detect(inc)))
    said = {(a.text, a.xref) for a in fig.layout.annotations if a.text.startswith("no data from")}
    assert said == {("no data from training logs or wandb runs (train/tok_per_s, or a step counter)", "x domain"),
                    ("no data from process captures (ps, nvidia-smi compute-apps, training logs)", "x4 domain"),
                    ("no data from logs or shell transcripts (no events)", "x5 domain")}
    # the GPU panels it has data for; the others hold an empty trace, so that plotly draws them
    assert [(t.type, len(t.x)) for t in fig.data] == [("heatmap", 145), ("heatmap", 145), ("scatter", 0),
                                                      ("scatter", 0), ("scatter", 0)]
    # and a panel without data does not stretch the shared time axis back to 1970
    assert fig.layout.xaxis.range[0] > T("05:00:00")
    series = throughput.series(inc)
    segments = throughput.segments(series)
    empty = plots.plot_change_points(series, segments, levels.band_crossings(segments))
    assert [a.text for a in empty.layout.annotations] == ["no data from training logs or wandb runs (train/tok_per_s, or a step counter)"]


def test_findings_nothing_dates_leave_the_overview_drawable(tmp_path, repo_dir):
    """A pasted NCCL watchdog timeout (its glog stamp has no year, nothing else dates it): its
    `process_died` has no time, so no mark on the time axis; the overview drew an empty findings
    trace and failed on it (the report said "internal error: IndexError")."""
    import shutil
    import warnings

    shutil.copy(repo_dir / "tests" / "fixtures" / "real-world" / "torchrun" / "nccl-watchdog-desync-report-ml-engineering.log",
                tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    found = pm.detect(inc)
    assert found["kind"].tolist() == ["process_died"] and found["start"].isna().all()
    fig = plots.plot_overview(**tables.overview(inc, found))
    assert "findings (by severity)" not in [t.name for t in fig.data]


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


def test_a_runs_line_breaks_where_its_steps_stop():
    """The torchrun crash loop: run ddp-loop logged its step 35 at 04:36:31, its rank died at 04:36:32, the
    agent's restart never trained, the third attempt logged from 04:36:50: the line is not drawn
    across the 20 s with no step (a reader would take it for throughput during the restart)."""
    inc, _ = loaded("h200-1gpu-torchrun-crashloop")
    (trace,) = plots.plot_throughput(sources.throughput_samples(inc)).data
    gaps = [i for i, v in enumerate(trace.y) if v is None]
    assert len(gaps) == 1
    before, after = pd.Timestamp(trace.x[gaps[0] - 1]), pd.Timestamp(trace.x[gaps[0] + 1])
    assert before.strftime("%H:%M:%S") == "04:36:31" and after.strftime("%H:%M:%S") == "04:36:50"


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


def test_replay_ab_legend_says_what_each_run_changed(bundled_incident):
    effects = replay_ab.replay_effects(bundled_incident)
    fig = plots.plot_replay_ab(effects)
    assert [(t.x, t.y) for t in fig.data] == [(("baseline",), (146812.5,)), (("regressed",), (74918.0,)),
                                              (("fixed",), (146969.5,))]
    # the legend from the data: "fixed" changed nothing, "regressed" two knobs at once (hatched)
    assert [t.name for t in fig.data] == ["baseline: the baseline",
                                          "regressed: 2 knobs changed, not separable<br>(use_reentrant=0, fast_linear_attn=0)",
                                          "fixed: no knob changed"]
    assert [t.marker.pattern.shape for t in fig.data] == ["", "/", ""]
    assert "knob" not in fig.layout.title.text  # the title claims nothing about the runs
    assert fig.layout.shapes[0].y0 == 146812.5  # the baseline's line


def test_replay_ab_legend_matches_every_run_of_the_ab_capture(repo_dir):
    inc, _ = loaded("h200-2gpu-replay-ab")
    effects = replay_ab.replay_effects(inc)
    fig = plots.plot_replay_ab(effects)
    assert len(fig.data) == len(effects) == 8
    for t, r in zip(fig.data, effects.itertuples(), strict=True):
        said = html.unescape(t.name.replace("<br>", " "))
        assert said.startswith(f"{r.run}: ")
        if r.knobs_changed:
            assert f"{r.knobs_changed} knob" in said and all(c in said for c in r.change.split(", "))
            assert ("not separable" in said) == (r.knobs_changed > 1) == (t.marker.pattern.shape == "/")
    assert [t.name.split("<br>")[0] for t in fig.data][:3] == [
        "baseline: the baseline", "linear-attn-fallback: 1 knob changed", "lm-head-trainable: 1 knob changed"]


def test_gpu_memory_is_one_line_per_gpu_from_its_best_source(bundled_incident):
    fig = plots.plot_gpu_memory(sources.gpu_samples(bundled_incident.gpus, "memory_used_mib"))
    assert [(t.name, len(t.x)) for t in fig.data] == [("GPU 0", 290), ("GPU 1", 290)]
    assert fig.layout.yaxis.title.text == "GiB"


# --- every bundled incident: lanes, labels, bands, minute starts, run colours ---------------------

@pytest.fixture(scope="module", params=NAMES)
def drawn(request):
    """(incident, findings, the overview's frames, the overview) for each bundled incident."""
    inc, findings = loaded(request.param)
    frames = tables.overview(inc, findings)
    return inc, findings, frames, plots.plot_overview(**frames)


def _naive(t) -> pd.Timestamp:
    """A time as plotly keeps it in a trace (numpy, no zone) or as the frames hold it (UTC)."""
    t = pd.Timestamp(t)
    return t.tz_convert(None) if t.tzinfo else t


def _unwrapped(hover: str) -> str:
    """A hover's text as a reader sees it: line breaks as spaces, HTML entities undone."""
    return " ".join(html.unescape(hover.replace("<br>", " ")).split())


def test_events_are_in_a_few_lanes_each_in_the_legend(drawn):
    inc, _, frames, fig = drawn
    lanes = [t for t in fig.data if t.yaxis == "y5" and t.name in plots.EVENT_LANES]
    assert 1 <= len(lanes) <= 6
    assert all(t.showlegend is not False and t.legend == "legend3" and t.legendgroup == "lane " + t.name for t in lanes)
    # every event the overview gathers is drawn once, in its kind's lane; only wandb's console lines are left out
    events = frames["events"]
    drawn_events = sorted((_naive(x), _unwrapped(h)) for t in lanes for x, h in zip(t.x, t.hovertext, strict=True))
    assert len(drawn_events) == len(events)
    assert drawn_events == sorted((_naive(t), _unwrapped(f"{pd.Timestamp(t):%H:%M:%S} {k}<br>{m}<br>{r}"))
                                          for t, k, m, r in zip(events["time"], events["kind"], events["message"], events["ref"], strict=True))
    for t in lanes:
        kinds = {_unwrapped(h).split(" ", 2)[1] for h in t.hovertext}
        assert {plots.event_lane(k) for k in kinds} == {t.name}
    left_out = inc.events.dropna(subset=["time"])
    assert set(left_out["kind"][~left_out.index.isin(events.index)]) <= {"console"}


def test_event_hover_holds_the_message_and_its_ref_whole(drawn):
    _, _, frames, fig = drawn
    events = frames["events"]
    if events.empty:
        pytest.skip("no events in this incident")
    longest = events.loc[events["message"].str.len().idxmax()]
    hovers = [_unwrapped(h) for t in fig.data if t.name == plots.event_lane(longest["kind"]) for h in t.hovertext]
    assert any(" ".join(str(longest["message"]).split()) in h and str(longest["ref"]) in h for h in hovers)


def test_lifetime_labels_are_capped_with_the_full_command_in_the_hover(drawn):
    inc, _, frames, fig = drawn
    life = frames["lifetimes"]
    labels = [html.unescape(x) for x in fig.layout.yaxis4.ticktext or ()]
    assert len(labels) == len(life)
    assert all(len(x) <= plots.LABEL_CHARS for x in labels)
    # a label is the whole name or ends in an ellipsis: never cut mid-word without one
    assert all(x == " ".join(w.split()) or x.endswith("…") for x, w in zip(labels, life["what"], strict=True))
    hovers = [_unwrapped(h) for t in fig.data if t.yaxis == "y4" for h in (t.hovertext or ()) if h]
    commands = inc.processes.dropna(subset=["command"])
    shown = life[life["group"] == "process"]["detail"]
    for cmd in commands["command"]:
        if any(cmd in d for d in shown):  # the processes the overview draws (not the shells around them)
            assert any(" ".join(cmd.split()) in h for h in hovers), cmd


def test_every_band_kind_drawn_has_a_legend_entry(drawn):
    _, findings, _, fig = drawn
    shapes = fig.layout.shapes
    kinds = set(findings.dropna(subset=["start"])["kind"]) & set(plots.BAND_COLOURS)
    assert {s.legendgroup for s in shapes} == {"band " + k for k in kinds}
    in_legend = [s.legendgroup for s in shapes if s.showlegend]
    assert sorted(in_legend) == sorted("band " + k for k in kinds)  # one entry per kind
    assert all(s.fillcolor == plots.BAND_COLOURS[s.legendgroup.removeprefix("band ")] for s in shapes)


def test_minute_resolution_starts_are_ranges_after_the_minute_and_the_launch(drawn):
    inc, _, frames, fig = drawn
    life = frames["lifetimes"]
    ranges = next((t for t in fig.data if t.name == "start known only as a range (ps)"), None)
    ranged = life[life["start_latest"] > life["start"]]
    if ranges is None:
        assert ranged.empty
        return
    drawn_ranges = {(y, x0, x1) for x0, x1, y in zip(ranges.x[0::3], ranges.x[1::3], ranges.y[0::3], strict=True)}
    assert drawn_ranges == {(str(i), r.start, r.start_latest) for i, r in ranged.iterrows()}
    # the solid bar starts where the range ends
    bars = {y: x for t in fig.data if t.yaxis == "y4" and t is not ranges for x, y in zip(t.x[0::3], t.y[0::3], strict=True)}
    assert all(bars[str(i)] == r.start_latest for i, r in ranged.iterrows())
    for r in life[life["group"] == "process"].itertuples():
        if "minute" in r.start_note:  # ps START's minute: the range lies inside it
            minute = pd.Timestamp(f"{r.start:%Y-%m-%d} {r.start_note.split('(')[1][:5]}", tz="UTC")
            assert minute <= r.start <= r.start_latest <= minute + pd.Timedelta(minutes=1)
    # never before the command typed or traced that started it (the launch detector's own
    # matching); a launcher's restart has no such time, and ps's START may read a second or
    # two before the launcher's own clock
    for _, launch in outcomes(inc).iterrows():
        proc = launch["process"]
        if proc is None or pd.isna(launch["launched"]):
            continue
        row = life[life["detail"] == f"PID {proc['pid']} {proc['command']}"]  # one per source that lists it
        assert len(row) >= 1 and (row["start"] >= launch["launched"]).all()


def test_the_bundled_capture_draws_its_ps_starts_from_the_launch(overview):
    ranges = next(t for t in overview.data if t.name == "start known only as a range (ps)")
    labels = dict(zip(overview.layout.yaxis4.tickvals, overview.layout.yaxis4.ticktext, strict=True))
    got = [(labels[y], x0, x1) for x0, x1, y in zip(ranges.x[0::3], ranges.x[1::3], ranges.y[0::3], strict=True)]
    # the stale sleeper: ps says 05:20, first listed 05:20:20; each trainer: from its launch to its first listing
    assert got == [("PID 579 python3 -c import time; time.sl…", T("05:20:00"), T("05:20:20")),
                   ("PID 598 python3 trainer.py --run-name b…", T("05:20:22.676"), T("05:20:30")),
                   ("PID 971 python3 trainer.py --run-name r…", T("05:21:42.681"), T("05:21:50")),
                   ("PID 1391 python3 trainer.py --run-name …", T("05:23:16.774"), T("05:23:20"))]
    # (ps says 05:20; the listing at 05:20:20 did not show it: the later bound, then the launch's)
    assert "started between 05:20:22 and 05:20:30 UTC<br>not in the listing at 05:20:20, in the one at 05:20:30; " \
           "launched 05:20:22" in ranges.hovertext[3]
    assert "started between 05:20:00 and 05:20:20 UTC<br>ps gives the start to the minute (05:20)" in ranges.hovertext[0]


@pytest.mark.parametrize("name", ["h200-2gpu", "h200-2gpu-replay-ab"])
def test_a_run_has_one_colour_in_every_figure(repo_dir, name):
    inc, findings = loaded(name)
    series = throughput.series(inc)
    segments = throughput.segments(series)
    figures = {
        "overview": plots.plot_overview(**tables.overview(inc, findings)),
        "throughput": plots.plot_throughput(sources.throughput_samples(inc)),
        "change points": plots.plot_change_points(series, segments, levels.band_crossings(segments)),
        "distribution": plots.plot_throughput_distribution(series),
    }
    colour = {}
    for what, fig in figures.items():
        for t in fig.data:
            if (t.name or "").startswith("run ") and t.type in ("scatter", "box"):
                c = t.line.color if t.type == "scatter" and t.mode != "markers" else t.marker.color
                colour.setdefault(t.name.removeprefix("run "), {})[what] = c
    for t in plots.plot_replay_ab(replay_ab.replay_effects(inc)).data:
        colour[t.x[0]]["replay A/B"] = t.marker.color
    runs = sorted(colour)
    assert runs == sorted(inc.metrics["run"].dropna().unique())
    for run in runs:
        assert set(colour[run]) == {"overview", "throughput", "change points", "distribution", "replay A/B"}
        assert len(set(colour[run].values())) == 1, (run, colour[run])
    assert len({next(iter(c.values())) for c in colour.values()}) == len(runs)  # no two runs alike


def test_run_colours_depend_on_the_names_only():
    runs = ["baseline", "linear-attn-fallback", "lm-head-trainable", "lm-head-recompute", "layer-ckpt-nonreentrant",
            "layer-ckpt-reentrant", "compile-unguarded", "write-up"]
    every = plots.run_colours(runs)
    assert len(set(every.values())) == 8 and set(every.values()) == set(plots.RUN_COLOURS)
    assert plots.run_colours(reversed(runs)) == every  # not on their order
    alone = {run: plots.run_colours([run])[run] for run in runs}
    # alone, a run gets its name's colour; among others, only where two names share one does the later move
    moved = {run for run in runs if alone[run] != every[run]}
    assert moved == {run for run in runs if [alone[r] for r in sorted(runs) if r < run].count(alone[run])}


def test_a_findings_hover_shows_the_text_of_each_cited_line(bundled_dir, bundled_incident, bundled_findings):
    from dflash_postmortem.present.evidence_views import cited_line

    fig = plots.plot_overview(**tables.overview(bundled_incident, bundled_findings))
    hovers = [h for t in fig.data if t.name and "findings" in t.name and t.hovertext is not None for h in t.hovertext]
    failed = next(h for h in hovers if "never came up" in h)
    line = cited_line(bundled_dir, "logs/operator.log:9")
    assert line == "bash: line 1: /workspace/train_opt2.log: No such file or directory"
    assert "logs/operator.log:9: bash: line 1: /workspace/train_opt2.log: No such file or" in failed.replace("<br>", " ")


def test_the_gpu_time_bars_stack_to_each_gpus_window(bundled_incident):
    led = pm.ledger(bundled_incident)
    fig = plots.plot_gpu_time(led)
    assert [t.name for t in fig.data] == ["productive", "degraded", "starting", "restarting"]
    assert all(list(t.y) == ["GPU 0", "GPU 1"] for t in fig.data)
    for i in range(2):  # each GPU's segments add up to the window it was accounted over
        assert abs(sum(t.x[i] for t in fig.data) - led["total"].iloc[i]) < 1e-6
    assert [t.marker.color for t in fig.data] == [plots.LEDGER_COLOURS[t.name] for t in fig.data]
