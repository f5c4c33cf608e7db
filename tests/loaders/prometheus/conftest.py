"""A real Prometheus server on loopback for the HTTP API tests: Debian's `prometheus` package,
backfilled with `promtool tsdb create-blocks-from openmetrics` from a small DCGM fleet written
here, started once per session and stopped after it; skipped with the reason when the binaries
are absent (`make prometheus` installs them)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

import pytest
from support.servers import free_port, stop, wait_until_ready

T0 = 1764550800  # 2025-12-01T01:00:00Z
STEP = 15
SAMPLES = 40  # ten minutes at 15 s
HOSTS = ("node17", "node18")
GPUS = (0, 1)
XID_HOST, XID_GPU, XID_FROM, XID_CODE = "node18", 1, 20, 79


def uuid(host: str, gpu: int) -> str:
    return f"GPU-{HOSTS.index(host):08x}-0000-0000-0000-{gpu:012x}"


def util(host: str, gpu: int, i: int) -> float:
    return float(10 * HOSTS.index(host) + 5 * gpu + i % 7)


def fb_used(host: str, gpu: int, i: int) -> float:
    return float(40000 + 1000 * gpu + 10 * i)


FB_FREE = 100000.0


def fleet_openmetrics() -> str:
    """The backfill: DCGM fields of 2 hosts x 2 GPUs, an Xid on one GPU half-way through, each
    host's load, and an exporter's own go_goroutines."""
    out = []
    for host in HOSTS:
        for gpu in GPUS:
            labels = f'gpu="{gpu}",UUID="{uuid(host, gpu)}",device="nvidia{gpu}",modelName="NVIDIA H200",Hostname="{host}"'
            for i in range(SAMPLES):
                t = T0 + STEP * i
                xid = XID_CODE if (host, gpu) == (XID_HOST, XID_GPU) and i >= XID_FROM else 0
                out += [
                    f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {util(host, gpu, i):g} {t}",
                    f"DCGM_FI_DEV_FB_USED{{{labels}}} {fb_used(host, gpu, i):g} {t}",
                    f"DCGM_FI_DEV_FB_FREE{{{labels}}} {FB_FREE - fb_used(host, gpu, i):g} {t}",
                    f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {300 + gpu + i * 0.5:g} {t}",
                    f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {xid} {t}",
                ]
        for i in range(SAMPLES):
            t = T0 + STEP * i
            out.append(f'node_load1{{instance="{host}:9100",job="node"}} {i / 10:g} {t}')
            out.append(f'go_goroutines{{instance="{host}:9400",job="dcgm"}} 42 {t}')
    return "\n".join(out) + "\n# EOF\n"


@dataclass
class Server:
    url: str
    start: float = T0
    end: float = T0 + STEP * (SAMPLES - 1)


@pytest.fixture(scope="session")
def prometheus_server(tmp_path_factory):
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not (prometheus and promtool):
        pytest.skip("no prometheus/promtool on PATH (Debian: apt-get install prometheus; `make prometheus`)")
    root = tmp_path_factory.mktemp("prometheus")
    dump = root / "fleet.om"
    dump.write_text(fleet_openmetrics())
    data = root / "data"
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(dump), str(data)],
                   check=True, capture_output=True, timeout=60)
    config = root / "prometheus.yml"
    config.write_text("global: {}\n")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(root / "prometheus.log", "wb")  # noqa: SIM115 - open while the server runs
    proc = subprocess.Popen(
        [prometheus, f"--storage.tsdb.path={data}", f"--config.file={config}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_until_ready(f"{url}/-/ready", proc, "prometheus", lambda: (root / "prometheus.log").read_text(), 30)
        yield Server(url)
    finally:
        stop(proc, timeout_s=10)
        log.close()
