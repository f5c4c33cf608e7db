"""Kubernetes readers (loaders/containers/kubernetes.py): a container's states as attempts, the
events table's rows as lifecycle kinds, ages read against a known time, pod JSON and YAML. The
real-world corpus (tests/fixtures/real-world/k8s/) holds the published forms; these pin each rule."""

from __future__ import annotations

import json

import pandas as pd
from support.incidents import load_written

import dflash_postmortem as pm

T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731

DESCRIBE = """Name:         trainer-0
Namespace:    default
Start Time:   Mon, 13 Nov 2023 03:48:50 +0100
Containers:
  trainer:
    Container ID:   containerd://abc
    Image:          trainer:1.0
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Mon, 13 Nov 2023 03:48:52 +0100
      Finished:     Mon, 13 Nov 2023 03:50:55 +0100
    Ready:          False
    Restart Count:  3
Events:
  Type     Reason     Age                From     Message
  ----     ------     ----               ----     -------
  Normal   Started    5m (x4 over 10m)   kubelet  Started container trainer
  Warning  BackOff    2m3s (x9 over 9m)  kubelet  Back-off restarting failed container trainer in pod trainer-0
  Normal   Killing    <invalid>          kubelet  Stopping container trainer
"""


def _load(tmp_path, name: str, text: str) -> pm.Incident:
    return load_written(tmp_path, name, text)


def test_describe_last_state_is_the_attempt_before_the_restart_count(tmp_path):
    inc = _load(tmp_path, "describe.txt", DESCRIBE)
    ev = inc.events
    end = ev[ev["kind"] == "attempt_end"].iloc[0]
    assert (end["job"], end["container"], end["attempt"], end["exit_code"], end["reason"], end["signal"]) == (
        "trainer-0", "trainer", 2, 137, "OOMKilled", "SIGKILL")
    assert end["time"] == T("2023-11-13 02:50:55")
    oom = ev[ev["kind"] == "oom_kill"].iloc[0]
    assert oom["attempt"] == 2 and oom["time"] == end["time"]
    assert ev.loc[ev["kind"] == "attempt_start", "time"].tolist() == [T("2023-11-13 02:48:52")]


def test_ages_are_read_against_the_newest_time_the_output_states(tmp_path):
    inc = _load(tmp_path, "describe.txt", DESCRIBE)
    ev = inc.events
    newest = T("2023-11-13 02:50:55")  # the Finished time: the output was printed no earlier
    back = ev[ev["reason"] == "BackOff"].iloc[0]
    assert back["kind"] == "warning" and back["age_s"] == 123.0 and back["count"] == 9
    assert back["time"] == newest - pd.Timedelta(seconds=123) and bool(back["time_approx"])
    assert back["first_seen"] == newest - pd.Timedelta(minutes=9)
    # `Started` restates the container's state in describe: a stage, not a second start
    assert ev.loc[ev["reason"] == "Started", "kind"].tolist() == ["stage"]
    # the waiting container is a warning at the time the output was printed
    wait = ev[(ev["kind"] == "warning") & (ev["reason"] == "CrashLoopBackOff")].iloc[0]
    assert wait["attempt"] == 3 and wait["time"] == newest
    killing = ev[ev["reason"] == "Killing"].iloc[0]
    assert killing["kind"] == "kill_sent" and pd.isna(killing["time"])
    rep = inc.load_report.files[0]
    assert any("newest time the output states" in a for a in rep.assumptions)
    assert any("<invalid>" in a for a in rep.assumptions)
    assert rep.balanced


