"""A run's files found alone, read as what they are (values read off the real samples)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.wandb import files as wandb_files

WANDB = Path(__file__).resolve().parents[2] / "fixtures" / "real-world" / "wandb"


def _alone(tmp_path: Path, name: str, as_name: str | None = None) -> pm.Incident:
    """The sample copied alone into an incident folder (under another name if asked: the
    content decides the format, never the name)."""
    inc_dir = tmp_path / "incident"
    inc_dir.mkdir(parents=True)
    src = WANDB / name
    dest = inc_dir / (as_name or name)
    (shutil.copytree if src.is_dir() else shutil.copyfile)(src, dest)
    return pm.load_incident(inc_dir)


def test_summary_alone_gives_the_run_its_last_step_and_times(tmp_path):
    inc = _alone(tmp_path, "tinylm-rtx4090-wandb-summary.json", "notes.txt")
    [run] = inc.runs.values()
    assert run.summary["_step"] == 107124 and run.summary["val/ppl"] == pytest.approx(42.0227842285141)
    # _timestamp 1.7707848276505349e+09 is when it last logged; _runtime 1563.04 s after its start.
    assert run.ended == pd.Timestamp("2026-02-11T04:40:27.650535Z")
    assert run.started == pd.Timestamp("2026-02-11T04:14:24.614884Z")
    [ev] = inc.events.itertuples()
    assert ev.kind == "run_summary" and ev.step == 107124 and "val/ppl=42.0228" in ev.message


def test_summary_of_a_run_that_logged_nothing(tmp_path):
    inc = _alone(tmp_path, "billm-runtime-only-wandb-summary.json")
    [run] = inc.runs.values()
    assert run.summary == {"_wandb": {"runtime": 3}} and inc.events.empty
    assert inc.load_report.files[-1].format == "wandb-summary"


def test_metadata_alone_gives_host_start_command_and_gpu_inventory(tmp_path):
    inc = _alone(tmp_path, "recmllm-8x3090-wandb-metadata.json", "machine.json")
    [run] = inc.runs.values()
    assert run.host == "host3090" and run.started == pd.Timestamp("2025-01-03T10:50:32.308078Z")
    assert run.command.startswith("/mnt/user0000000/repository/ReCMLLM/")
    gpus = inc.gpus
    assert list(gpus["gpu"]) == list(range(8)) and set(gpus["name"]) == {"NVIDIA GeForce RTX 3090"}
    assert (gpus["memory_total_mib"] == 24576.0).all()
    # An inventory, not a sample: what was in use is unknown, never 0.
    assert gpus["memory_used_mib"].isna().all() and gpus["util_gpu_pct"].isna().all()


def test_config_yaml_both_layouts(tmp_path):
    old = _alone(tmp_path / "a", "cs6910-0.13.11-kaggle-config.yaml")
    [run] = old.runs.values()
    assert run.config["cell_type"] == "gru" and run.config["beam_width"] == 1
    assert "_wandb" not in run.config and "wandb_version" not in run.config
    new = _alone(tmp_path / "b", "moe-0.19.4-config.yaml")
    [run] = new.runs.values()
    assert run.config["optimizer"] == "adam" and run.config["batch_size"] == 32


def test_requirements_alone_names_the_versions_that_matter(tmp_path):
    inc = _alone(tmp_path, "cs6910-kaggle-requirements.txt", "env.txt")
    rep = inc.load_report.files[-1]
    assert rep.format == "pip-requirements" and rep.read == rep.parsed == 344
    assert any("torch==1.13.1" in n and "wandb==0.13.11" in n for n in rep.notes)


def test_events_jsonl_alone_and_in_its_folder_give_the_same_gpu_samples(tmp_path):
    alone = _alone(tmp_path / "a", "spaceinvaders-0.8.27-wandb-events.jsonl").gpus
    folder = _alone(tmp_path / "b", "spaceinvaders-0.8.27-colab-run").gpus
    assert len(alone) == len(folder) == 18
    cols = ["time", "gpu", "util_gpu_pct", "power_w", "temp_c", "memory_used_pct"]
    pd.testing.assert_frame_equal(alone[cols], folder[cols])
    # First line: {"system.gpu.0.gpu": 4.07, ..., "system.gpu.0.temp": 49.93, "_timestamp": 1582070941}
    first = alone.iloc[0]
    assert first["util_gpu_pct"] == 4.07 and first["temp_c"] == 49.93
    assert first["time"] == pd.Timestamp("2020-02-19T00:09:01Z")
    assert set(folder["name"]) == {"Tesla T4"}  # named by the folder's metadata


def test_pre_0_10_folder_reads_history_jsonl_and_names_the_run(tmp_path):
    inc = _alone(tmp_path, "spaceinvaders-0.8.27-colab-run")
    assert set(inc.runs) == {"apricot-fire-21"}
    m = inc.metrics
    rewards = m[m["metric"] == "episodic_reward"]
    assert len(rewards) == 98 and rewards["step"].iloc[0] == 0 and rewards["value"].iloc[0] == 180.0
    rep = next(f for f in inc.load_report.files if f.path.endswith("wandb-history.jsonl"))
    assert rep.read == rep.parsed == 198
    assert any("not numbers" in n for n in rep.notes)  # the two gameplay videos


def test_a_one_line_summary_is_not_history(tmp_path):
    # A summary written on one line looks like a single history row; the SDK's `_wandb` key
    # and its being alone say summary.
    head = (WANDB / "tinylm-rtx4090-wandb-summary.json").read_bytes()
    assert wandb_files.sniff_history_jsonl(Path("x"), head) == 0.0
    assert wandb_files.sniff_summary(Path("x"), head) > 0


def test_lone_output_log_is_console_text(tmp_path):
    # output.log holds nothing wandb's: alone it is a trainer's console, read as a training log.
    inc = _alone(tmp_path, "nanogpt-oom-traceback-output.log", "output.log")
    assert inc.load_report.files[-1].format == "training-log"
    assert inc.events["message"].str.contains("OutOfMemoryError").any()


@pytest.mark.parametrize("text", [b'{"_step": 3, "_runtime": 1.0', b"{", b'{"_wandb": {"runtime": 3}}\n{"x"'])
def test_cut_json_files_are_counted_not_raised(tmp_path, text):
    path = tmp_path / "wandb-summary.json"
    path.write_bytes(text)
    inc = pm.load_incident(tmp_path)
    rep = inc.load_report.files[-1]
    assert rep.balanced and rep.error is None


def test_lone_output_log_nothing_recognises_is_console_text(tmp_path):
    inc = _alone(tmp_path, "cs6910-seq2seq-ctrl-c-output.log", "output.log")
    rep = inc.load_report.files[-1]
    assert rep.format == "console-text" and rep.read == 9 and rep.parsed == 8 and rep.balanced
    # wandb's own line, with its terminal colours removed.
    assert inc.events["message"].iloc[-1] == "wandb: Ctrl + C detected. Stopping sweep."
    assert any("colour codes removed" in n for n in rep.notes)


@pytest.mark.parametrize("text", [
    b"# Notes\n\nThe run lost 20% of its throughput at step 300.\n",
    b"| a | b |\n| --- | --- |\n| loss | 1 |\n",
    b"diff --git a/train.py b/train.py\n+    loss = loss / 2\n",
    b"epochs: 3\nbatch: 8\n",
])
def test_console_text_leaves_documents_alone(text):
    assert wandb_files.sniff_console(Path("x"), text) == 0.0


def test_real_world_summary_and_metadata(fixtures_dir, tmp_path):
    folder = tmp_path / "run-20260211_121423-kj3gdsjx"
    (folder / "files").mkdir(parents=True)
    shutil.copy(fixtures_dir / "wandb/tinylm-rtx4090-wandb-summary.json", folder / "files/wandb-summary.json")
    shutil.copy(fixtures_dir / "wandb/tinylm-rtx4090-wandb-metadata.json", folder / "files/wandb-metadata.json")
    shutil.copy(fixtures_dir / "wandb/nanogpt-oom-traceback-output.log", folder / "files/output.log")
    inc = pm.load_wandb_run(folder)
    info = inc.runs["kj3gdsjx"]
    assert info.summary["_step"] == 107124 and info.host == "host0"
    assert info.started == pd.Timestamp("2026-02-11T04:14:23.422968Z")
    assert inc.events["message"].str.contains("OutOfMemoryError").any()
