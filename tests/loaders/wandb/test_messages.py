"""The wandb SDK's own words: debug.log, debug-internal.log, debug-cli.log and its terminal lines,
read from real samples of SDKs 0.8 to 0.31 (values read off the files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.training_log import process_log
from dflash_postmortem.loaders.wandb import messages as wandb_messages

WANDB = Path(__file__).resolve().parents[2] / "fixtures" / "real-world" / "wandb"
DEBUG_LOGS = sorted(p for p in WANDB.rglob("*") if p.is_file() and p.name in ("debug.log", "debug-internal.log"))


def _load(tmp_path: Path, src: Path, toml: str | None = None) -> pm.Incident:
    inc_dir = tmp_path / "incident"
    inc_dir.mkdir(parents=True)
    (shutil.copytree if src.is_dir() else shutil.copyfile)(src, inc_dir / src.name)
    if toml:
        (inc_dir / "incident.toml").write_text(toml)
    return pm.load_incident(inc_dir)


@pytest.mark.parametrize("path", DEBUG_LOGS, ids=lambda p: str(p.relative_to(WANDB)))
def test_every_real_debug_log_is_claimed_over_the_training_log_reader(path):
    head = path.read_bytes()[:65536]
    assert wandb_messages.sniff_debug_log(path, head) == 0.95
    assert process_log.sniff_log(path, head) < 0.95


def test_debug_log_alone_run_id_pid_start_and_missing_finish(tmp_path):
    # 0.21: "run started, returning control to user process" at 16:20:01,980 local (UTC+8); the
    # log stops at 16:32:41,623 with no "finishing run" line: the run died of CUDA OOM.
    inc = _load(tmp_path, WANDB / "uasft-0.21-debug.log", 'timezone = "Asia/Shanghai"')
    ev = inc.events.set_index("kind")
    assert ev.loc["run_start", "time"] == pd.Timestamp("2025-10-15T08:20:01.980Z")
    assert ev.loc["run_end", "time"] == pd.Timestamp("2025-10-15T08:32:41.623Z")
    assert "without a finish line" in ev.loc["run_end", "message"]
    assert set(inc.events["run"]) == {"sv7hxi9x"} and set(inc.events["pid"]) == {1142283}
    rep = inc.load_report.files[-1]
    assert rep.balanced and any("Asia/Shanghai" in a for a in rep.assumptions)


def test_wandb_core_json_lines_with_offsets_and_network_retries(tmp_path):
    inc = _load(tmp_path, WANDB / "recmllm-0.18.7-empty-wandb-init-timeout")
    ev = inc.events
    retries = ev[ev["message"].str.startswith("api: retrying error")]
    # {"time":"2025-01-03T18:07:11.225784441+08:00","level":"INFO","msg":"api: retrying error",...}
    assert list(retries["time"]) == [pd.Timestamp("2025-01-03T10:07:11.225784Z"),
                                     pd.Timestamp("2025-01-03T10:07:43.373399Z")]
    assert set(retries["kind"]) == {"warning"} and set(retries["level"]) == {"INFO"}


def test_a_notebook_re_init_does_not_lend_the_previous_run_its_exit_code(tmp_path):
    # The log of oik2407f first finishes 8it4cf2l ("got exitcode: 0"), then wandb.init is
    # interrupted: oik2407f has no exit code.
    inc = _load(tmp_path, WANDB / "sparsegpt-0.13-init-interrupted-logs-only")
    [run] = inc.runs.values()
    assert run.id == "oik2407f" and run.exit_code is None
    rep = next(f for f in inc.load_report.files if f.path.endswith("debug.log"))
    assert rep.skipped["the end of an earlier run of the same process (wandb.init called again)"] == 2


def test_debug_cli_log_names_each_line_s_run(tmp_path):
    inc = _load(tmp_path, WANDB / "sparsegpt-0.13-debug-cli.log")
    ev = inc.events
    assert ev["run"].value_counts().to_dict() == {"3lubuoz0": 19, "8it4cf2l": 1}
    assert ev["message"].str.endswith("NoneType: None").all()  # the continuation line joined


def test_terminal_lines_exit_status_run_id_and_errors(tmp_path):
    ok = _load(tmp_path / "a", WANDB / "wandb-5601-terminal-finish-upload-history.txt")
    [end] = ok.events.itertuples()
    assert end.kind == "run_end" and end.exit_code == 0
    failed = _load(tmp_path / "b", WANDB / "wandb-785-terminal-0.8.21-launch-error.txt")
    [run] = failed.runs.values()
    assert run.id == "icfw2hdx" and run.name.startswith("unet_batch_16_samples_5")
    assert (failed.events["kind"] == "error").sum() == 2


def test_terminal_summary_paste(tmp_path):
    inc = _load(tmp_path, WANDB / "console-run-summary-yolov5-2021.txt")
    [run] = inc.runs.values()
    assert run.summary["metrics/mAP_0.5"] == 0.38431 and run.summary["_step"] == 10
    assert run.ended == pd.Timestamp(1619139799, unit="s", tz="UTC")


def test_folder_has_one_start_and_one_end_from_the_best_source(tmp_path):
    # With records: the run record's start and the exit record, not the debug logs' lines.
    inc = _load(tmp_path / "a", WANDB / "uasft-0.21-offline-8gpu-exit1")
    ev = inc.events
    assert (ev["kind"] == "run_start").sum() == 1 and (ev["kind"] == "run_end").sum() == 1
    assert ev.loc[ev["kind"] == "run_end", "source"].iloc[0].endswith(".wandb")
    # Header-only log (SIGKILL before wandb-core flushed a block): the debug logs date the end.
    killed = _load(tmp_path / "b", WANDB / "sdk031-sigkill-header-only-run")
    end = killed.events[killed.events["kind"] == "run_end"].iloc[0]
    assert end["source"].endswith("debug.log") and end["time"] == pd.Timestamp("2026-12-01T10:23:16.704Z")
    rep = next(f for f in killed.load_report.files if f.path.endswith(".wandb"))
    assert any("holds only its header" in n for n in rep.notes)


def test_python_sdk_log_gives_its_own_utc_offset(tmp_path):
    # 0.12: "run started: 6k2yiw4s with start time 1648381685" on a line stamped 17:18:06,740 local:
    # UTC+05:30, whatever the incident's timezone says. The upgrade notice names 0.12.11, which is
    # not the SDK that wrote the log.
    inc = _load(tmp_path, WANDB / "ivlabs-0.12-debug-internal.log", 'timezone = "Europe/Berlin"')
    ev = inc.events.set_index("kind")
    assert ev.loc["run_start", "time"] == pd.Timestamp("2022-03-27T11:48:05.886Z")
    assert ev.loc["run_end", "time"] == pd.Timestamp("2022-03-27T11:48:29.086Z")
    rep = inc.load_report.files[-1]
    assert any("UTC+05:30" in a for a in rep.assumptions)
    assert not any("0.12.11" in n for n in rep.notes)


def test_folder_debug_logs_agree_with_the_metadata_clock(tmp_path):
    # 0-byte .wandb: the end comes from debug.log (17:20:18,351 local = 11:50:18 UTC), 43 s after
    # metadata's startedAt, not five and a half hours.
    inc = _load(tmp_path, WANDB / "ivlabs-0.12-2x1080ti-empty-wandb-log")
    ev = inc.events.set_index("kind")
    assert ev.loc["run_end", "time"] - ev.loc["run_start", "time"] < pd.Timedelta(seconds=44)


def test_summary_newer_than_a_torn_log_is_a_run_summary_event(tmp_path):
    # The .wandb log stops at 03:40:21 (its history records never reached the file); the summary
    # was rewritten at _timestamp 1647488467 (03:41:07) with _step 3.
    inc = _load(tmp_path, WANDB / "ivlabs-0.12.9-windows-torn-run")
    summary = inc.events[inc.events["kind"] == "run_summary"]
    assert list(summary["time"]) == [pd.Timestamp("2022-03-17T03:41:07Z")]
    assert "iter_loss=257.879" in summary["message"].iloc[0]


def test_debug_core_log_copied_as_a_file(tmp_path):
    # wandb-core's server log: "id" is a connection (127.0.0.1:44424), the run is "streamId", and
    # its parent (ppid 3942942) is the trainer.
    path = WANDB / "llmail-0.18.7-debug-core.log"
    assert wandb_messages.sniff_debug_log(path, path.read_bytes()) == 0.95
    inc = _load(tmp_path, path)
    assert set(inc.events["run"]) == {"5kimi4nd"} and set(inc.events["pid"]) == {3942942}
    assert list(inc.events["kind"]) == ["run_start", "run_end"]


def test_gpu_monitor_nvml_faults_are_gpu_errors_and_not_supported_is_not_trouble(tmp_path):
    # 0.16.2 logs every failed NVML read at ERROR: "GPU requires restart" (one GPU, every 2 s) is
    # the GPU failing; "Not Supported" and "division by zero" are metrics a GPU does not report.
    # debug.log (no epoch line of its own) takes UTC-05:00 from debug-internal.log.
    inc = _load(tmp_path, WANDB / "reversal-0.16.2-8xa6000-gpu-requires-restart")
    ev = inc.events
    assert len(ev[ev["kind"] == "gpu_error"]) == 6 and not (ev["kind"] == "error").any()
    warning = ev[ev["kind"] == "warning"]
    assert list(warning["time"]) == [pd.Timestamp("2024-11-09T07:30:29.226Z")]
    debug_log = next(f for f in inc.load_report.files if f.path.endswith("logs/debug.log"))
    assert any("UTC-05:00" in a and "other debug logs" in a for a in debug_log.assumptions)


def test_local_debug_log_takes_the_offset_wandb_core_writes(tmp_path):
    # 0.18.7: debug.log says 10:11:51,447 local; debug-internal.log and debug-core.log write
    # +05:30. The router warning lands at 04:41:51.447 UTC, with the exit record, not 5.5 h later.
    inc = _load(tmp_path, WANDB / "llmail-0.18.7-lora-typeerror-exit1")
    warning = inc.events[inc.events["message"] == "message_loop has been closed"]
    assert list(warning["time"]) == [pd.Timestamp("2024-11-21T04:41:51.447Z")]
