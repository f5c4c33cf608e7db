"""detect(): the findings frame contract, evidence that resolves, missing sources."""

import pandas as pd

from dflash_postmortem import Incident, detect
from dflash_postmortem.detect import findings


def test_every_evidence_ref_resolves(bundled_findings, bundled_dir, seed_findings, seed_dir, line_at):
    for f, root in ((bundled_findings, bundled_dir), (seed_findings, seed_dir)):
        assert len(f) >= 4
        for r in f.itertuples():
            assert r.kind == "idle_allocated_gpu" or r.evidence, r.title
            for ref in r.evidence:
                assert line_at(root, ref).strip(), ref


def test_regression_evidence_cites_the_samples(bundled_findings, bundled_dir, line_at):
    r = bundled_findings[bundled_findings["kind"] == "throughput_regression"].iloc[0]
    cited = [line_at(bundled_dir, ref) for ref in r["evidence"]]
    assert any("--fast-linear-attn 0 --use-reentrant 0" in c for c in cited)
    assert any("[regressed] step" in c and "tok/s" in c for c in cited)


def test_nothing_found_is_an_empty_frame():
    out = detect(Incident())
    assert out.empty and list(out.columns) == list(findings.COLUMNS)


def test_one_source_only(bundled_incident, seed_incident):
    """Each source alone: no error, and what it can answer is still answered."""
    only_metrics = detect(Incident(metrics=bundled_incident.metrics))
    assert set(only_metrics["kind"]) == {"throughput_regression", "recovery"}
    # no launch command: the flags are not known, the wandb config is not either
    assert only_metrics.iloc[0]["numbers"]["flag_differences"] == []
    only_gpus = detect(Incident(gpus=seed_incident.gpus, config=seed_incident.config))
    assert "role_mismatch" in set(only_gpus["kind"])
    for frame in ("events", "processes", "gpu_processes"):
        assert isinstance(detect(Incident(**{frame: getattr(bundled_incident, frame)})), pd.DataFrame)
