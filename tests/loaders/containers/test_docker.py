"""docker readers (loaders/containers/docker.py): events in text and JSON lines, inspect States of
a running container after restarts, ps listings whose ages a session's clock anchors."""

from __future__ import annotations

import json

import pandas as pd
from support.incidents import load_written

import dflash_postmortem as pm

T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


def _load(tmp_path, name: str, text: str) -> pm.Incident:
    return load_written(tmp_path, name, text)


def test_json_lines_events_take_their_nanosecond_utc_time(tmp_path):
    line = {"status": "die", "id": "abc", "Type": "container", "Action": "die",
            "Actor": {"ID": "abc", "Attributes": {"exitCode": "137", "name": "trainer"}},
            "time": 1704164645, "timeNano": 1704164645123456789}
    start = dict(line, Action="start", status="start", timeNano=1704164600000000000, time=1704164600)
    start["Actor"] = {"ID": "abc", "Attributes": {"name": "trainer"}}
    ev = _load(tmp_path, "events.jsonl", json.dumps(start) + "\n" + json.dumps(line) + "\n").events
    end = ev[ev["kind"] == "attempt_end"].iloc[0]
    assert (end["job"], end["exit_code"], end["signal"]) == ("trainer", 137, "SIGKILL")
    assert end["time"] == T("2024-01-02 03:04:05.123456")


def test_inspect_of_a_running_container_after_restarts(tmp_path):
    doc = [{"Id": "f" * 64, "Name": "/trainer", "RestartCount": 2, "State": {
        "Status": "running", "Running": True, "OOMKilled": False, "Pid": 4242, "ExitCode": 0,
        "StartedAt": "2024-01-02T03:05:00.5Z", "FinishedAt": "2024-01-02T03:04:59Z"}}]
    ev = _load(tmp_path, "inspect.json", json.dumps(doc, indent=4)).events
    start = ev[ev["kind"] == "attempt_start"].iloc[0]
    assert (start["job"], start["attempt"], start["pid"]) == ("trainer", 2, 4242)
    end = ev[ev["kind"] == "attempt_end"].iloc[0]
    # the run before the last start ended at FinishedAt; docker cleared its exit code
    assert end["attempt"] == 1 and pd.isna(end.get("exit_code")) and end["time"] == T("2024-01-02 03:04:59")


def test_inspect_oom_killed(tmp_path):
    doc = [{"Name": "/trainer", "RestartCount": 0, "State": {
        "Status": "exited", "Running": False, "OOMKilled": True, "Pid": 0, "ExitCode": 137,
        "StartedAt": "2024-01-02T03:00:00Z", "FinishedAt": "2024-01-02T03:04:05Z"}}]
    ev = _load(tmp_path, "inspect.json", json.dumps(doc)).events
    assert ev[["kind", "attempt"]].values.tolist() == [["attempt_start", 0], ["attempt_end", 0], ["oom_kill", 0]]
    assert ev.loc[ev["kind"] == "attempt_end", "reason"].item() == "OOMKilled"


def test_a_session_anchors_docker_ps_ages_and_reads_logs_as_the_containers_log(tmp_path):
    text = """[2024-01-02T03:10:00Z] $ docker ps -a
CONTAINER ID   IMAGE          COMMAND                  CREATED       STATUS                       PORTS     NAMES
3f2a1b9c8d7e   trainer:1.0    "python train.py --l…"   2 hours ago   Exited (137) 5 minutes ago             trainer
a1b2c3d4e5f6   redis:7        "docker-entrypoint.s…"   3 days ago    Up About an hour             6379/tcp  cache
[2024-01-02T03:10:05Z] $ docker logs -t trainer
2024-01-02T03:04:00.123456789Z step 100 loss 2.5 tok/s 1000
[2024-01-02T03:11:00Z] $ kubectl logs pod/trainer-0 --previous
step 5 loss 3.0 tok/s 900
"""
    inc = _load(tmp_path, "session.txt", text)
    ev = inc.events
    end = ev[ev["kind"] == "attempt_end"].iloc[0]
    assert (end["job"], end["exit_code"], end["time"]) == ("trainer", 137, T("2024-01-02 03:05:00"))
    assert bool(end["time_approx"])
    up = ev[ev["kind"] == "attempt_start"].iloc[0]
    assert up["job"] == "cache" and up["time"] == T("2024-01-02 02:10:00")
    m = inc.metrics
    mine = m[(m["job"] == "trainer") & (m["metric"] == "train/tok_per_s")].iloc[0]
    assert mine["value"] == 1000.0 and mine["time"] == T("2024-01-02 03:04:00.123456")
    assert mine["ref"] == "session.txt:6"
    prev = m[(m["job"] == "trainer-0") & (m["metric"] == "train/tok_per_s")].iloc[0]
    assert prev["value"] == 900.0 and bool(prev["previous"]) and prev["ref"] == "session.txt:8"
    assert inc.load_report.files[0].balanced
