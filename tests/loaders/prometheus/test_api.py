"""The HTTP API loader against a real Prometheus server on loopback (conftest.py), its paging,
its errors (a server that refuses the query, answers with something else, never answers, or is
not there), and the `[prometheus]` table of incident.toml that configures it."""

from __future__ import annotations

import datetime as dt
import http.server
import threading

import pandas as pd
import pytest

from dflash_postmortem.config import read_config
from dflash_postmortem.errors import IncidentConfigError, PrometheusError
from dflash_postmortem.loaders.prometheus import api
from dflash_postmortem.store.load import load_incident

from .conftest import (
    FB_FREE,
    GPUS,
    HOSTS,
    SAMPLES,
    STEP,
    T0,
    XID_CODE,
    XID_FROM,
    XID_GPU,
    XID_HOST,
    fb_used,
    util,
    uuid,
)

METRICS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
           "DCGM_FI_DEV_XID_ERRORS", "node_load1"]


@pytest.fixture(scope="module")
def fleet(prometheus_server):
    """The backfilled fleet read back in pages of at most 50 samples, and the pages asked."""
    calls = []
    real = api.query_range

    def counted(url, query, start, end, step_s, timeout_s):
        result = real(url, query, start, end, step_s, timeout_s)
        calls.append((query, start, end, sum(len(r["values"]) for r in result)))
        return result

    api.query_range = counted
    try:
        inc = api.load_prometheus(prometheus_server.url, (pd.Timestamp(T0, unit="s", tz="UTC"),
                                                         pd.Timestamp(prometheus_server.end, unit="s", tz="UTC")),
                                  step_s=STEP, metrics=METRICS, page_points=50)
    finally:
        api.query_range = real
    return inc, calls


def test_gpus_come_back_per_host_gpu_and_time_with_the_values_written(fleet):
    inc, _ = fleet
    g = inc.gpus
    assert len(g) == len(HOSTS) * len(GPUS) * SAMPLES
    assert sorted(g["host"].unique()) == list(HOSTS)
    row = g[(g["host"] == "node18") & (g["gpu"] == 1) & (g["time"] == pd.Timestamp(T0 + 7 * STEP, unit="s", tz="UTC"))]
    (r,) = row.to_dict("records")
    assert r["uuid"] == uuid("node18", 1)
    assert r["util_gpu_pct"] == util("node18", 1, 7)
    assert r["memory_used_mib"] == fb_used("node18", 1, 7)
    assert r["memory_total_mib"] == FB_FREE
    assert r["power_w"] == 300 + 1 + 7 * 0.5
    assert r["name"] == "NVIDIA H200"


def test_an_xid_is_one_event_when_it_appears(fleet):
    inc, _ = fleet
    (e,) = inc.events.to_dict("records")
    assert (e["kind"], e["host"], e["gpu"], e["xid"]) == ("gpu_error", XID_HOST, XID_GPU, XID_CODE)
    assert e["time"] == pd.Timestamp(T0 + XID_FROM * STEP, unit="s", tz="UTC")
    assert e["message"].startswith(f"Xid {XID_CODE} on GPU {XID_GPU} ({uuid(XID_HOST, XID_GPU)})")


def test_node_metrics_are_metrics_rows_of_their_host(fleet):
    inc, _ = fleet
    m = inc.metrics
    assert set(m["metric"]) == {"node_load1"}
    node17 = m[m["run"] == "node17"].sort_values("time")
    assert len(node17) == SAMPLES and node17["value"].iloc[12] == pytest.approx(1.2)


def test_every_page_stays_under_its_budget_and_the_pages_cover_the_window(fleet):
    inc, calls = fleet
    assert all(n <= 50 for *_, n in calls[1:]) and len(calls) > len(METRICS)
    util_pages = [c for c in calls if c[0] == "DCGM_FI_DEV_GPU_UTIL"]
    # Back to back on the 15 s grid: each page starts one step after the last one ended.
    assert util_pages[0][1] == T0 and util_pages[-1][2] == T0 + STEP * (SAMPLES - 1)
    assert all(b[1] == a[2] + STEP for a, b in zip(util_pages, util_pages[1:], strict=False))
    rep = inc.load_report.files[0]
    assert rep.balanced and rep.read == sum(n for *_, n in calls)


