"""The tables the notebooks show, on the real captures: the values a reader sees, and the note
shown in place of a table the evidence cannot fill."""

import dataclasses
import warnings

import pandas as pd
import pytest
from support.incidents import smi_stream_only

import dflash_postmortem as pm
from dflash_postmortem.analysis import throughput_levels as levels
from dflash_postmortem.detect import throughput
from dflash_postmortem.present import tables
from dflash_postmortem.present.sentences import Missing
from dflash_postmortem.report.notebook import frame_html
from dflash_postmortem.schema import PROBLEM_EVENTS


@pytest.fixture(scope="module")
def bundled_timeline(bundled_incident, bundled_findings):
    return pm.timeline(bundled_incident, bundled_findings)


def test_findings_table(bundled_findings):
    t = tables.findings_table(bundled_findings)
    assert t[["start", "end", "severity"]].values.tolist() == [
        ["05:20:00", "05:25:01", "warning"], ["05:22:17", "05:22:57", "critical"],
        ["05:23:01", "05:23:16", "critical"], ["05:23:48", "05:25:11", "info"]]
    assert t["what"].iloc[3] == "throughput recovered to 147.7K tok/s (1.01 of baseline)"
    assert t["evidence"].iloc[0] == "logs/ps_aux_snapshots.txt:3, logs/operator.log:11"
    assert t["evidence"].iloc[1] == "logs/operator.log:3, logs/train.log:210, logs/train_opt.log:9, logs/train_opt.log:10"
    # the failed restart cites 15 lines, every one of them: the page cuts the cell, with the whole list on hover
    assert t["evidence"].iloc[2].split(", ") == list(bundled_findings["evidence"].iloc[2])
    assert len(bundled_findings["evidence"].iloc[2]) == 15
    shown = frame_html(t.iloc[[2]][["evidence"]])
    assert 'title="logs/operator.log:8, logs/operator.log:9, ' in shown and "logs/dmon_um.txt:340\">" in shown
    assert "…" in shown


def test_timeline_table(bundled_timeline):
    t = tables.timeline_table(bundled_timeline)
    assert t[["time", "phase"]].values.tolist()[:4] == [
        ["05:22:17", "first sign"], ["05:22:57", "detection"], ["05:23:01", "stale process"], ["05:23:01", "failed restart"]]
    mitigation = t[t["phase"] == "mitigation"].iloc[0]
    assert mitigation["time"] == "05:23:16" and mitigation["what"].startswith("$ cd /tmp/capture2 && setsid nohup python3")
    assert mitigation["evidence"] == "logs/operator.log:17"
    assert t["phase"].iloc[-1] == "recovery"


def test_headline_numbers(bundled_findings, bundled_timeline):
    t = tables.headline(bundled_findings, bundled_timeline)
    assert t.values.tolist() == [
        ["baseline throughput", "146.8K tok/s", "run baseline"],
        ["degraded throughput", "74.9K tok/s (0.51 of baseline)", "run regressed"],
        ["throughput after recovery", "147.7K tok/s", "throughput recovered to 147.7K tok/s (1.01 of baseline)"],
        ["time to detect", "41 s", "timeline"], ["time to mitigate", "60 s", "timeline"],
        ["time to recover", "91 s", "timeline"], ["GPU-hours lost", "0.03", "timeline"],
        ["tokens lost", "8.97M", "timeline"]]
    # without the timeline, the recovery finding's own time to recover
    assert tables.headline(bundled_findings).values.tolist()[-1] == ["time to recover", "91 s", "recovery finding"]


def test_levels_and_what_changed(bundled_incident, bundled_findings):
    segments = throughput.segments(throughput.series(bundled_incident))
    t = tables.levels(segments)
    assert t[["from", "to", "samples", "level tok/s"]].values.tolist() == [
        ["05:20:58", "05:21:54", 202, 146812], ["05:22:17", "05:22:57", 70, 74918], ["05:23:48", "05:25:11", 296, 146970]]
    assert t["vs previous"].tolist()[1:] == [0.51, 1.96]
    diff = tables.config_diff(bundled_incident, bundled_findings)
    # the settings that change how it trains first, bookkeeping (names, paths, duration) last
    book = "bookkeeping (a name, path or duration)"
    assert diff[["setting", "before", "after", "changes"]].values.tolist() == [
        ["--fast-linear-attn", "(not set)", "0", "training"], ["--use-reentrant", "(not set)", "0", "training"],
        ["--pid-file", "/tmp/capture2/run/baseline.pid", "/tmp/capture2/run/regressed.pid", book],
        ["--run-name", "baseline", "regressed", book], ["--seconds", "60", "600", book]]
    assert set(diff["evidence"]) == {"logs/operator.log:3"} and set(diff["runs"]) == {"baseline → regressed"}