def test_get_events_started_is_an_attempt_start_and_the_object_names_the_job(tmp_path):
    text = """LAST SEEN   TYPE      REASON       OBJECT                MESSAGE
2m          Normal    Started      pod/trainer-0         Started container trainer
3m          Warning   OOMKilling   node/gpu-node-1       Memory cgroup out of memory: Killed process 4242 (python) total-vm:100kB, anon-rss:50kB, file-rss:0kB, shmem-rss:0kB
"""
    ev = _load(tmp_path, "events.txt", text).events
    start = ev[ev["kind"] == "attempt_start"].iloc[0]
    assert start["job"] == "trainer-0" and start["container"] == "trainer" and start["age_s"] == 120.0
    oom = ev[ev["kind"] == "oom_kill"].iloc[0]
    assert oom["pid"] == 4242 and oom["process_name"] == "python" and pd.isna(oom["job"])
    assert ev["time"].isna().all()  # nothing anchors the ages: kept relative


def test_pod_json_and_yaml(tmp_path):
    pod = {"kind": "Pod", "metadata": {"name": "w-0"}, "status": {"containerStatuses": [{
        "name": "pytorch", "restartCount": 1,
        "state": {"running": {"startedAt": "2024-02-21T09:31:00Z"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2024-02-21T09:30:00Z",
                                     "finishedAt": "2024-02-21T09:30:56Z"}}}]}}
    as_json = _load(tmp_path, "pod.json", "$ kubectl get pod w-0 -o json\n" + json.dumps(pod, indent=2)).events
    end = as_json[as_json["kind"] == "attempt_end"].iloc[0]
    assert (end["job"], end["attempt"], end["exit_code"], end["time"]) == ("w-0", 0, 1, T("2024-02-21 09:30:56"))
    starts = as_json[as_json["kind"] == "attempt_start"].sort_values("time")
    assert starts["attempt"].tolist() == [0, 1]
    yaml_text = """apiVersion: v1
kind: Pod
metadata:
  name: w-0
status:
  containerStatuses:
  - name: pytorch
    restartCount: 1
    state:
      running:
        startedAt: "2024-02-21T09:31:00Z"
"""
    (tmp_path / "pod.json").unlink()
    as_yaml = _load(tmp_path, "pod.yaml", yaml_text).events
    assert as_yaml[["kind", "attempt"]].values.tolist() == [["attempt_start", 1]]


# Rows of real `kubectl get pods` answers (corpus: k8s/*-get-pods-*), typed in a session under a
# `date`, with `-A -o wide`'s columns around them: each row's status is read at the time the
# command ran.
PODS_SESSION = """$ date
Tue Jan 23 10:00:00 UTC 2024
$ kubectl get pods -A -o wide
NAMESPACE   NAME                                 READY   STATUS             RESTARTS       AGE   IP           NODE     NOMINATED NODE   READINESS GATES
kubeflow    training-operator-64886bdddc-q6nr5   0/1     CrashLoopBackOff   20 (24s ago)   79m   10.1.2.3     node-1   <none>           <none>
web         tax-tribunals-application-base-x     0/1     OOMKilled          4 (57s ago)    2m    10.1.2.4     node-2   <none>           <none>
gpu         nvidia-cuda-validator-kg6mn          0/1     Init:ErrImagePull  0              6m    10.1.2.5     node-1   <none>           <none>
gpu         nvidia-dcgm-exporter-x2b9z           1/1     Running            0              110m  10.1.2.6     node-1   <none>           <none>
$ date
Tue Jan 23 10:00:30 UTC 2024
"""


