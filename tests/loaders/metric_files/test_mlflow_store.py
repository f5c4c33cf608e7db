"""MLflow file store: a run folder read as one source, times from its millisecond stamps."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import dflash_postmortem as pm
from dflash_postmortem.model.attempts import attempts, ended_badly, finished


def _run(root, status="4", end="1700000060000", lifecycle="active"):
    run = root / "mlruns" / "1" / "abc123"
    (run / "metrics" / "train").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "tags").mkdir()
    (run / "artifacts").mkdir()
    (root / "mlruns" / "1" / "meta.yaml").write_text(
        "artifact_location: file:///x/mlruns/1\nexperiment_id: '1'\nlifecycle_stage: active\nname: drafter\n")
    (run / "meta.yaml").write_text(
        f"artifact_uri: file:///x/mlruns/1/abc123/artifacts\nend_time: {end}\nexperiment_id: '1'\n"
        f"lifecycle_stage: {lifecycle}\nrun_id: abc123\nrun_uuid: abc123\nstart_time: 1700000000000\nstatus: {status}\n"
        "tags: []\nuser_id: someone\n")
    (run / "metrics" / "train" / "loss").write_text("1700000001000 2.5 1\n1700000002000 nan 2\nnot a line\n")
    (run / "metrics" / "tok_per_s").write_text("1700000001500 12000.0\n")  # MLflow before 1.0: no step
    (run / "params" / "lr").write_text("0.001")
    (run / "tags" / "mlflow.runName").write_text("night-run")
    (run / "artifacts" / "model.pkl").write_bytes(b"\x80\x04not read")
    return run


def test_a_run_folder_gives_metrics_events_and_its_run(tmp_path):
    _run(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    m = inc.metrics.sort_values("time")
    assert m[["metric", "step"]].astype(object).values.tolist()[0] == ["train/loss", 1]
    assert set(m["run"]) == {"night-run"} and str(m["time"].iloc[0]) == "2023-11-14 22:13:21+00:00"
    assert m.loc[m["metric"] == "train/tok_per_s", "step"].isna().all()
    ev = inc.events.set_index("kind")
    assert ev.loc["run_end", "status"] == "FAILED" and "did not finish" in ev.loc["run_end", "message"]
    info = inc.runs["night-run"]
    assert (info.id, info.project, info.config) == ("abc123", "1", {"lr": "0.001"})
    reports = {r.path: r for r in inc.load_report.files}
    assert all(r.balanced for r in reports.values())
    assert reports["mlruns/1/abc123/metrics/train/loss"].n_skipped == 1
    assert reports["mlruns/1/abc123/artifacts"].n_skipped == 1  # counted, never opened
    assert reports["mlruns/1/meta.yaml"].format == "mlflow-experiment"


def test_a_run_still_running_has_no_end(tmp_path):
    _run(tmp_path, status="1", end="null", lifecycle="deleted")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    assert inc.events["kind"].tolist() == ["run_start"]
    notes = [n for r in inc.load_report.files for n in r.notes]
    assert any("never said it ended" in n for n in notes) and any("deleted" in n for n in notes)


CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "real-world" / "mlflow"


def _alone(tmp_path, name: str) -> pm.Incident:
    shutil.copytree(CORPUS / name, tmp_path / "incident" / name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(tmp_path / "incident")


def test_a_run_is_one_start_whatever_files_hold_its_metrics(tmp_path):
    """fashion-mnist-deleted-finished-run (SOURCES.tsv): one Keras run, FINISHED 62 s after its
    start, that logged only its validation and test values (one file each). Each metric file read
    as a source of its own was a start of its own: five starts, four of them "unknown" restarts
    that never came up. One run is one source (its meta.yaml; each row's ref keeps its file),
    and a run that finished cleanly with results of its own did not fail to start."""
    inc = _alone(tmp_path, "fashion-mnist-deleted-finished-run")
    assert set(inc.metrics["source"]) == {"fashion-mnist-deleted-finished-run/meta.yaml"}
    assert set(inc.metrics["ref"].str.rsplit(":", n=1).str[0]) == {
        f"fashion-mnist-deleted-finished-run/metrics/{k}" for k in ("val_loss", "val_accuracy", "test_loss", "test_accuracy")}
    att = attempts(inc)
    assert len(att) == 1 and att["end_kind"].iloc[0] == "run_end"
    found = pm.detect(inc)
    assert found.empty
    assert pm.what_happened(inc, found)[0].startswith("No training seen in 8 files")


def test_a_run_that_failed_is_no_clean_end(tmp_path):
    """MLflow's FAILED (status 4 in meta.yaml) ends a run that did not succeed: its record's
    word, where no exit status is known, as wandb's exit record's status is where it is."""
    _run(tmp_path, status="4")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    (a,) = [r for _, r in attempts(inc).iterrows()]
    assert a["end_kind"] == "run_end" and ended_badly(a) and not finished(a)
    found = pm.detect(inc)
    assert list(found["kind"]) == ["loss_not_finite", "training_died"]  # (its loss file's `nan` at step 2)
    assert pm.what_happened(inc, found)[1] == (
        "At 22:14:20 UTC run night-run died while training, 58 s after its last step: MLflow run ended with status "
        "FAILED (meta.yaml end_time): it did not finish. Nothing started it again.")
