"""Which source stands for a GPU or a run when several saw it, on the real 2 x H200 capture."""

from dflash_postmortem.analysis import source_choice as sources


def test_each_gpu_from_its_best_sampled_source(bundled_incident):
    # nvidia-smi stream (290 samples a GPU), dmon (288), wandb system metrics and one-off snapshots
    assert bundled_incident.gpus["source"].nunique() > 5
    best = sources.gpu_samples(bundled_incident.gpus, "memory_used_mib")
    assert best.groupby(["host", "gpu"])["source"].unique().map(list).to_dict() == {
        ("vm", 0): ["logs/smi_stream.csv"], ("vm", 1): ["logs/smi_stream.csv"]}
    assert len(best) == 580 and best["time"].is_monotonic_increasing


def test_each_run_from_its_best_sampled_source(bundled_incident):
    # each run's log has at least as many tok/s lines as its wandb history (the fixed run's wandb
    # copy was cut while live)
    got = sources.throughput_samples(bundled_incident).groupby("run")["source"].agg(["unique", "size"])
    assert {run: (list(r["unique"]), r["size"]) for run, r in got.iterrows()} == {
        "baseline": (["logs/train.log"], 203), "regressed": (["logs/train_opt.log"], 71),
        "fixed": (["logs/train_opt2.log"], 297)}