def test_root_causes_are_ranked_and_numbered(bundled_incident, bundled_findings):
    t = tables.root_causes(bundled_incident, bundled_findings)
    assert t.index.name == "rank" and list(t.index) == [1]
    top = t.loc[1]
    assert top["candidate"].startswith("configuration differs from run baseline: --fast-linear-attn")
    assert top["evidence lines"] == 1 and top["evidence"] == "logs/operator.log:3"  # the launch line


def test_warnings_near_the_drop(bundled_incident, bundled_findings, seed_incident, seed_findings):
    quiet = tables.warnings_near(bundled_incident, bundled_findings)
    # the logs were there and said nothing: not "no data"
    assert isinstance(quiet, Missing) and quiet.text == "no warnings or errors in the logs within 10 min of the drop"
    bare = tables.warnings_near(dataclasses.replace(bundled_incident, events=bundled_incident.events.iloc[:0]), bundled_findings)
    assert bare.text == "no data from logs or transcripts: nothing to look through within 10 min of the drop"
    near = tables.warnings_near(seed_incident, seed_findings)
    assert len(near) and set(near["kind"]) <= set(PROBLEM_EVENTS)
    assert near["evidence"].str.match(r"^[\w./-]+:\d+$").all()


def test_launch_checklist(bundled_incident, bundled_findings):
    t = tables.launch_checklist(bundled_incident, bundled_findings)
    assert t["launch"].tolist() == ["05:20:22", "05:21:42", "05:23:01", "05:23:16"]
    assert t["run"].tolist() == ["baseline", "regressed", "fixed", "fixed"]
    failed = t.iloc[2]
    assert (failed["process started"], failed["log created"], failed["first step"]) == ("✗ none", "✗ none", "✗ none")
    assert failed["verdict"].startswith("restart at 05:23:01 never came up: log path does not exist")
    good = t.iloc[3]
    # ps gives its START to the minute, and the listing at 05:23:10 did not show it: a range, not a
    # moment before the launch at 05:23:16
    assert good["process started"] == "05:23:10-05:23:20 PID 1391" and good["log created"] == "05:23:21 train_opt2.log"
    assert good["GPU memory held"] == "✓ 05:23:29 by PID 1391" and good["first step"] == "05:23:48"
    assert good["verdict"] == "came up" and good["evidence"] == "logs/operator.log:17"


def test_process_view_marks_the_stale_process(bundled_incident, bundled_findings):
    t = tables.process_view(bundled_incident, bundled_findings)
    assert t["pid"].tolist() == ["579", "598", "971", "1391"]
    assert t["status"].tolist() == ["stale (predates the launch)", "", "", ""]
    assert t["command"].iloc[0] == "python3 -c import time; time.sleep(100000)"
    assert t["started"].iloc[0] == "05:20 (to the minute)"  # ps aux's START


