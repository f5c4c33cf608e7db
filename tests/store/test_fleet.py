"""The fleet detectors (detect/fleet.py) on a fleet written by benchmarks/gen_fleet.py and read by
the kit's own loaders: every planted fault found with its host, GPU and time, and nothing else."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dflash_postmortem as pm
from dflash_postmortem import schema
from dflash_postmortem.detect.fleet import BUCKET_S, STRAGGLER_GAP_PCT, Fleet
from dflash_postmortem.store.fleet import windows

GEN = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_fleet.py"
# truth.json's kind -> the kind of finding that reports it
KIND = {"straggler": "straggler", "gpu_lost": "gpu_error", "restart_never_came_up": "restart_never_came_up"}


def _generator():
    # benchmarks/ is not a package: the script is loaded from its path, as `python gen_fleet.py` runs it.
    spec = importlib.util.spec_from_file_location("gen_fleet", GEN)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gen_fleet = _generator()


def generate(out: Path, *args: str) -> dict:
    assert gen_fleet.main([str(out), *args]) == 0
    return json.loads((out / "truth.json").read_text())


def connect(inc) -> duckdb.DuckDBPyConnection:
    """What the store gives the detectors: one view per canonical frame."""
    con = duckdb.connect()
    for name in schema.FRAME_NAMES:
        con.register(name, getattr(inc, name))
    return con


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    out = tmp_path_factory.mktemp("fleet") / "fleet"
    # 4 hosts x 8 GPUs x 40 min: the straggler at 10 min, the lost GPU at 16, the relaunch at 24;
    # the NCCL watchdog ends the lost host's job at 26 and the relaunch is watched for 16 min.
    truth = generate(out, "--hosts", "4", "--hours", "0.6667", "--seed", "7", "--no-prometheus")
    inc = pm.load_incident(out)
    return out, truth, inc


@pytest.fixture(scope="module")
def found(fleet):
    _, _, inc = fleet
    return Fleet(connect(inc), config=inc.config).detect()


def test_the_kits_loaders_read_the_generated_fleet_with_no_skipped_line(fleet):
    out, truth, inc = fleet
    ignored = [f.path for f in inc.load_report.files if "ignored by incident.toml" in f.notes]
    assert ignored == ["truth.json"]  # the answer key lies beside the data, not read as evidence
    reports = {f.path: f for f in inc.load_report.files if f.path not in ("incident.toml", "truth.json")}
    hosts = [f"node{h:03d}" for h in range(1, 5)]
    assert {p.split("/")[0] for p in reports} == set(hosts)
    for path, rep in reports.items():
        assert rep.error is None, path
        assert rep.balanced, path
        if path.endswith("smi.csv"):
            assert rep.format == "nvidia-smi-query-csv"
            assert dict(rep.skipped) == {"header line": 1}
            assert rep.parsed == 8 * 2400  # 8 GPUs, 1 Hz, 40 min
        elif path.endswith(".log") and "train_rank" in path:
            assert rep.format == "training-log"
            assert rep.n_skipped == 0, (path, dict(rep.skipped))
            step_lines = sum(" step " in line for line in (out / path).read_text().splitlines())
            assert rep.rows["metrics"] == 3 * step_lines  # tok/s, loss, queue depth
        else:
            assert rep.n_skipped == 0, (path, dict(rep.skipped))
    lost = truth["faults"][1]
    gpus = inc.gpus
    silent = gpus[(gpus["host"] == lost["host"]) & gpus["memory_used_mib"].isna()]
    assert set(silent["gpu"]) == {lost["gpu"]}
    assert silent["time"].min().floor("s") == pd.Timestamp(lost["start"])
    assert gpus["host"].notna().all() and len(gpus) == 4 * 8 * 2400


def test_every_planted_fault_is_found_with_its_host_gpu_and_time_and_nothing_else(fleet, found):
    _, truth, _ = fleet
    got = sorted((r.kind, r.numbers["host"], r.numbers.get("gpu")) for r in found.itertuples())
    want = sorted((KIND[f["kind"]], f["host"], f["gpu"]) for f in truth["faults"])
    assert got == want
    for f in truth["faults"]:
        row = found[found["kind"] == KIND[f["kind"]]].iloc[0]
        t = pd.Timestamp(f["start"])
        if f["kind"] == "straggler":
            # Judged on per-minute means: a minute counts once most of it is slow, so the finding
            # starts at the minute the fault began in, or the next one.
            assert t - pd.Timedelta(seconds=BUCKET_S) < row["start"] <= t + pd.Timedelta(seconds=BUCKET_S)
        elif f["kind"] == "gpu_lost":
            # The first sample that read nothing: the -l 1 loop's tick within the second.
            assert t <= row["start"] < t + pd.Timedelta(seconds=1)
        else:
            assert row["start"] == t  # the relaunch command's own stamp


def test_the_findings_carry_the_evidence_and_numbers_behind_them(fleet, found):
    _, truth, _ = fleet
    by = {r.kind: r for r in found.itertuples()}
    s = by["straggler"]
    assert s.numbers["util_pct"] >= 99 and s.numbers["peers_util_pct"] < 60
    assert s.numbers["sm_clock_mhz"] < 1100 < 1900 < s.numbers["fleet_sm_clock_mhz"]
    assert 0.5 < s.numbers["ratio"] < 0.6  # the job at the throttled GPU's pace (gen: x0.55)
    assert any(re.fullmatch(rf"{s.numbers['host']}/smi\.csv:\d+", e) for e in s.evidence)
    e = by["gpu_error"]
    lost = truth["faults"][1]
    assert e.numbers["uuid"] == truth["uuids"][lost["host"]][lost["gpu"]]
    assert set(e.numbers["event_kinds"]) >= {"gpu_lost", "xid"}
    assert f"{lost['host']}/kern.log:1" in e.evidence
    r = by["restart_never_came_up"]
    assert r.evidence == [f"{r.numbers['host']}/operator.log:2"]
    assert r.numbers["gpu_memory_after_mib"] == 0 and r.numbers["step_lines_after"] == 0
    assert r.numbers["last_step_time"] < r.start


def test_levels_per_host_and_gpu(fleet):
    _, truth, inc = fleet
    fl = Fleet(connect(inc), config=inc.config)
    hosts = fl.host_levels().set_index("host")
    straggler = truth["faults"][0]
    healthy = hosts.drop(index=[f["host"] for f in truth["faults"]])
    assert (healthy["tok_per_s"].between(20000, 23000)).all()
    assert hosts.loc[straggler["host"], "util_pct"] < 60 < healthy["util_pct"].min()
    gpus = fl.gpu_levels()
    assert len(gpus) == 32
    lost = truth["faults"][1]
    one = gpus[(gpus["host"] == lost["host"]) & (gpus["gpu"] == lost["gpu"])].iloc[0]
    assert one["silent_share"] == pytest.approx(1 - 16 * 60 / 2400, abs=0.01)


def test_incident_windows_cover_the_findings(found):
    w = windows(found, pad=pd.Timedelta(0))
    assert len(w) == 1  # the three faults overlap in time: one window
    assert w["start"].iloc[0] == found["start"].min() and w["end"].iloc[0] == found["end"].max()
    assert sorted(w["hosts"].iloc[0]) == sorted({n["host"] for n in found["numbers"]})
    apart = windows(found.iloc[[0]], pad=pd.Timedelta(minutes=1))
    assert apart["end"].iloc[0] - apart["start"].iloc[0] == found["end"].iloc[0] - found["start"].iloc[0] + pd.Timedelta(minutes=2)


def test_an_idle_allocated_gpu_and_a_role_drift_are_found_on_their_host(fleet):
    _, truth, inc = fleet
    healthy = sorted(set(truth["uuids"]) - {f["host"] for f in truth["faults"]})[0]
    g = inc.gpus.copy()
    on = (g["host"] == healthy) & (g["time"] >= pd.Timestamp(truth["start"]) + pd.Timedelta(minutes=20))
    g.loc[on & (g["gpu"] == 6), "util_gpu_pct"] = 0.0  # a drafter that stopped working, memory held
    g.loc[on & (g["gpu"] == 7), "memory_used_mib"] = 120000.0  # a second target loaded on a drafter GPU
    con = connect(inc)
    con.register("gpus", g)
    fl = Fleet(con, config=inc.config)
    idle = fl.idle_allocated()
    assert [(n["host"], n["gpu"]) for n in idle["numbers"]] == [(healthy, 6)]
    assert idle["start"].iloc[0] == pd.Timestamp(truth["start"]) + pd.Timedelta(minutes=20)
    drift = fl.role_drift()
    assert [(n["host"], n["gpus_out_of_place"]) for n in drift["numbers"]] == [(healthy, [7])]
    assert drift["numbers"].iloc[0]["observed_heavy"] == [0, 1, 2, 3, 4, 5, 7]


def test_nan_readings_in_parquet_count_as_no_reading(fleet, tmp_path):
    """Parquet written from numpy keeps NaN where pandas frames register NULL: both are silence."""
    _, truth, inc = fleet
    lost = truth["faults"][1]
    g = inc.gpus[schema.columns("gpus")]
    cols = {c: (pa.array(g[c].to_numpy(), from_pandas=False) if g[c].dtype == "float64" else pa.array(g[c]))
            for c in g.columns}
    pq.write_table(pa.table(cols), tmp_path / "gpus.parquet")
    assert pq.read_table(tmp_path / "gpus.parquet").column("memory_used_mib").null_count == 0
    con = connect(inc)
    con.execute(f"CREATE OR REPLACE VIEW gpus AS SELECT * FROM read_parquet('{tmp_path / 'gpus.parquet'}')")
    errors = Fleet(con, config=inc.config).gpu_errors()
    assert [(n["host"], n["gpu"]) for n in errors["numbers"]] == [(lost["host"], lost["gpu"])]


def test_the_generator_is_deterministic_and_writes_promtools_dump(tmp_path):
    a = generate(tmp_path / "a", "--hosts", "3", "--hours", "0.34", "--seed", "3")
    generate(tmp_path / "b", "--hosts", "3", "--hours", "0.34", "--seed", "3")
    for rel in ("node001/smi.csv", "node002/train_rank8.log", "prometheus/dcgm.om", "incident.toml"):
        assert hashlib.sha256((tmp_path / "a" / rel).read_bytes()).digest() == \
            hashlib.sha256((tmp_path / "b" / rel).read_bytes()).digest(), rel
    lines = (tmp_path / "a" / "prometheus" / "dcgm.om").read_text().splitlines()
    assert lines[-1] == "# EOF"
    sample = re.compile(r'^(DCGM_FI_DEV_\w+)\{Hostname="(node\d+)", UUID="(GPU-[0-9a-f-]+)", device="nvidia(\d)", '
                        r'gpu="(\d)", instance="[^"]+", job="dcgm-exporter", modelName="NVIDIA H200"\} (\S+) (\d+\.\d{3})$')
    parsed = [sample.match(line) for line in lines[:-1]]
    assert all(parsed)
    # promtool's order: series sorted by their labels (Hostname, UUID, then the metric name).
    keys = [(m[2], m[3], m[1]) for m in parsed]
    assert keys == sorted(keys)
    lost = a["faults"][1]
    uuid = a["uuids"][lost["host"]][lost["gpu"]]
    xid = [(float(m[7]), float(m[6])) for m in parsed if m[3] == uuid and m[1] == "DCGM_FI_DEV_XID_ERRORS"]
    start = pd.Timestamp(lost["start"]).timestamp()
    assert {v for t, v in xid if t >= start} == {79.0} and {v for t, v in xid if t < start} == {0.0}
    util = np.array([float(m[7]) for m in parsed if m[3] == uuid and m[1] == "DCGM_FI_DEV_GPU_UTIL"])
    assert util.max() < start  # DCGM cannot read a GPU off the bus


def test_the_fleet_command_finds_the_faults_then_reads_each_window(tmp_path, capsys):
    """`dflash-postmortem fleet DIR`: the store ingested, the fleet findings over it, and the
    incident detectors on the window around them, each finding naming its host."""
    from dflash_postmortem.cli import main

    out = tmp_path / "fleet"
    truth = generate(out, "--hosts", "4", "--hours", "0.6667", "--seed", "7", "--no-prometheus")
    assert main(["fleet", str(out), "--workers", "1"]) == 0
    text = capsys.readouterr().out
    hosts = {f["kind"]: f["host"] for f in truth["faults"]}
    assert "Fleet findings over the whole store (3):" in text
    assert f"straggler: host {hosts['straggler']} GPU" in text
    assert f"gpu_error: host {hosts['gpu_lost']} GPU" in text
    assert f"restart_never_came_up: host {hosts['restart_never_came_up']}: the relaunch" in text
    # the window handed to the incident detectors: the straggler's host's drop, the relaunch's host
    assert re.search(rf"throughput_regression: host {hosts['straggler']}: throughput fell", text)
    assert re.search(rf"failed_restart: host {hosts['restart_never_came_up']}: restart at", text)
    assert (out / ".dflash-store").is_dir()


# -- the incident story of the same folder (detect(), host by host) ----------------------------

@pytest.fixture(scope="module")
def told(fleet):
    _, _, inc = fleet
    return pm.detect(inc)


def _host_share(inc, host: str):
    from dflash_postmortem.clock.hosts import views

    return next(share for h, share in views(inc) if h == host)


def test_each_hosts_rank_logs_are_one_attempt_with_its_ranks(fleet):
    """Eight logs begun in the same second, named but for the rank (train_rank16.log ...), are
    the ranks of one job, not eight starts; a watchdog line naming its rank starts nothing."""
    _, truth, inc = fleet
    from dflash_postmortem.model import attempts

    for h in range(4):
        host = f"node{h + 1:03d}"
        att = attempts(_host_share(inc, host))
        trained = att[att["first_step"].notna()]
        assert len(trained) == 1, host
        a = trained.iloc[0]
        assert a["ranks"] == list(range(8 * h, 8 * h + 8))
        assert len(a["sources"]) == 8 and a["start"] == pd.Timestamp(truth["start"])
    # the relaunch that never came up is the one other attempt, on its host only
    relaunch = next(f for f in truth["faults"] if f["kind"] == "restart_never_came_up")
    att = attempts(_host_share(inc, relaunch["host"]))
    assert att["start"].tolist()[1:] == [pd.Timestamp(relaunch["start"])] and att["first_step"].isna().tolist()[1:] == [True]


def test_the_lost_gpu_is_the_cause_of_its_hosts_death_not_the_ranks_timeouts(fleet, told):
    _, truth, inc = fleet
    lost = next(f for f in truth["faults"] if f["kind"] == "gpu_lost")
    from dflash_postmortem.model import attempts

    a = attempts(_host_share(inc, lost["host"])).iloc[0]
    assert (a["cause_kind"], a["cause_time"], a["cause_ref"]) == ("xid", pd.Timestamp(lost["start"]), f"{lost['host']}/kern.log:1")
    # the watchdog, 600 s later, is how it ended
    assert a["end_kind"] == "nccl_timeout" and a["end"] == pd.Timestamp(lost["start"]) + pd.Timedelta(seconds=600)
    died = told[(told["kind"] == "training_died")]
    assert [n["host"] for n in died["numbers"]] == [lost["host"]]
    d = died.iloc[0]
    assert d["start"] == pd.Timestamp(lost["start"]) and d["end"] == a["end"]
    assert d["numbers"]["error"].startswith("NVRM: Xid (PCI:0000:9a:00): 79") and "fallen off the bus" in d["numbers"]["error"]
    assert [c["id"] for c in d["caused_by"]][0] == f"event:{lost['host']}/kern.log:1"
    # no start is told for the machine's own lines, none for a rank's timeout
    assert not any(k in ("failed_restart", "never_trained") and n["host"] == lost["host"]
                   for k, n in zip(told["kind"], told["numbers"], strict=True))


def test_the_stragglers_drop_is_told_within_its_job_not_as_one_rank_replacing_another(fleet, told):
    _, truth, _ = fleet
    slow = next(f for f in truth["faults"] if f["kind"] == "straggler")
    reg = told[told["kind"] == "throughput_regression"]
    assert [n["host"] for n in reg["numbers"]] == [slow["host"]]
    n = reg["numbers"].iloc[0]
    assert n["across_runs"] is False and 0.5 < n["ratio"] < 0.6
    assert pd.Timestamp(slow["start"]) <= reg["start"].iloc[0] <= pd.Timestamp(slow["start"]) + pd.Timedelta(seconds=10)


def test_the_incident_story_tells_the_fleets_findings_and_links_them_to_what_they_caused(fleet, told):
    """detect() on a folder of several hosts adds what only the fleet detectors see (the GPU
    setting its host's pace, the lost GPU) to each host's own findings, not what those already
    tell (the relaunch that never came up is the host's failed_restart), and links each GPU to
    what it did to its host's job."""
    _, truth, _ = fleet
    by = {f["kind"]: f for f in truth["faults"]}
    got = sorted((k, n["host"], n.get("gpu")) for k, n in zip(told["kind"], told["numbers"], strict=True)
                 if k in ("straggler", "gpu_error", "restart_never_came_up", "failed_restart"))
    assert got == sorted([("straggler", by["straggler"]["host"], by["straggler"]["gpu"]),
                          ("gpu_error", by["gpu_lost"]["host"], by["gpu_lost"]["gpu"]),
                          ("failed_restart", by["restart_never_came_up"]["host"], None)])
    ids = dict(zip(told["kind"], told["id"], strict=True))
    assert ids["straggler"] == f"straggler@{pd.Timestamp(by['straggler']['start']).isoformat()[:19]}@{by['straggler']['host']}"
    reg = told[told["kind"] == "throughput_regression"].iloc[0]
    assert [c["id"] for c in reg["caused_by"]] == [ids["straggler"]]
    died = told[told["kind"] == "training_died"].iloc[0]
    assert ids["gpu_error"] in [c["id"] for c in died["caused_by"]]
    assert told["start"].is_monotonic_increasing and told["id"].is_unique


def test_a_straggler_shown_only_by_its_clock_and_power_is_found(tmp_path):
    """Every GPU of the host keeps its utilization (the others spin in NCCL as they wait): the
    throttled GPU's SM clock against its busy peers' tells it, with the host's job behind the
    fleet; the detector is told nothing of which GPU."""
    out = tmp_path / "fleet"
    truth = generate(out, "--hosts", "3", "--hours", "0.5", "--seed", "11", "--no-prometheus", "--straggler-in", "clocks")
    slow = truth["faults"][0]
    inc = pm.load_incident(out)
    g = inc.gpus
    after = g[(g["host"] == slow["host"]) & (g["time"] >= pd.Timestamp(slow["start"]) + pd.Timedelta(minutes=1))]
    util = after.groupby("gpu")["util_gpu_pct"].median()
    # utilization does not show it: the others are as busy, within the util rule's gap of it
    assert util[slow["gpu"]] - util.drop(slow["gpu"]).median() < STRAGGLER_GAP_PCT
    found = Fleet(connect(inc), config=inc.config).stragglers()
    assert [(n["host"], n["gpu"], n["shown_by"]) for n in found["numbers"]] == [(slow["host"], slow["gpu"], "clock")]
    n = found["numbers"].iloc[0]
    assert n["sm_clock_mhz"] < 1100 < 1900 < n["peers_sm_clock_mhz"]
    assert n["power_w"] < 300 < n["peers_power_w"]
    # the capture's clocks_event_reasons.active: HW thermal slowdown on it, nothing on its peers
    assert n["clock_reasons"] == ["hw_thermal_slowdown"] and n["peers_clock_reasons"] == []
    assert "the driver held its clocks down for hw_thermal_slowdown" in found["detail"].iloc[0]
    # to the end of the captures: the other hosts' pace is its reference, not its own
    assert found["end"].iloc[0] == pd.Timestamp(truth["start"]) + pd.Timedelta(minutes=30)
    t = pd.Timestamp(slow["start"])
    assert t - pd.Timedelta(seconds=BUCKET_S) < found["start"].iloc[0] <= t + pd.Timedelta(seconds=BUCKET_S)
    assert re.search(r"its SM clock at 10[45]\d MHz against its peers' 19\d\d MHz", found["title"].iloc[0])
    # and the story of the folder tells it as the cause of the host's drop
    told = pm.detect(inc)
    reg = told[told["kind"] == "throughput_regression"]
    assert [n["host"] for n in reg["numbers"]] == [slow["host"]]
    assert [c["id"].split("@")[0] for c in reg["caused_by"].iloc[0]] == ["straggler"]


def test_inspect_on_a_fleet_folder_tells_the_lost_gpu(fleet, capsys):
    from dflash_postmortem.cli import main

    out, truth, _ = fleet
    lost = truth["faults"][1]
    assert main(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"gpu_error: host {lost['host']} GPU {lost['gpu']} is lost" in text
    assert "Nothing went wrong" not in text


def test_the_watch_on_a_fleet_folder_says_the_fleets_findings_of_their_hosts(fleet, capsys):
    """`watch --once` on the folder: the straggler and the lost GPU said of their hosts, and the
    relaunch that never came up said once, from its evidence; its `not starting` (the watch's
    clock is now, long past its budget) quotes its own host's GPUs, at 0 MiB."""
    from dflash_postmortem.cli import main

    out, truth, _ = fleet
    by = {f["kind"]: f for f in truth["faults"]}
    assert main(["watch", str(out), "--once", "--width", "400"]) == 0
    text = capsys.readouterr().out
    assert re.search(rf"host {by['straggler']['host']}  host {by['straggler']['host']} GPU {by['straggler']['gpu']} "
                     "sets the pace", text)
    assert re.search(rf"host {by['gpu_lost']['host']}  host {by['gpu_lost']['host']} GPU {by['gpu_lost']['gpu']} is lost", text)
    relaunch = by["restart_never_came_up"]["host"]
    assert len(re.findall(rf"host {relaunch}: restart at 00:24:00 never came up", text)) == 1
    assert re.search(r"node001-restart  not starting: no process of it listed, 0 MiB on the GPUs", text)


def test_what_the_watch_says_of_a_starts_gpus_in_a_fleet_is_its_own_hosts(fleet):
    """The memory the `not starting` line quotes for a start with no per-process samples: the
    GPUs of its own host at its last sample (the relaunch's host at 0 MiB), not those of whichever
    host sampled last."""
    from dflash_postmortem.model import attempts
    from dflash_postmortem.watch.live import _memory

    _, truth, inc = fleet
    relaunch = next(f for f in truth["faults"] if f["kind"] == "restart_never_came_up")
    att = attempts(inc)
    a = att[att["start"] == pd.Timestamp(relaunch["start"])].iloc[0]
    assert a["host"] == relaunch["host"]
    assert _memory(inc, a) == "0 MiB on the GPUs"
    # what it said before: the GPUs of whichever host sampled last (38,886 MiB here, another host's)
    last = inc.gpus[inc.gpus["time"] == inc.gpus["time"].max()]
    assert set(last["host"]) != {relaunch["host"]} and last["memory_used_mib"].sum() > 0


def test_what_happened_names_the_gpu_that_set_the_pace_as_the_drops_likely_cause(fleet, capsys):
    from dflash_postmortem.cli import main

    out, truth, _ = fleet
    slow = truth["faults"][0]
    assert main(["inspect", str(out), "--width", "400"]) == 0
    text = capsys.readouterr().out
    assert re.search(rf"throughput fell from 21\.\dK tok/s to 11\.\dK tok/s \(0\.55 of baseline\) within run "
                     rf"{slow['host']}-rank\d+; likely cause: host {slow['host']} GPU {slow['gpu']} sets the pace", text)


def test_a_gpu_that_waits_at_a_low_clock_is_no_straggler(fleet):
    """A drafter between batches holds its memory at a low clock and low utilization: with no pace
    logged to say the job is behind, its clock alone would flag it; it is not working flat out,
    so it sets no pace."""
    _, truth, inc = fleet
    healthy = sorted(set(truth["uuids"]) - {f["host"] for f in truth["faults"]})[0]
    g = inc.gpus.copy()
    on = (g["host"] == healthy) & (g["gpu"] == 7) & (g["time"] >= pd.Timestamp(truth["start"]) + pd.Timedelta(minutes=20))
    g.loc[on, "sm_clock_mhz"] = 345.0
    g.loc[on, "util_gpu_pct"] = 30.0
    con = connect(inc)
    con.register("gpus", g)
    con.register("metrics", inc.metrics.iloc[:0])  # no pace logged anywhere
    found = Fleet(con, config=inc.config).stragglers()
    assert (healthy, 7) not in [(n["host"], n["gpu"]) for n in found["numbers"]]
    g.loc[on, "util_gpu_pct"] = 100.0  # the same clock flat out: that one sets the pace
    con.register("gpus", g)
    found = Fleet(con, config=inc.config).stragglers()
    assert (healthy, 7, "clock") in [(n["host"], n["gpu"], n["shown_by"]) for n in found["numbers"]]
