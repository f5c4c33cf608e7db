"""The CSVs a user downloads from the wandb web UI, read from exports committed to public
repositories (values read off the files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm

WANDB = Path(__file__).resolve().parents[2] / "fixtures" / "real-world" / "wandb"


def _load(tmp_path: Path, name: str, as_name: str = "export.csv") -> pm.Incident:
    inc_dir = tmp_path / "incident"
    inc_dir.mkdir()
    shutil.copyfile(WANDB / name, inc_dir / as_name)  # the name says nothing: content decides
    return pm.load_incident(inc_dir)


def test_chart_export_by_step_keeps_each_run_and_its_bucket_range(tmp_path):
    inc = _load(tmp_path, "nanogpt-chart-export-8-runs.csv")
    m = inc.metrics
    assert m["run"].nunique() == 8 and len(m) == 8 * 40 and m["time"].isna().all()
    # "1","11.286399841308594",... for gpt2_last_char_to_char1729642919.4054031 at Step 1
    row = m[(m["run"] == "gpt2_last_char_to_char1729642919.4054031") & (m["step"] == 1)].iloc[0]
    assert row["value"] == row["value_min"] == row["value_max"] == 11.286399841308594
    rep = inc.load_report.files[-1]
    assert rep.format == "wandb-chart-csv" and any(n.startswith("sampled") for n in rep.notes)


def test_chart_export_against_another_key_takes_each_run_s_own_steps(tmp_path):
    inc = _load(tmp_path, "rllib-chart-export-custom-x-axis.csv")
    m = inc.metrics
    assert set(m["x_axis"]) == {"ray/tune/info/num_steps_sampled"}
    assert "_step" not in set(m["metric"])  # the steps themselves are not a metric here
    # x=356: super-monkey-909's _step is 4 and its energy_cost_mean 110.31989288330078
    row = m[(m["run"] == "checkpoint: super-monkey-909") & (m["x"] == 356)].iloc[0]
    assert row["step"] == 4 and row["value"] == 110.31989288330078


def test_runs_table_export_one_run_a_row(tmp_path):
    inc = _load(tmp_path, "nanogpt-ablations-runs-table.csv")
    assert len(inc.runs) == 64
    run = inc.runs["G1_ternary_weights (2026-05-25T14:08:33.000Z)"]  # the name is used three times
    assert run.started == pd.Timestamp("2026-05-25T14:08:33Z")
    assert run.ended == pd.Timestamp("2026-05-25T14:20:45Z")  # Created + Runtime 732 s
    assert run.config["linear_type"] == "ternary" and run.config["batch_size"] == 64
    assert run.summary["val/loss"] == 1.4786324501037598 and "batch_size" not in run.summary
    ends = inc.events[inc.events["kind"] == "run_end"]
    assert len(ends) == 64 and set(ends["state"]) == {"finished"}


def test_runs_table_with_end_time_and_id(tmp_path):
    inc = _load(tmp_path, "text-aug-runs-table-end-time.csv")
    run = inc.runs["bert_substitute_02"]
    assert run.id == "3p0donj4"
    assert (run.started, run.ended) == (pd.Timestamp("2022-06-10T05:44:17Z"), pd.Timestamp("2022-06-10T05:52:35Z"))


def test_a_cut_export_loses_only_its_last_row(tmp_path):
    data = (WANDB / "nanogpt-chart-export-8-runs.csv").read_bytes()
    (tmp_path / "incident").mkdir()
    (tmp_path / "incident" / "export.csv").write_bytes(data[: len(data) - 300])
    inc = pm.load_incident(tmp_path / "incident")
    rep = inc.load_report.files[-1]
    assert rep.balanced and rep.skipped["incomplete last row (the file ends inside it)"] == 1
    assert inc.metrics["step"].max() == 38


def test_history_csv_export(fixtures_dir):
    inc = pm.load_wandb_run(fixtures_dir / "wandb/pythia-14m-history-export-excerpt.csv")
    m = inc.metrics
    assert set(m["metric"]) == {"train/lm_loss"}
    assert m["step"].tolist()[:2] == [0, 1] and m["value"].iloc[0] == pytest.approx(11.013898849487305)
    rep = inc.load_report.files[0]
    assert rep.format == "wandb-history-csv" and rep.balanced and rep.parsed == len(m)


def test_history_csv_with_timestamps_and_tok_s_alias(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("_step,_timestamp,_runtime,tok/s,train/loss\n0,1796016000.5,1.0,21500,\n"
                    "1,1796016001.5,2.0,12400,9.5\n")
    m = pm.load_wandb_run(path).metrics
    tok = m[m["metric"] == "train/tok_per_s"]
    assert tok["key"].tolist() == ["tok/s", "tok/s"] and tok["value"].tolist() == [21500, 12400]
    assert tok["time"].iloc[0] == pd.Timestamp(1796016000.5, unit="s", tz="UTC")
    assert len(m[m["metric"] == "train/loss"]) == 1  # an empty cell is missing, not zero


def test_chart_export_is_reported_sampled(tmp_path):
    path = tmp_path / "chart.csv"
    path.write_text('"Step","fixed - train/tok_per_s","fixed - train/tok_per_s__MIN",'
                    '"fixed - train/tok_per_s__MAX","regressed - train/tok_per_s",'
                    '"regressed - train/tok_per_s__MIN","regressed - train/tok_per_s__MAX"\n'
                    '0,147000,146000,148000,70000,60000,80000\n5,147500,147000,148000,,,\n')
    inc = pm.load_wandb_run(path)
    m = inc.metrics
    assert m.groupby("run").size().to_dict() == {"fixed": 2, "regressed": 1}
    assert m.loc[m["run"] == "regressed", "value_min"].iloc[0] == 60000
    assert m["time"].isna().all()
    assert any(n.startswith("sampled") for n in inc.load_report.files[0].notes)