def test_more_steps_than_prometheus_allows_per_series_are_split(prometheus_server):
    # 4 hours at 1 s is 14,401 points per series: Prometheus refuses more than 11,000 in one query.
    pages = list(api.pages(prometheus_server.url, "node_load1", T0, T0 + 4 * 3600, 1.0, 10,
                           page_points=10**9))
    assert len(pages) == 3  # 60 steps first (to count the series), then 11,000, then the rest


def test_self_monitoring_series_are_counted_and_left_out(prometheus_server):
    inc = api.load_prometheus(prometheus_server.url, (dt.datetime.fromtimestamp(T0, dt.UTC),
                                                      dt.datetime.fromtimestamp(T0 + 60, dt.UTC)),
                              metrics=["go_goroutines"])
    rep = inc.load_report.files[0]
    assert inc.metrics.empty and rep.read == 2 * 5 and rep.skipped[api.F.SELF_MONITORING_REASON] == 10


def test_a_query_the_server_refuses_is_a_clear_error(prometheus_server):
    with pytest.raises(PrometheusError, match=r"HTTP 400 Bad Request: status error \(bad_data\)") as e:
        api.load_prometheus(prometheus_server.url, ("2025-12-01T01:00:00Z", "2025-12-01T01:10:00Z"),
                            metrics=["node_load1"], matchers=['instance=~"("'])
    assert e.value.query == 'node_load1{instance=~"("}'


def test_an_unreachable_server_is_a_clear_error():
    with pytest.raises(PrometheusError, match="server unreachable: Connection refused"):
        api.load_prometheus("http://127.0.0.1:9", ("2025-12-01T01:00:00Z", "2025-12-01T01:10:00Z"),
                            metrics=["node_load1"], timeout_s=2)


class _Odd(http.server.BaseHTTPRequestHandler):
    """A server that is not Prometheus: a proxy error page, a non-JSON 200, a status:error 200,
    or no answer in time, by path."""

    def do_POST(self):  # noqa: N802 - the http.server protocol
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        kind = self.server.kind
        if kind == "slow":
            threading.Event().wait(0.6)
        status, body = {
            "proxy": (502, b"<html>Bad Gateway</html>"),
            "html": (200, b"<html>login</html>"),
            "error": (200, b'{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}'),
            "slow": (200, b"{}"),
        }[kind]
        try:
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the slow answer's client has given up already: that is the point

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("kind, message", [
    ("proxy", "HTTP 502 Bad Gateway: <html>Bad Gateway</html>"),
    ("html", "the answer is not JSON"),
    ("error", "status error (timeout): query timed out in expression evaluation"),
    ("slow", "no answer within 0.2 s (timeout)"),
])
def test_answers_that_are_not_prometheus_data_are_clear_errors(kind, message):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Odd)
    server.kind = kind
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(PrometheusError) as e:
            api.load_prometheus(f"http://127.0.0.1:{server.server_port}", ("2025-12-01T01:00:00Z", "2025-12-01T01:01:00Z"),
                                metrics=["up"], timeout_s=0.2)
        assert message in str(e.value) and str(e.value).startswith("Prometheus at http://127.0.0.1:")
    finally:
        server.shutdown()
        server.server_close()


def _config(tmp_path, body: str):
    p = tmp_path / "incident.toml"
    p.write_text(body)
    return read_config(p)


def test_the_prometheus_table_of_incident_toml_drives_the_loader(prometheus_server, tmp_path):
    cfg = _config(tmp_path, f"""timezone = "Europe/Berlin"
[prometheus]
url = "{prometheus_server.url}/"
window = ["2025-12-01T02:00:00", "2025-12-01T02:01:00"]
step = "30s"
metrics = ["DCGM_FI_DEV_GPU_UTIL"]
matchers = ['Hostname="node17"']
timeout = 5
""")
    p = cfg.prometheus
    assert (p.url, p.step_s, p.timeout_s) == (prometheus_server.url, 30.0, 5.0)
    inc = api.from_config(cfg)
    # 02:00 in Berlin is 01:00 UTC: three steps of 30 s, node17's two GPUs.
    assert len(inc.gpus) == 3 * 2 and set(inc.gpus["host"]) == {"node17"}
    assert inc.gpus["time"].min() == pd.Timestamp(T0, unit="s", tz="UTC")


