"""The format registry: every format registered by `@registry.format` on its loader, in one order
(a tie between two sniffers goes to the first), and a family's entry point choosing among its own."""

from __future__ import annotations

import pytest

from dflash_postmortem.loaders import nvidia_smi, registry
from dflash_postmortem.loaders.wandb import export

# The order loaders/__init__.py imports the families in, and each family its forms. A change
# here changes which format wins a tie: it has to be on purpose.
ORDER = [
    "nvidia-smi-query-csv", "nvidia-smi-table", "nvidia-smi-dmon", "nvidia-smi-pmon", "nvidia-smi-q",
    "nvidia-smi-xml", "nvidia-smi-list", "nvidia-smi-error", "nvml-recording", "nvidia-smi-topo", "pid-file",
    "flight-recorder", "slurm-sacct", "slurm-squeue", "slurm-job-records", "torchelastic-error-file",
    "training-log", "ps-snapshots", "top-batch", "replay-ab-results",
    # the transcript reads container answers: importing it registers the container formats first
    "docker-events", "docker-inspect", "docker-ps", "kubectl-describe-pod", "kubectl-events", "kubectl-pod-document",
    "kubectl-get-pods",
    "shell-transcript", "shell-history", "kernel-log", "systemd-journal", "wandb-chart-csv",
    "wandb-runs-table", "wandb-history-csv", "wandb-summary", "wandb-metadata", "wandb-config",
    "pip-requirements", "console-text", "wandb-events-jsonl", "wandb-history-jsonl", "wandb-debug-log",
    "wandb-terminal", "wandb-log", "wandb-run", "wandb-bookkeeping", "prometheus-text", "prometheus-tsdb-dump",
    "hf-trainer-state", "lightning-csv", "mlflow-experiment", "mlflow-run", "tensorboard-events", "gpustat", "nvitop",
    "source-code",
]


def test_every_format_registered_once_in_the_registry_order():
    assert list(registry.FORMATS) == ORDER


def test_each_format_is_its_loader_s_decorator():
    for fmt in registry.FORMATS.values():
        assert fmt.load.__module__.startswith("dflash_postmortem.loaders."), fmt.name
        assert fmt.doc and callable(fmt.sniff), fmt.name
    phase1 = {n for n, f in registry.FORMATS.items() if f.phase == 1}
    # (a session is read alone: which process ran a launch and where its log went is the model's)
    assert phase1 == {"nvidia-smi-dmon", "nvidia-smi-pmon", "pid-file", "kernel-log",
                      "systemd-journal", "top-batch"}
    assert [n for n, f in registry.FORMATS.items() if f.folder] == ["wandb-run", "mlflow-run"]


def test_the_decorator_registers_and_returns_the_loader(monkeypatch):
    monkeypatch.setattr(registry, "FORMATS", dict(registry.FORMATS))

    def load(path, ctx):
        return None

    assert registry.format("test-format", sniff=lambda p, h: 0.0, doc="a test", phase=1)(load) is load
    fmt = registry.FORMATS["test-format"]
    assert (fmt.load, fmt.phase, fmt.folder) == (load, 1, False)
    with pytest.raises(AssertionError, match="registered twice"):
        registry.format("test-format", sniff=lambda p, h: 0.0, doc="again")(load)


def test_a_family_chooses_among_its_own_formats(tmp_path):
    assert [f.name for f in registry.formats_of(nvidia_smi.__name__)] == ORDER[:10]
    assert [f.name for f in registry.formats_of(export.__name__)] == ["wandb-chart-csv", "wandb-runs-table", "wandb-history-csv"]
    # A training log that prints an nvidia-smi table: anywhere it is a log, to load_nvidia_smi a table.
    p = tmp_path / "train.log"
    p.write_text("2026-11-30 05:20:58 [baseline] step 5 loss 11.9410 tok/s 11958 queue 2\n"
                 "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |\n")
    anywhere, _ = registry.sniff(p)
    among, _ = registry.sniff(p, among=registry.formats_of(nvidia_smi.__name__))
    assert anywhere.name == "training-log" and among.name == "nvidia-smi-table"
