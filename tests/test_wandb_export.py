"""The CSVs a user downloads from the wandb web UI, read from exports committed to public
repositories (values read off the files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

import dflash_postmortem as pm

WANDB = Path(__file__).resolve().parent / "fixtures" / "real-world" / "wandb"


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
