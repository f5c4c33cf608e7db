"""Hugging Face trainer_state.json: log_history into metrics at their steps, no times, bounded."""

from __future__ import annotations

import json
import warnings

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem.loaders.metric_files import trainer_state
from dflash_postmortem.loaders.registry import LoadContext
from dflash_postmortem.loaders.wandb import files as wandb_files


def _state(history, **top) -> dict:
    return {"best_metric": None, "epoch": 1.0, "global_step": 20, "log_history": history, "max_steps": 40, **top}


def _load(path, root):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trainer_state.load(path, LoadContext(root=root))


def test_log_history_becomes_metrics_without_times(tmp_path):
    run = tmp_path / "out" / "checkpoint-20"
    run.mkdir(parents=True)
    p = run / "trainer_state.json"
    p.write_text(json.dumps(_state([
        {"epoch": 0.5, "grad_norm": 1.5, "learning_rate": 1e-4, "loss": float("nan"), "step": 10},
        {"epoch": 1.0, "eval_loss": 2.5, "eval_runtime": 3.0, "step": 20},
        {"epoch": 1.0, "step": 20, "train_runtime": 60.5, "train_loss": 2.7, "train_tokens_per_second": 900.0},
    ], best_model_checkpoint="out/checkpoint-20", best_metric=2.5), indent=2, sort_keys=True))
    inc = _load(p, tmp_path)
    m = inc.metrics
    assert m["time"].isna().all() and set(m["run"]) == {"out"}  # the run folder above checkpoint-N
    got = dict(zip(zip(m["metric"], m["step"], strict=True), m["value"], strict=True))
    assert pd.isna(got[("train/loss", 10)]) and got[("eval/loss", 20)] == 2.5
    assert got[("train/train_tokens_per_second", 20)] == 900.0 and ("train/loss", 20) not in got
    rep = inc.load_report.files[0]
    assert rep.balanced and rep.read == 4 and any("no time" in a for a in rep.assumptions)
    assert "best checkpoint out/checkpoint-20 (best_metric 2.5)" in rep.notes
    assert inc.runs["out"].summary["global_step"] == 20
    assert m["ref"].tolist()[0] == "out/checkpoint-20/trainer_state.json:" + str(
        p.read_text().splitlines().index("    {") + 1)


def test_entries_without_numbers_and_values_beyond_floats_are_accounted_for(tmp_path):
    p = tmp_path / "trainer_state.json"
    p.write_text('{"global_step": 3, "log_history": [{"step": 1, "note": "x"}, 7, {"loss": 1' + "0" * 400
                 + ', "step": 2}, {"loss": 1.0, "step": 3}], "max_steps": 3}')
    inc = _load(p, tmp_path)
    rep = inc.load_report.files[0]
    assert rep.balanced and rep.n_skipped == 3  # no number; not an object; only a value too large
    assert inc.metrics["value"].tolist() == [1.0] and any("larger than any float" in n for n in rep.notes)


def test_a_state_above_the_document_limit_is_not_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(wandb_files, "DOCUMENT_LIMIT", 64)
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps(_state([{"loss": 1.0, "step": i} for i in range(20)])))
    inc = _load(p, tmp_path)
    rep = inc.load_report.files[0]
    assert inc.metrics.empty and rep.balanced and "of at most 0 MiB" in next(iter(rep.skipped))


def test_sniffed_by_content_and_loaded_in_a_folder(tmp_path):
    (tmp_path / "state.txt").write_text(json.dumps(_state([{"loss": 2.0, "step": 5}]), indent=2))
    inc = pm.load_incident(tmp_path)
    assert inc.load_report.files[0].format == "hf-trainer-state"
    assert inc.metrics[["metric", "step", "value"]].values.tolist() == [["train/loss", 5, 2.0]]