def test_get_pods_in_a_session_says_each_pods_trouble_at_the_time_it_ran(tmp_path):
    """A container that ended (CrashLoopBackOff: ended and waiting to start again; OOMKilled, with
    the OOM kill) is an attempt_end, one that cannot start a warning, a running pod nothing; each
    with its restarts and namespace, at the `date` before the command, cited at its row."""
    inc = _load(tmp_path, "session.txt", PODS_SESSION)
    ev = inc.events[inc.events["by"] == "kubernetes"]
    assert ev[["kind", "job", "attempt", "reason"]].astype(object).values.tolist() == [
        ["attempt_end", "training-operator-64886bdddc-q6nr5", 20, "CrashLoopBackOff"],
        ["attempt_end", "tax-tribunals-application-base-x", 4, "OOMKilled"],
        ["oom_kill", "tax-tribunals-application-base-x", 4, "OOMKilled"],
        ["warning", "nvidia-cuda-validator-kg6mn", 0, "ErrImagePull"],
    ]
    assert set(ev["time"]) == {T("2024-01-23 10:00:00")} and set(ev["namespace"]) == {"kubeflow", "web", "gpu"}
    assert ev["ref"].tolist() == ["session.txt:5", "session.txt:6", "session.txt:6", "session.txt:7"]
    assert ev["message"].iloc[0] == "pod training-operator-64886bdddc-q6nr5: CrashLoopBackOff, 20 restarts, the last 24s before"
    said = pm.what_happened(inc, pm.detect(inc))
    # (an OOM kill is what a reader names first: present/sentences.py's _WRONG)
    assert said == ["No training seen in 1 file: no training step between 10:00:00 UTC and 10:00:30 UTC (7 events). "
                    "What it shows going wrong: pod tax-tribunals-application-base-x: OOMKilled (session.txt:6), and 2 "
                    "more such lines."]


def test_get_pods_whose_spacing_was_lost_reads_the_same_rows(tmp_path, fixtures_dir):
    """The real `-w` sample (kubeflow/trainer#1799) pasted where its blanks collapsed to one (as a
    chat or a renderer leaves a table): every row is read word by word, the restarts with their
    `(24s ago)`, the same events as the aligned table gives."""
    src = fixtures_dir / "k8s" / "trainer-get-pods-w-training-operator-crashloopbackoff-error-restarts-ago.txt"
    aligned = pm.load_incident(src).events
    collapsed = tmp_path / "pods.txt"
    collapsed.write_text("\n".join(" ".join(line.split()) for line in src.read_text().splitlines()) + "\n")
    damaged = pm.load_incident(collapsed).events
    cols = ["kind", "job", "attempt", "reason", "message"]
    assert len(aligned) == 7 and damaged[cols].equals(aligned[cols])


def test_get_pods_rows_pasted_without_their_header_are_read(tmp_path, fixtures_dir):
    """The real `-w` sample's rows with its header line cut off (a paste that kept the rows, as
    tensorflow/agents' three Evicted masters are): the same events, columns known by their words."""
    src = fixtures_dir / "k8s" / "trainer-get-pods-w-training-operator-crashloopbackoff-error-restarts-ago.txt"
    aligned = pm.load_incident(src).events
    headless = tmp_path / "pods.txt"
    headless.write_text("\n".join(ln for ln in src.read_text().splitlines() if not ln.startswith("NAME ")) + "\n")
    cut = pm.load_incident(headless).events
    cols = ["kind", "job", "attempt", "reason", "message"]
    assert len(aligned) == 7 and cut[cols].equals(aligned[cols])
    # NAMESPACE first (`-A`): the third word is READY
    (tmp_path / "all").mkdir()
    inc = _load(tmp_path / "all", "a.txt", "ml   trainer-0   0/1   OOMKilled   4 (57s ago)   2m40s\n")
    assert inc.events[["kind", "job", "namespace", "attempt"]].values.tolist() == [
        ["attempt_end", "trainer-0", "ml", 4], ["oom_kill", "trainer-0", "ml", 4]]


def test_get_events_rows_pasted_without_their_header_are_read(tmp_path):
    """KubeFATE #64's rows (no header): age, type, reason, object (a name the reporter masked with
    a blank in it), message; an eviction ends the pod, a `Killing` is a kill sent to it."""
    inc = _load(tmp_path, "events.txt",
                "4m11s       Warning   Evicted               pod/egg-<id here>    The node was low on resource: memory.\n"
                "4m11s       Normal    Killing               pod/egg-<id here>    Stopping container egg\n"
                "4m          Warning   ExceededGracePeriod   pod/egg-<id here>    Container runtime did not kill the pod.\n"
                "not an event row\n")
    ev = inc.events
    assert ev["kind"].tolist() == ["attempt_end", "kill_sent", "warning"]
    assert ev["job"].tolist() == ["egg-<id here>"] * 3 and ev["age_s"].tolist() == [251.0, 251.0, 240.0]
    assert (inc.load_report.files[0].parsed, sum(inc.load_report.files[0].skipped.values())) == (3, 1)


