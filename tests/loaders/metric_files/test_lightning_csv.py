"""Lightning CSVLogger metrics.csv: sparse rows in long form, canonical keys, no times."""

from __future__ import annotations

import warnings

import pandas as pd

from dflash_postmortem.loaders.metric_files import lightning_csv
from dflash_postmortem.loaders.metric_files.naming import metric_key
from dflash_postmortem.loaders.registry import LoadContext


def test_metric_keys():
    assert [metric_key(k) for k in ("train_loss", "train_loss_step", "train_loss_epoch", "val_loss", "valid_acc",
                                    "test_f1", "loss", "lr", "lr-AdamW", "lr-Adam/pg1", "Loss/train", "episode/Return")] == [
        "train/loss", "train/loss", "train/loss_epoch", "eval/loss", "eval/acc", "test/f1", "train/loss",
        "train/learning_rate", "train/learning_rate", "train/learning_rate_pg1", "Loss/train", "episode/Return"]


def test_sparse_rows_and_bad_rows(tmp_path):
    (tmp_path / "version_3").mkdir()
    p = tmp_path / "version_3" / "metrics.csv"
    p.write_text("epoch,step,train_loss_step,val_loss,lr-AdamW\n0,49,2.5,,0.001\n0,99,,1.5,\n0,99,,,\n1,149,2.0\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = lightning_csv.load(p, LoadContext(root=tmp_path))
    m = inc.metrics
    assert set(m["run"]) == {"version_3"} and m["time"].isna().all()
    assert m[["metric", "step", "value"]].values.tolist() == [
        ["train/epoch", 49, 0.0], ["train/loss", 49, 2.5], ["train/learning_rate", 49, 0.001],
        ["train/epoch", 99, 0.0], ["eval/loss", 99, 1.5], ["train/epoch", 99, 0.0]]
    rep = inc.load_report.files[0]
    assert rep.balanced and dict(rep.skipped) == {"header": 1, "expected 5 comma-separated cells": 1}


def test_sniff_leaves_wandb_exports_and_other_csv_alone():
    assert lightning_csv.sniff(None, b"epoch,step,train_loss\n0,1,2\n") == 0.8
    assert lightning_csv.sniff(None, b"_step,_timestamp,step,loss\n") == 0.0
    assert lightning_csv.sniff(None, b"timestamp, name, memory.used [MiB]\n") == 0.0
    assert pd.isna(pd.NA) is True


def test_a_quote_left_open_counts_every_line_it_runs_over(tmp_path):
    """A damaged row whose quote never closes runs its cell over the lines after it (Python's csv
    reads on to the next quote): each of those lines is counted, and the rows after it are read
    (the fuzzer found a report that lost 12 lines this way)."""
    p = tmp_path / "metrics.csv"
    p.write_text('epoch,step,train_loss\n0,1,2.5\n0,2,"2.4\n0,3,2.3\n0,4,2.2"\n0,5,2.1\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = lightning_csv.load(p, LoadContext(root=tmp_path))
    rep = inc.load_report.files[0]
    assert rep.balanced and rep.read == 6
    assert dict(rep.skipped) == {"header": 1, "expected one line per row": 1, "inside a quoted cell of the line before": 2}
    assert inc.metrics.loc[inc.metrics["metric"] == "train/loss", "step"].tolist() == [1, 5]
