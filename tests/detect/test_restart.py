"""Failed restarts and stale processes, on the real capture and the reconstruction."""

import pytest

from dflash_postmortem.detect import detect_failed_restarts
from dflash_postmortem.detect.restart import port_in_use


def _kind(findings, kind):
    return findings[findings["kind"] == kind]


def test_bundled_failed_restart_explained(bundled_findings, bundled_dir, line_at):
    fr = _kind(bundled_findings, "failed_restart")
    assert len(fr) == 1
    r = fr.iloc[0]
    assert f"{r['start']:%H:%M:%S}" == "05:23:01"
    assert r["numbers"]["reason"] == "redirect target missing"
    assert "log path does not exist, process never started" in r["detail"]
    assert r["numbers"]["checks"] == {"process": False, "log": False, "gpu_memory": False, "first_step": False}
    cited = [line_at(bundled_dir, ref) for ref in r["evidence"]]
    assert any("bash: line 1: /workspace/train_opt2.log: No such file or directory" in c for c in cited)
    assert any(c.startswith("cat: /workspace/train_opt2.log: No such file") for c in cited)


def test_bundled_later_launches_are_not_failures(bundled_findings):
    """baseline, regressed and the 05:23:16 relaunch all started: no finding for them."""
    assert _kind(bundled_findings, "slow_start").empty
    assert len(_kind(bundled_findings, "failed_restart")) == 1


def test_bundled_stale_process(bundled_findings, bundled_dir, line_at):
    st = _kind(bundled_findings, "stale_process")
    assert st["numbers"].map(lambda n: n["pid"]).tolist() == [579]
    cited = [line_at(bundled_dir, ref) for ref in st.iloc[0]["evidence"]]
    assert any("579" in c and "time.sleep(100000)" in c for c in cited)
    assert "1" in [c.strip() for c in cited]  # the operator's `wc -l` answer counted it


def test_seed_failed_restart_three_pieces_of_evidence(seed_findings, seed_dir, line_at):
    fr = _kind(seed_findings, "failed_restart")
    assert len(fr) == 1
    r = fr.iloc[0]
    assert r["numbers"]["reason"] == "launching session killed"
    assert r["numbers"]["launcher"] == "pct exec"
    cited = {ref: line_at(seed_dir, ref) for ref in r["evidence"]}
    texts = list(cited.values())
    # the `wc -l` answer `1`, on the line after the operator's ps command
    answers = [ref for ref, t in cited.items() if t.strip() == "1"]
    assert len(answers) == 1
    path, n = answers[0].rsplit(":", 1)
    assert line_at(seed_dir, f"{path}:{int(n) - 1}").endswith("$ ps aux | grep python3 | grep -v grep | wc -l")
    # the operator's nvidia-smi answer (8 lines) and the GPU stream's samples after the launch
    answers = [t for ref, t in cited.items() if t.endswith(", 0 MiB, 0 %") and ref.startswith("logs/operator.log:")]
    samples = [t for ref, t in cited.items() if t.endswith(", 0 MiB, 0 %") and ref.startswith("logs/gpu_query.csv:")]
    assert len(answers) == 8 and {a.split(",")[0] for a in answers} == {str(i) for i in range(8)}
    assert len(samples) == 8 and {s.split(", ")[1] for s in samples} == {str(i) for i in range(8)}
    assert "cat: /workspace/train_opt2.log: No such file or directory" in texts


def test_seed_stale_process(seed_findings):
    st = _kind(seed_findings, "stale_process")
    assert st["numbers"].map(lambda n: n["pid"]).tolist() == [2231]
    assert "not the launched trainer" in st.iloc[0]["detail"]


def test_python_process_alone_is_not_training(bundled_incident):
    """Without the transcript's checks, the stale python process still never passes for the trainer."""
    ev = bundled_incident.events
    inc = type(bundled_incident)(events=ev[ev["kind"].isin(["launch", "command"])],
                                 processes=bundled_incident.processes, config=bundled_incident.config)
    fr = detect_failed_restarts(inc)
    failed = fr[fr["kind"] == "failed_restart"]
    assert [f"{t:%H:%M:%S}" for t in failed["start"]] == ["05:23:01"]
    assert failed.iloc[0]["numbers"]["checks"]["process"] is False