def test_an_unreachable_configured_server_is_a_load_report_error_unless_strict(tmp_path):
    cfg = _config(tmp_path, '[prometheus]\nurl = "http://127.0.0.1:9"\n'
                            'window = ["2025-12-01T01:00:00Z", "2025-12-01T01:10:00Z"]\ntimeout = 2\n')
    (rep,) = api.from_config(cfg, on_bad_line="warn").load_report.files
    assert rep.path == "prometheus:http://127.0.0.1:9" and "server unreachable" in rep.error
    with pytest.raises(PrometheusError):
        api.from_config(cfg)


@pytest.mark.parametrize("table, message", [
    ('url = "prometheus:9090"\nwindow = ["2025-12-01T01:00:00Z", "2025-12-01T02:00:00Z"]',
     "prometheus.url: expected an http:// or https:// URL, found 'prometheus:9090' (a string)"),
    ('url = "http://p:9090"', "prometheus.window: missing"),
    ('url = "http://p:9090"\nwindow = ["2025-12-01T01:00:00Z"]', "prometheus.window: expected [start, end]"),
    ('url = "http://p:9090"\nwindow = ["2025-12-01T02:00:00Z", "2025-12-01T01:00:00Z"]', "expected start before end"),
    ('url = "http://p:9090"\nwindow = ["yesterday", "2025-12-01T01:00:00Z"]', "prometheus.window[0]: expected a date-time"),
    ('url = "http://p:9090"\nwindow = [2025-12-01T01:00:00, 2025-12-01T02:00:00Z]', "both times with a zone or both without"),
    ('url = "http://p:9090"\nwindow = ["2025-12-01T01:00:00Z", "2025-12-01T02:00:00Z"]\nstep = "15 seconds"',
     "prometheus.step: expected a duration like \"15s\""),
    ('url = "http://p:9090"\nwindow = ["2025-12-01T01:00:00Z", "2025-12-01T02:00:00Z"]\nmetrics = "DCGM_FI_DEV_GPU_UTIL"',
     "prometheus.metrics: expected an array of strings"),
    ('url = "http://p:9090"\nwindow = ["2025-12-01T01:00:00Z", "2025-12-01T02:00:00Z"]\nlimit = 5', "prometheus: unknown key(s) ['limit']"),
])
def test_a_wrong_prometheus_table_is_a_one_line_error(tmp_path, table, message):
    with pytest.raises(IncidentConfigError) as e:
        _config(tmp_path, "[prometheus]\n" + table + "\n")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_durations_read_as_prometheus_writes_them(tmp_path):
    window = 'url = "http://p:9090"\nwindow = [2025-12-01T01:00:00Z, 2025-12-01T02:00:00Z]\n'
    steps = {'"500ms"': 0.5, '"1m30s"': 90.0, '"1h"': 3600.0, "5": 5.0}
    assert {k: _config(tmp_path, f"[prometheus]\n{window}step = {k}\n").prometheus.step_s for k in steps} == steps


def test_load_incident_queries_the_server_incident_toml_names(prometheus_server, tmp_path):
    # The folder holds nothing but incident.toml: every GPU row comes from the server.
    (tmp_path / "incident.toml").write_text(f"""[prometheus]
url = "{prometheus_server.url}"
window = ["2025-12-01T01:00:00Z", "2025-12-01T01:01:00Z"]
step = "30s"
metrics = ["DCGM_FI_DEV_GPU_UTIL"]
matchers = ['Hostname="node17"']
""")
    inc = load_incident(tmp_path, online=True)
    assert len(inc.gpus) == 3 * 2 and set(inc.gpus["host"]) == {"node17"}
    assert [f.path for f in inc.load_report.files] == ["incident.toml", f"prometheus:{prometheus_server.url}"]


def test_load_incident_keeps_the_files_when_the_server_cannot_answer(tmp_path):
    (tmp_path / "incident.toml").write_text('[prometheus]\nurl = "http://127.0.0.1:9"\n'
                                            'window = ["2025-12-01T01:00:00Z", "2025-12-01T01:10:00Z"]\ntimeout = 2\n')
    (tmp_path / "smi.csv").write_text("timestamp, index, memory.used [MiB]\n"
                                      "2025/12/01 01:00:00.000, 0, 1024 MiB\n")
    inc = load_incident(tmp_path, online=True)
    assert len(inc.gpus) == 1 and inc.gpus["memory_used_mib"].iloc[0] == 1024
    failed = [f for f in inc.load_report.files if f.error]
    assert [f.path for f in failed] == ["prometheus:http://127.0.0.1:9"] and "server unreachable" in failed[0].error