def test_describe_events_rows_pasted_without_their_header_are_read(tmp_path):
    """substratus runbooks #92's rows of describe's events table alone (type, reason, age, who,
    message; no header, no `Events:`): the eviction ends the pod, its `Killing` rows name the
    containers stopped ("Container runtime" names none)."""
    inc = _load(tmp_path, "events.txt",
                "  Warning  Evicted              109s  kubelet                                Pod ephemeral local storage "
                "usage exceeds the total limit of containers 5Gi.\n"
                "  Normal   Killing              109s  kubelet                                Stopping container model\n"
                "  Warning  ExceededGracePeriod  99s   kubelet                                Container runtime did not "
                "kill the pod within specified grace period.\n")
    ev = inc.events
    assert inc.load_report.files[0].format == "kubectl-events"
    assert ev["kind"].tolist() == ["attempt_end", "kill_sent", "warning"]
    assert ev["age_s"].tolist() == [109.0, 109.0, 99.0] and set(ev["source_component"]) == {"kubelet"}
    assert ev["container"].iloc[1] == "model" and pd.isna(ev["container"].iloc[2])


def test_outputs_pasted_one_after_another_are_each_read(tmp_path):
    """nvidia-container-toolkit #30: `kubectl get pods`, then the part of `kubectl describe pod`
    that says why the pod stays `PodInitializing` (its init containers, `...` where the reporter
    cut, `app2:` without its indentation): each read by its reader. An init container's run is a
    stage of the pod's start, no attempt of the job; its OOM kill (reported with exit code 0) is
    what went wrong."""
    inc = _load(tmp_path, "pod.txt",
                "NAMESPACE     NAME       READY   STATUS            RESTARTS       AGE\n"
                "default       gpu-pod    0/1     PodInitializing   0              83m\n"
                "\n"
                "Init Containers:\n"
                "  app1:\n"
                "    ...\n"
                "    State:          Terminated\n"
                "      Reason:       Completed\n"
                "      Exit Code:    0\n"
                "      Started:      Tue, 30 Aug 2022 10:50:38 +0900\n"
                "      Finished:     Tue, 30 Aug 2022 10:50:44 +0900\n"
                "app2:\n"
                "    ...\n"
                "    State:          Terminated\n"
                "      Reason:       OOMKilled\n"
                "      Exit Code:    0\n")
    rep = inc.load_report.files[0]
    assert (rep.format, rep.parsed, rep.n_skipped, rep.read) == ("kubectl-get-pods", 11, 5, 16)
    ev = inc.events.sort_values("ref", key=lambda r: r.str.rsplit(":", n=1).str[-1].astype(int), kind="stable")
    assert ev["kind"].tolist() == ["stage", "stage", "error", "oom_kill"]
    assert ev["container"].tolist() == ["app1", "app1", "app2", "app2"]
    assert ev["time"].iloc[:2].tolist() == [T("2022-08-30 01:50:38"), T("2022-08-30 01:50:44")]
    assert ev["time"].iloc[2:].isna().all() and (ev["exit_code"].iloc[2], ev["reason"].iloc[2]) == (0, "OOMKilled")
    said = pm.present.sentences.what_happened(inc, pm.detect(inc))
    assert said == ["No training seen in 1 file: no training step between 01:50:38 UTC and 01:50:44 UTC (4 events). "
                    "What it shows going wrong: app2 (init container): OOMKilled (pod.txt:15)."]
