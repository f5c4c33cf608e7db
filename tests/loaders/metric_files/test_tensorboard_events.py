"""TensorBoard event files through the tensorboard package's reader (an optional extra)."""

from __future__ import annotations

import numpy as np
import pytest

import dflash_postmortem as pm
from dflash_postmortem.errors import MissingDependencyError
from dflash_postmortem.loaders.metric_files import tensorboard_events


def test_without_the_package_the_file_is_skipped_with_the_install_hint(tmp_path, monkeypatch):
    p = tmp_path / "events.out.tfevents.1.host.1.0"
    p.write_bytes(b"\x18\x00\x00\x00\x00\x00\x00\x00\xa3\x7fK\"\t\x00\x00\x00\x00\x00\x00\x00\x00\x1a\rbrain.Event:2" + b"\0" * 4)

    def missing():
        raise MissingDependencyError("tensorboard", "reading TensorBoard event files", extra="tensorboard")

    monkeypatch.setattr(tensorboard_events, "_reader", missing)
    inc = pm.load_incident(tmp_path)
    rep = inc.load_report.files[0]
    assert rep.format == "tensorboard-events" and rep.balanced and inc.metrics.empty
    assert list(rep.skipped) == ["the tensorboard package is not installed (pip install 'dflash-postmortem[tensorboard]')"]


def test_scalars_old_and_new_style_at_their_wall_times(tmp_path):
    pytest.importorskip("tensorboard", reason="the tensorboard package is not installed")
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    logdir = tmp_path / "runs" / "night"
    w = torch_tb.SummaryWriter(str(logdir))
    w.add_scalar("train/loss", 2.5, global_step=10, walltime=1700000000.25)
    w.add_scalar("train_tok_per_s", 12000.0, global_step=10, walltime=1700000000.5, new_style=True)
    w.add_histogram("weights", np.array([1.0, 2.0, 3.0]), global_step=10, walltime=1700000001.0)
    w.add_text("note", "hello", global_step=10, walltime=1700000001.0)
    w.close()
    (event_file,) = logdir.iterdir()
    data = event_file.read_bytes()
    event_file.write_bytes(data + data[:20])  # a record cut short after the last whole one
    inc = pm.load_incident(tmp_path)
    m = inc.metrics.sort_values("time")
    assert m[["metric", "step", "value"]].values.tolist() == [["train/loss", 10, 2.5], ["train/tok_per_s", 10, 12000.0]]
    assert set(m["run"]) == {"runs/night"} and str(m["time"].iloc[0]) == "2023-11-14 22:13:20.250000+00:00"
    rep = inc.load_report.files[0]
    assert rep.balanced and rep.skipped["record cut short or failing its CRC: the read stops there"] == 1
    assert rep.skipped["summary without a scalar (histogram, image, audio, text, hparams)"] == 2


def test_sniff_wants_the_file_version_record():
    assert tensorboard_events.sniff(None, b"\x18" + b"\0" * 11 + b"\t\0\0\0\0\0\0\0\0\x1a\rbrain.Event:2") == 0.95
    assert tensorboard_events.sniff(None, b"step,loss\n1,2\n") == 0.0


def test_throughput_by_the_names_trainers_give_it_is_the_kits_rate(tmp_path):
    """`writer.add_scalar("train/tokens_per_sec")` (h100-1gpu-tb-hang's trainer), `tokens_per_second`
    and `train/tok_per_sec` are the rate the model paces runs by, as wandb's keys of the same names
    are; a rate per GPU, or anything else, keeps its own name."""
    pytest.importorskip("tensorboard", reason="the tensorboard package is not installed")
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    w = torch_tb.SummaryWriter(str(tmp_path / "runs" / "a"))
    for k, tag in enumerate(("train/tokens_per_sec", "tokens_per_second", "train/tok_per_sec",
                             "throughput/tokens_per_sec_per_gpu", "perf/mfu")):
        w.add_scalar(tag, 1000.0 + k, global_step=10 + k, walltime=1700000000.0 + k)
    w.close()
    m = pm.load_incident(tmp_path).metrics.sort_values("step")
    assert m["metric"].tolist() == ["train/tok_per_s"] * 3 + ["throughput/tokens_per_sec_per_gpu", "perf/mfu"]