def test_worker_pools_are_one_row_and_one_bar(repo_dir):
    """The real stall capture: torch's inductor compile workers, 17 a run, folded."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(repo_dir / "data" / "incidents" / "h200-1gpu-stall")
    life = tables.lifetimes(inc)
    pools = life[life["what"].str.contains("__main__.py --pickler=torch._inductor")]
    assert pools["what"].str.startswith("17 PIDs ").all() and len(pools) == 2
    trainers = life[life["what"].str.contains("dflash_postmortem.replay.train")]
    assert [w.split()[1] for w in trainers["what"]] == ["474", "887"]
    table = tables.process_view(inc, pm.detect(inc))
    assert table["pid"].str.startswith("17 processes (").sum() == 2
    assert "474" in set(table["pid"]) and "887" in set(table["pid"])


def test_lifetimes_and_the_overview_frames(bundled_incident, bundled_findings):
    life = tables.lifetimes(bundled_incident)
    assert life["what"].tolist()[:4] == ["PID 579 python3 -c import time; time.sleep(100000)",
                                         "PID 598 python3 trainer.py --run-name baseline --seconds 60 --pid-f…",
                                         "run baseline", "PID 598 on GPU 0,1"]
    assert life["start"].is_monotonic_increasing and set(life["group"]) == {"run", "process", "GPU process"}
    frames = tables.overview(bundled_incident, bundled_findings)
    assert frames["title"] == "h200-2gpu"
    # the findings, each ref with its line's text for the hover
    shown = frames["findings"]
    assert shown.drop(columns="cited").equals(bundled_findings)
    restart = shown[shown["kind"] == "failed_restart"].iloc[0]
    assert "logs/operator.log:9: bash: line 1: /workspace/train_opt2.log: No such file or directory" in restart["cited"]
    assert len(restart["cited"]) == len(restart["evidence"])
    assert len(frames["throughput"]) == 571 and len(frames["memory"]) == len(frames["utilization"]) == 580
    assert "console" not in set(frames["events"]["kind"])  # too many to mark one by one


def test_gpu_roles_after_the_recovery(seed_incident, seed_findings):
    start, end = levels.recovery_window(seed_incident, seed_findings)
    assert (start, end) == (pd.Timestamp("2026-05-09 21:39:55", tz="UTC"), pd.Timestamp("2026-05-09 22:29:51", tz="UTC"))
    roles = tables.gpu_roles(seed_incident, start, end)
    assert roles["expected_role"].tolist() == ["target"] * 6 + ["drafter"] * 2
    assert roles["observed"].tolist() == ["holds memory, busy"] * 5 + ["allocated, idle"] + ["holds memory, busy"] * 2
    assert roles.loc[5, ["memory_gib", "util_pct"]].tolist() == [8.5, 0.0]
    found = tables.role_findings(seed_findings)
    assert "idle" in " ".join(found["what"]) and found["evidence"].str.len().gt(0).all()
    rec = tables.recovery_table(seed_findings)
    assert rec["from"].tolist()[-1] == "21:39:55"


def test_notes_where_the_evidence_is_missing(tmp_path, bundled_dir):
    inc = smi_stream_only(tmp_path, bundled_dir)
    f = pm.detect(inc)
    said = {name: table.text for name, table in {
        "findings": tables.findings_table(f), "timeline": tables.timeline_table(pm.timeline(inc, f)),
        "headline": tables.headline(f), "levels": tables.levels(throughput.segments(throughput.series(inc))),
        "config": tables.config_diff(inc, f), "warnings": tables.warnings_near(inc, f),
        "causes": tables.root_causes(inc, f), "launches": tables.launch_checklist(inc, f),
        "processes": tables.process_view(inc, f), "recovery": tables.recovery_table(f)}.items()}
    assert said == {
        "findings": "no findings: the detectors found nothing in this evidence",
        "timeline": "nothing on the timeline: no finding and no operator action",
        "headline": "no throughput regression found: no headline numbers",
        "levels": "no data from training logs or wandb runs (train/tok_per_s, or a step counter)",
        "config": "no configuration difference between runs (or no run-to-run drop)",
        "warnings": "no throughput drop to look around",
        "causes": "no throughput drop found",
        "launches": "no data from shell transcripts or operator logs: no launch command seen",
        "processes": "no data from ps snapshots (no process listing was loaded)",
        "recovery": "no throughput drop, so nothing to recover from",
    }
    assert tables.gpu_roles(inc)["observed"].tolist() == ["holds memory, busy", "holds memory, busy"]


def test_role_findings_say_whether_there_were_roles_to_check(bundled_incident, bundled_findings, seed_incident, seed_findings):
    # h200-2gpu's folder gives no roles: nothing was checked, which is not "as expected"
    none = tables.role_findings(bundled_findings, bundled_incident)
    assert none.text == "no GPU roles given in incident.toml ([roles]), so none checked; no allocated idle GPU"
    # the seed reconstruction names them: its findings are the table
    seeded = tables.role_findings(seed_findings, seed_incident)
    assert seed_incident.config.roles and isinstance(seeded, pd.DataFrame) and len(seeded) >= 1


def test_gpu_time_shows_the_ledger_per_gpu(bundled_incident):
    from dflash_postmortem.model import ledger
    from dflash_postmortem.model.ledger import CLASSES

    t = tables.gpu_time(bundled_incident)
    led = ledger(bundled_incident)
    assert t["GPU"].tolist() == ["GPU 0", "GPU 1"] and (t["window"] == "288 s").all()
    for (_, row), (_, sums) in zip(t.iterrows(), led.iterrows(), strict=True):
        for c in CLASSES:  # each class as `seconds (share)`, blank where it had none
            assert row[c] == ("" if sums[c] < 0.5 else f"{sums[c]:,.0f} s ({sums[c] / sums['total']:.0%})")
    assert t.loc[0, "restarting"] == "19 s (7%)" and t.loc[0, "stalled"] == ""


def test_gpu_time_without_gpus_says_so(repo_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(repo_dir / "data" / "incidents" / "h200-2gpu-replay-ab")  # results, no GPU samples
    t = tables.gpu_time(inc)
    assert isinstance(t, Missing) and "no GPU time" in t.text


def test_the_lifetimes_that_fit_are_the_incidents_not_the_machines():
    """h100-1gpu-rendezvous-wait's `top -b` lists the whole machine from before the job began
    (`[kthreadd]`, `[kworker/...]`: 202 PIDs): by start alone the thirty lanes were all the
    machine's and no torchrun agent was drawn. The starts' processes come first (the agents 599,
    659 and 706, the worker 734), then what a trainer can be, never a kernel thread or a process
    listed without a command line."""
    from support.bundled import loaded

    from dflash_postmortem.present.tables import MAX_LIFETIMES, lifetimes

    inc, _ = loaded("h100-1gpu-rendezvous-wait")
    life = lifetimes(inc)
    assert inc.processes["pid"].nunique() > MAX_LIFETIMES >= len(life)
    pids = set(life["detail"].str.extract(r"^PID (\d+) ", expand=False).dropna().astype(int))
    assert {599, 659, 706, 734} <= pids
    assert not life["detail"].str.contains(r"^PID \d+ \[", regex=True).any()
    assert life["start"].is_monotonic_increasing
