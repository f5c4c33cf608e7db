"""wandb runs into frames (run.py): the real capture's three runs, a run folder without its .wandb log,
and the SDK's own reader as a cross-check."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm

REPO = Path(__file__).resolve().parents[3]
INCIDENT = REPO / "data/incidents/h200-2gpu"
RUNS = INCIDENT / "wandb/wandb"
FOLDERS = {
    "baseline": RUNS / "offline-run-20261130_052027-3lsy4q7j",
    "regressed": RUNS / "offline-run-20261130_052148-ccsp0ih3",
    "fixed": RUNS / "offline-run-20261130_052320-kpqfxkj2",
}


TOK_S = re.compile(r"tok/s (\d+)")


@pytest.fixture(scope="module")
def runs() -> pm.Incident:
    return pm.load_wandb_run(RUNS)


def _wandb_console_tok_s(inc: pm.Incident, run: str) -> int:
    """tok/s lines that reached the .wandb log as console records (the trainer's wandb output)."""
    ev = inc.events
    mine = ev[(ev["run"] == run) & ev["source"].str.endswith(".wandb") & (ev["kind"] == "console")]
    return int(mine["message"].str.contains("tok/s").sum())


def test_history_rows_match_what_each_run_logged(runs):
    tok = runs.metrics[runs.metrics["metric"] == "train/tok_per_s"]
    counts = tok.groupby("run").size().to_dict()
    # baseline finished cleanly: every tok/s line of its trainer log is a history row.
    train_log = (INCIDENT / "logs/train.log").read_text()
    assert counts["baseline"] == len(TOK_S.findall(train_log)) == 203
    # regressed was SIGTERMed: wandb persisted 55 of the trainer's 71 tok/s lines; the log's
    # console records and its history agree on that.
    assert counts["regressed"] == _wandb_console_tok_s(runs, "regressed") == 55
    assert len(TOK_S.findall((INCIDENT / "logs/train_opt.log").read_text())) == 71
    # fixed was copied while live: its 277th tok/s line is in the log, but the summary record
    # of _step 276 is the torn last record and the matching history record never came.
    assert _wandb_console_tok_s(runs, "fixed") == 277
    assert counts["fixed"] == 276
    assert tok[tok["run"] == "fixed"]["step"].max() == 275
    # values are the trainer's: the first baseline row equals its first printed tok/s
    first = tok[tok["run"] == "baseline"].sort_values("step").iloc[0]
    assert first["value"] == pytest.approx(float(TOK_S.findall(train_log)[0]), abs=1)
    assert (tok["key"] == "train/tok_per_s").all()


def test_times_steps_and_schema(runs):
    runs.validate()
    m = runs.metrics
    hist = m[~m["metric"].str.startswith("system/")]
    assert str(m["time"].dtype) == "datetime64[us, UTC]"
    assert hist["time"].notna().all() and hist["step"].notna().all()
    base = hist[(hist["run"] == "baseline") & (hist["metric"] == "train/loss")]
    assert base["step"].min() == 0 and base["step"].max() == 202
    assert base["time"].min() >= pd.Timestamp("2026-11-30 05:20:27", tz="UTC")
    assert base["time"].max() <= pd.Timestamp("2026-11-30 05:21:55", tz="UTC")
    assert {"train/loss", "queue/depth", "train/step"} <= set(hist["metric"])


def test_system_gpu_metrics_on_the_right_gpus(runs):
    g = runs.gpus
    smi = pd.read_csv(INCIDENT / "logs/smi_stream.csv", skipinitialspace=True)
    smi_uuid = dict(zip(smi["index"], smi["uuid"], strict=False))
    for run in FOLDERS:
        mine = g[g["run"] == run]
        assert set(mine["gpu"]) == {0, 1}
        # wandb's GPU i is nvidia-smi's index i: the same UUIDs
        for gpu, uuid in mine.groupby("gpu")["uuid"].first().items():
            assert uuid == smi_uuid[gpu]
        assert (mine["memory_total_mib"] == 143771).all()
        # the config says target on GPU 0, drafter on GPU 1; both hold memory while training
        cfg = runs.runs[run].config
        assert (cfg["target_gpu"], cfg["drafter_gpu"]) == (0, 1)
        assert mine.groupby("gpu")["memory_used_mib"].max().gt(4000).all()
    # first regressed sample: the drafter GPU is saturated, the target half busy (raw stats)
    reg = g[g["run"] == "regressed"].sort_values("time")
    first = reg.groupby("gpu").first()
    assert first.loc[0, "util_gpu_pct"] == 48 and first.loc[1, "util_gpu_pct"] == 99
    assert first.loc[0, "memory_used_mib"] == pytest.approx(4654432256 / 2**20)
    sysm = runs.metrics[runs.metrics["metric"] == "system/gpu.1.powerWatts"]
    assert len(sysm) == len(g[g["gpu"] == 1]) and sysm["step"].isna().all()


def test_identity_config_summary_exit(runs):
    base, reg, fixed = (runs.runs[r] for r in ("baseline", "regressed", "fixed"))
    assert (base.id, base.project, base.host) == ("3lsy4q7j", "dflash-replay", "vm")
    assert base.started == pd.Timestamp("2026-11-30 05:20:27.797908", tz="UTC")
    assert base.exit_record is True and base.exit_code == 0
    assert reg.exit_record is False and reg.exit_code is None and reg.id == "ccsp0ih3"
    assert fixed.exit_record is False
    assert reg.config["fast_linear_attn"] == 0 and reg.config["use_reentrant"] == 0
    assert "--fast-linear-attn 0" in reg.command
    assert reg.summary["train/step"] == 275
    ends = runs.events[runs.events["kind"] == "run_end"].set_index("run")
    assert ends.loc["regressed", "message"].startswith("ended without exit record")
    assert ends.loc["baseline", "message"].startswith("run exited with code 0")
    # the SIGTERMed run's last record is 05:22:48, eight seconds before its console stops
    assert reg.ended == pd.Timestamp("2026-11-30 05:22:48.121145", tz="UTC")


def test_console_events(runs):
    ev = runs.events[(runs.events["kind"] == "console") & (runs.events["run"] == "regressed")]
    assert ev["pid"].eq(971).all()  # from the SDK's debug.log: "Configure stats pid to 971"
    first = ev.sort_values("time").iloc[0]
    assert first["message"] == "2026-11-30 05:21:49 [regressed] Loading dataset ..."
    assert re.fullmatch(r".*run-ccsp0ih3\.wandb:\d+", first["ref"])
    # output.log lines the .wandb log lacks are kept, with the times printed in them
    late = ev[ev["source"].str.endswith("files/output.log")]
    assert len(late) == 14
    assert late["message"].iloc[-1].startswith("2026-11-30 05:22:56 [regressed] step 345")
    assert late["time"].iloc[-1] == pd.Timestamp("2026-11-30 05:22:56", tz="UTC")
    assert late["ref"].iloc[-1].endswith("files/output.log:76")


def test_load_incident_claims_every_wandb_file():
    inc = pm.load_incident(INCIDENT)
    assert set(inc.runs) >= set(FOLDERS)
    rep = inc.load_report
    on_disk = {p.relative_to(INCIDENT).as_posix() for p in (INCIDENT / "wandb").rglob("*") if p.is_file()}
    reported = {f.path: f for f in rep.files}
    assert on_disk <= set(reported)
    for path in on_disk:
        f = reported[path]
        assert f.format is not None and f.format.startswith("wandb"), (path, f.format)
        assert f.balanced, f.summary()
    assert reported["wandb/wandb/latest-run"].format == "wandb-bookkeeping"
    wandb_logs = [f for f in rep.files if f.format == "wandb-log"]
    assert len(wandb_logs) == 3 and all(f.unit == "record" for f in wandb_logs)


def test_run_folder_without_the_wandb_file(tmp_path):
    folder = tmp_path / "run-20260101_000000-abc123"
    shutil.copytree(FOLDERS["regressed"], folder, ignore=shutil.ignore_patterns("*.wandb"))
    files = folder / "files"
    files.chmod(0o755)
    (files / "wandb-summary.json").write_text('{"train/loss": 10.4, "_step": 54}')
    inc = pm.load_wandb_run(folder)
    info = inc.runs["ccsp0ih3"]  # its debug logs name the run, whatever the folder is called
    assert info.exit_record is None  # unknown, not "killed": there is no log to tell
    assert info.summary == {"train/loss": 10.4, "_step": 54}
    assert inc.metrics.empty
    notes = " ".join(n for f in inc.load_report.files for n in f.notes)
    assert "no .wandb transaction log" in notes
    console = inc.events[inc.events["kind"] == "console"]
    assert len(console) == 69 + 7  # every non-blank output.log line, with its own time
    assert all(f.balanced for f in inc.load_report.files)


def test_cross_check_with_the_sdks_own_reader(tmp_path):
    """`wandb leet inspect --json` (wandb-core's Go reader) sees the same records and values."""
    cli = Path(sys.executable).with_name("wandb")
    if not cli.exists():
        pytest.skip("wandb CLI not installed")
    path = FOLDERS["fixed"] / "run-kpqfxkj2.wandb"
    env = dict(os.environ, WANDB_DIR=str(tmp_path))
    out = subprocess.run([str(cli), "leet", "inspect", "--json", str(path)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0 and "No such command" in out.stderr:
        pytest.skip("this wandb has no `leet inspect`")
    records = [json.loads(line) for line in out.stdout.splitlines()]
    inc = pm.load_wandb_run(path)
    rep = inc.load_report.files[0]
    assert rep.parsed == len(records) == 1411
    theirs = [(r["history"]["item"]["_step"], r["history"]["item"]["train/tok_per_s"])
              for r in records if r["type"] == "history"]
    tok = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]
    ours = list(zip(tok["step"].astype(int), tok["value"], strict=True))
    assert ours == theirs
    n_stats = sum(r["type"] == "stats" for r in records)
    assert inc.gpus["time"].nunique() == n_stats


def test_reading_a_wandb_log_leaves_the_sdk_unloaded_and_importable():
    """The .wandb reader takes wandb's generated protobuf modules without running the SDK's
    start-up (a second per report); a later `import wandb` in the same process still gets the
    whole SDK, whose messages parse what the reader parsed."""
    code = f"""
import sys
import dflash_postmortem as pm
inc = pm.load_wandb_run({str(FOLDERS['fixed'] / 'run-kpqfxkj2.wandb')!r})
print(len(inc.metrics), sorted(m for m in sys.modules if m == 'wandb' or m.startswith('wandb.')))
import wandb
from wandb.proto import wandb_internal_pb2
print(wandb.proto.wandb_internal_pb2 is wandb_internal_pb2, callable(wandb.init), hasattr(wandb, 'Api'))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()[-2:]
    rows, loaded = first.split(" ", 1)
    assert int(rows) > 1000 and loaded == "[]"
    assert second == "True True True"