def test_a_restart_with_no_evidence_of_why_says_so_whole_and_lists_what_is_missing(tmp_path, bundled_dir, repo_dir):
    # The operator's transcript alone: no launch "never came up" for want of other evidence.
    import shutil

    import dflash_postmortem as pm

    (tmp_path / "logs").mkdir()
    shutil.copy(bundled_dir / "logs" / "operator.log", tmp_path / "logs")
    inc = pm.load_incident(tmp_path)
    found = detect_failed_restarts(inc)
    unknown = found[found["title"].str.endswith("never came up: no evidence says why the process did not start")]
    # regressed at 05:21:42 trained (README) and was killed through its PID file at 05:22:57: the
    # process count typed after the kill is no check of its start (test_recorded_incidents.py)
    assert unknown.empty
    # baseline (05:20:22) trained (README): with its log elsewhere and nothing before the next
    # launch that checks it, it "never came up" for want of evidence; now whether it trained
    # cannot be judged, and the story says so
    said = pm.what_happened(inc, pm.detect(inc))
    assert any(s.startswith("The start at 05:20:22 UTC cannot be judged: its log (/tmp/capture2/logs/train.log) is not "
                            "in the incident, and no GPU sample or process listing covers its time") for s in said), said
    # the 05:23:16 relaunch came up (README): the operator's `tail -n 2` of its log printed its steps
    assert "The start at 05:23:16 UTC by the operator came up: its first step was logged at 05:25:09 UTC." in said
    # h200-2gpu-replay-full without its process listing: the 07:08:05 relaunch, whose session the
    # operator killed (README), is told for want of evidence, and the title says so in whole
    # words (it used to stop inside "(missing")
    folder = tmp_path / "replay-full"
    shutil.copytree(repo_dir / "data" / "incidents" / "h200-2gpu-replay-full", folder)
    (folder / "logs" / "ps_aux_snapshots.txt").unlink()
    found = detect_failed_restarts(pm.load_incident(folder))
    unknown = found[found["title"].str.endswith("never came up: no evidence says why the process did not start")]
    assert [f"{t:%H:%M:%S}" for t in unknown["start"]] == ["07:08:05"]
    for r in unknown.itertuples():
        assert r.title.count("(") == r.title.count(")")
        assert r.detail.startswith("no evidence says why the process did not start: the evidence that would tell is "
                                   "missing (no process listing (ps) covers the launch; ")


def test_a_number_the_evidence_does_not_give_is_none(seed_findings):
    """The seed's failed restart ran with no run name: its `run` is None, not the NaN its
    launch's row holds (the watch announced it for a run called "nan")."""
    numbers = seed_findings[seed_findings["kind"] == "failed_restart"].iloc[0]["numbers"]
    assert "run" in numbers and numbers["run"] is None
    assert all(not (isinstance(v, float) and v != v) for f in seed_findings["numbers"] for v in f.values())


def test_a_launch_a_shell_session_alone_shows_killed_is_not_judged_a_failed_start(tmp_path):
    """A blockquoted paste of a session: `nohup python train.py > train.log &` (PID 41234) typed
    before the first `date` (09:05:19), then `kill -9 41234` and bash's `[1]+ Killed` before the
    next (09:06:19). Its log is not here and nothing else checks it: it "never came up" for want of
    evidence (and before that, a slow start at an unknown time); now it cannot be judged, it ended
    killed by SIGKILL, and the kill is what the evidence shows going wrong."""
    import dflash_postmortem as pm

    (tmp_path / "session.txt").write_text(
        "> user@gpu01:~$ nohup python train.py > train.log 2>&1 &\n> [1] 41234\n> user@gpu01:~$ date\n"
        "> Thu Aug 16 09:05:19 UTC 2018\n> user@gpu01:~$ kill -9 41234\n"
        "> [1]+  Killed                  nohup python train.py > train.log 2>&1\n> user@gpu01:~$ date\n"
        "> Thu Aug 16 09:06:19 UTC 2018\n")
    inc = pm.load_incident(tmp_path)
    a = pm.attempts(inc).iloc[0]
    assert a["pids"] == [41234] and a["signal"] == "SIGKILL" and f"{a['end']:%H:%M:%S}" == "09:05:19"
    found = pm.detect(inc)
    assert found.empty
    assert pm.what_happened(inc, found) == [
        "No training seen in 1 file: no training step between 09:05:19 UTC and 09:06:19 UTC (8 events). What it shows "
        "going wrong: [1]+ Killed nohup python train.py > train.log 2>&1 (session.txt:6).",
        "The launch of train.py (session.txt:1) cannot be judged: its log (train.log) is not in the incident, and no "
        "GPU sample or process listing covers its time: whether it trained, nothing shows; it ended at 09:05:19 UTC, "
        "killed by SIGKILL."]


@pytest.mark.parametrize(("said", "command", "port"), [
    # torch 2.3+ (vllm-project/vllm#39015; h100-1gpu-port-in-use recorded the same words)
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
     "port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use", "torchrun x.py", 29500),
    # torch 1.11-2.2 (meta-pytorch/torchtune#392; pyg-team/pytorch_geometric#8981)
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
     "The server socket has failed to bind to [::]:54902 (errno: 98 - Address already in use). The server socket "
     "has failed to bind to 0.0.0.0:54902 (errno: 98 - Address already in use).", "python -m pytest", 54902),
    # torch before 1.11 named no address (pytorch/pytorch#72816): the port the launch gave
    ("RuntimeError: Address already in use", "torchrun --nproc_per_node=2 --master_port=25641 tools/train.py", 25641),
    ("RuntimeError: Address already in use", "torchrun --nproc_per_node=2 tools/train.py", 29500),
    # a port refused for another reason is no port in use (KimMeen/Time-LLM#158)
    ("The server socket has failed to bind to [::]:98 (errno: 13 - Permission denied).", "torchrun x.py", None),
])
def test_the_port_a_start_could_not_bind_as_each_torch_says_it(said, command, port):
    assert port_in_use(said, command) == port
