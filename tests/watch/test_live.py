"""The live watch on recorded incidents replayed into a folder while it runs: each file grows in
the order its lines were written (by their own time stamps), the watch announces what the
post-mortem would say as soon as the lines show it, and at the end the folder's findings are what
was announced."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from support.bundled import loaded
from support.growing import grow, moments
from support.watching import Said

import dflash_postmortem as pm
from dflash_postmortem.cli import main
from dflash_postmortem.loaders.folder import WATCH_LOG
from dflash_postmortem.watch.live import ANNOUNCED, Watch, follow
from dflash_postmortem.watch.sinks import Sinks, Webhook

INCIDENTS = Path(__file__).resolve().parents[2] / "data" / "incidents"
class _Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        self.server.posts.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def hook():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.posts = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def _wait_for_looks(watch: Watch, n: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while watch.looks < n:
        assert time.monotonic() < deadline, "the watch stopped looking"
        time.sleep(0.05)


def _live_record(name: str) -> list[tuple[str, str]]:
    """(kind word, job) of each line of a watch's own record, as it was said on the machine."""
    kinds = {"attempt": "attempt_started", "first": "first_step", "not": "not_starting", "throughput": "throughput_fell",
             "stall:": "stall"}
    out = []
    for line in (INCIDENTS / name / WATCH_LOG).read_text().splitlines():
        _, _, job, text = line.split(maxsplit=3)
        word = text.split()[0]
        out.append((kinds.get(word, "failed_start" if "never came up" in text else word), job))
    return out


def test_a_watched_h200_session_replayed_live_says_what_the_live_watch_said(tmp_path, hook):
    """The session recorded on an H200 while `watch` followed it (its README): replayed into a
    folder at four moments, with the watch's clock at each, it announces what the live watch
    announced, in the same order, and the post-mortem of the whole folder finds the same."""
    src, folder = INCIDENTS / "h200-1gpu-watched-relaunch", tmp_path / "incident"
    folder.mkdir()
    now = {"t": pd.Timestamp("2026-12-03 04:13:40", tz="UTC")}
    watch = Watch(folder, clock_now=lambda: now["t"])
    said: list[tuple[int, object]] = []

    class _Record(list):
        def announce(self, a):
            said.append((watch.looks, a))

        def status(self, jobs):
            pass

        def close(self):
            pass

    # grow() writes a moment's files one by one: the watch looks at whole moments only, or a look
    # between two of them (a log's traceback not yet beside the transcript's command) would tell
    # the same things in another order than the live watch did
    moment = threading.Lock()
    look = watch.look

    def look_at_whole_moments():
        with moment:
            return look()

    watch.look = look_at_whole_moments
    stop = threading.Event()
    sinks = Sinks([_Record(), Webhook(f"http://127.0.0.1:{hook.server_port}/hook")])
    t = threading.Thread(target=follow, args=(watch, sinks), kwargs={"poll_s": 0.1, "stop": stop}, daemon=True)
    t.start()
    try:
        # the restart that dies; the stuck one past its budget; the slow run; its stall
        for until in ("04:14:40", "04:15:00", "04:16:00", "04:18:05"):
            done = watch.looks
            with moment:
                now["t"] = pd.Timestamp(f"2026-12-03 {until}", tz="UTC")
                grow(src, folder, f"2026-12-03 {until}")
            _wait_for_looks(watch, done + 2)  # one look at least after the files were written
    finally:
        stop.set()
        t.join(30)
    told = [(a.kind, a.job) for _, a in said]
    assert told == _live_record("h200-1gpu-watched-relaunch")
    late = next(a for _, a in said if a.kind == "not_starting")
    assert late.text.startswith("not starting: PID 963 alive, ") and "(budget 20 s: 1.5 × the longest earlier start" in late.text
    dead = next(a for _, a in said if a.kind == "failed_start")
    assert dead.text == "restart at 04:14:31 never came up: died during start-up"
    assert dead.evidence.startswith("logs/train2.log:4  Traceback")
    # the webhook got every announcement, masked as every output is
    assert sorted(p["text"] for p in hook.posts) == sorted(a.redacted().line(None) for _, a in said)
    # the post-mortem of the finished folder finds what the watch announced
    found = pm.detect(pm.load_incident(folder))
    announced = found[found["kind"].isin(list(ANNOUNCED))]
    assert sorted((ANNOUNCED[k], n.get("run") or n.get("run_after")) for k, n in zip(announced["kind"], announced["numbers"], strict=True)) \
        == sorted((a.kind, a.job) for _, a in said if a.kind in set(ANNOUNCED.values()))


def test_a_torchrun_folder_followed_while_it_is_written_is_read_at_every_moment(tmp_path):
    """The torchrun crash loop grown again moment by moment, the watch looking at each: torchrun's
    log read while it is written ends on the agent's lines after the last attempt it names (a
    look there raised before those lines were given to that attempt), no failed start is
    announced that the post-mortem of the whole folder does not find, and each attempt is told
    once: the agent's third round, whose two ranks `ps` lists (04:36:39) before torchrun's log
    says it restarted them, is one attempt, not one per rank."""
    src = INCIDENTS / "h200-1gpu-torchrun-crashloop"
    folder = tmp_path / "live"
    now = {"t": None}
    watch = Watch(folder, clock_now=lambda: now["t"])
    said = []
    for moment in moments(src, 12):
        grow(src, folder, moment)
        now["t"] = pd.Timestamp(moment, tz="UTC")
        said += watch.look()
    grow(src, folder, None)
    now["t"] += pd.Timedelta(minutes=10)
    said += watch.look()
    inc, found = loaded(src.name)
    failed = sorted((n.get("run") or "?") for k, n in zip(found["kind"], found["numbers"], strict=True)
                    if ANNOUNCED.get(k) == "failed_start")
    assert sorted(a.job for a in said if a.kind == "failed_start") == failed, [a.text for a in said]
    started = [a.text for a in said if a.kind == "attempt_started"]
    assert len(started) == len(pm.attempts(inc)) == 3, started
    cut = tmp_path / "cut"
    grow(src, cut, "2026-12-02 04:36:43")
    third = pm.attempts(pm.load_incident(cut)).iloc[-1]
    assert (len(pm.attempts(pm.load_incident(cut))), sorted(third["pids"])) == (3, [631, 632])


def test_a_look_that_raises_is_said_once_and_the_watch_tries_again_later(tmp_path, monkeypatch):
    """A read that raises (a reader's bug, a file caught mid-write) does not end `follow`: it is
    announced once as the watch's own error, the next tries wait RETRY_S and then twice that (not
    the poll, however the files change), and once a read works the watch goes on as before."""
    from dflash_postmortem.watch import live

    folder = tmp_path / "live"
    grow(INCIDENTS / "h200-1gpu-crash-loop", folder, None)
    tried, real = [], live.detect

    def detect_failing_twice(inc, **kwargs):
        tried.append(time.monotonic())
        if len(tried) <= 2:
            raise TypeError("boolean value of NA is ambiguous")
        return real(inc, **kwargs)

    monkeypatch.setattr(live, "detect", detect_failing_twice)
    monkeypatch.setattr(live, "RETRY_S", 0.3)
    said, stop = Said(), threading.Event()
    thread = threading.Thread(target=follow, args=(Watch(folder), Sinks([said])),
                              kwargs={"poll_s": 0.05, "stop": stop}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not any(a.kind == "attempt_started" for a in said) and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    thread.join(30)
    errors = [a for a in said if a.kind == "watch_error"]
    assert len(errors) == 1 and "(TypeError: boolean value of NA is ambiguous)" in errors[0].text, errors
    assert errors[0].job == "watch" and said.index(errors[0]) == 0
    assert tried[1] - tried[0] >= 0.3 and tried[2] - tried[1] >= 0.6
    assert len(tried) >= 3 and [a.kind for a in said].count("attempt_started") == len(pm.attempts(pm.load_incident(folder)))


def test_a_detector_that_raises_is_said_once_and_the_others_findings_are_told(tmp_path, monkeypatch):
    """The stall replay on one H200 (a drafter thread blocked at 09:28:53, the relaunch at 09:29:52
    recovering to 0.83 of baseline) watched with the stall detector raising: its error is the
    watch's own announcement, once over two reads, and the partial recovery is still told."""
    import importlib
    import os

    detection = importlib.import_module("dflash_postmortem.detect")  # the package, not its function

    folder = tmp_path / "stall"
    grow(INCIDENTS / "h200-1gpu-stall", folder, None)

    def detect_stalls(inc):
        raise ValueError("cannot take this evidence")

    monkeypatch.setattr(detection, "DETECTORS", tuple(detect_stalls if d.__name__ == "detect_stalls" else d
                                                      for d in detection.DETECTORS))
    watch = Watch(folder)
    said = watch.look()
    assert [a.text for a in said if a.kind == "watch_error"] == [
        "detect_stalls failed (ValueError: cannot take this evidence); the other detectors' findings are told"]
    told = {a.kind: a for a in said}
    assert "stall" not in told and told["partial_recovery"].time == pd.Timestamp("2026-11-30 09:30:08", tz="UTC")
    log = sorted((folder / "logs").glob("*.log"))[0]
    os.utime(log, ns=(log.stat().st_atime_ns, log.stat().st_mtime_ns + 10**9))  # the folder changed: read again
    again = watch.look()
    assert watch.failed and [a for a in again if a.kind == "watch_error"] == []


def test_a_start_with_no_step_past_its_budget_is_announced_as_not_starting(tmp_path):
    # big's launch at 10:25:20 loaded its target model and never logged a step (README of the
    # incident); cut at 10:25:50, six minutes on the wall clock after it, nothing said it failed.
    folder = tmp_path / "incident"
    grow(INCIDENTS / "h200-1gpu-never-trains", folder, "2026-12-01 10:25:50")
    watch = Watch(folder, clock_now=lambda: pd.Timestamp("2026-12-01 10:31:20", tz="UTC"))
    said = watch.look()
    late = [a for a in said if a.kind == "not_starting"]
    assert len(late) == 1 and late[0].job == "big"
    assert "no step after 360 s (budget 300 s: the default)" in late[0].text
    assert "logs/train.log" in late[0].evidence
    assert [a.kind for a in watch.look()] == []  # said once
    status = {j.job: j.state for j in watch.status()}
    assert status["big"] == "starting"


def test_a_run_whose_first_step_lines_share_one_second_is_training(tmp_path):
    """The crash loop cut at 04:37:48, the fixed run's first second of steps (5 and 10, its log's
    lines 8-9): its status is training, not starting; the looped script before it never trained."""
    folder = tmp_path / "incident"
    grow(INCIDENTS / "h200-1gpu-crash-loop", folder, "2026-12-02 04:37:48")
    watch = Watch(folder, clock_now=lambda: pd.Timestamp("2026-12-02 04:37:48", tz="UTC"))
    said = watch.look()
    assert [a.evidence.split()[0] for a in said if a.kind == "first_step"] == ["logs/train_fixed.log:8"]
    assert {j.job: j.state for j in watch.status()} == {"looped": "never_trained", "looped-fixed": "training"}


def test_a_run_read_ahead_of_its_trainers_log_is_that_trainers_not_a_start_after_it(tmp_path):
    """A look reads a folder file by file while it is written: on a busy machine the relaunch's
    wandb records (its first history row at 09:30:08.227) can be read after its first step was
    written and its log before, with the run's own logs, which name its PID, not there yet. The
    run is the relaunch's (PID 887, alive then, started with `--run-name fixed`), not a start of
    its own, which made the relaunch one that never trained (the stall replay's watch test on CI
    said a failed start of `fixed`, then its first step)."""
    src = INCIDENTS / "h200-1gpu-stall"
    folder = tmp_path / "incident"
    grow(src, folder, "2026-11-30 09:30:09")
    lines = (src / "logs" / "train_opt2.log").read_text().splitlines(True)
    first = next(i for i, ln in enumerate(lines) if " step " in ln)
    (folder / "logs" / "train_opt2.log").write_text("".join(lines[:first]))
    run = next(folder.glob("wandb/wandb/offline-run-*-p4uadly6"))
    shutil.rmtree(run / "logs"), shutil.rmtree(run / "files")
    watch = Watch(folder, clock_now=lambda: pd.Timestamp("2026-11-30 09:30:09", tz="UTC"))
    said = watch.look()
    att = pm.attempts(watch.incident)
    assert len(att) == 2, att[["attempt", "start", "pids", "runs"]]
    relaunch = att.iloc[1]
    assert relaunch["pids"] == [887] and relaunch["runs"] == ["fixed"]
    assert relaunch["first_step"] == pd.Timestamp("2026-11-30 09:30:08.227016", tz="UTC")
    assert [a.text for a in said if a.kind == "failed_start"] == []
    assert {j.job: j.state for j in watch.status()}["fixed"] == "training"


def test_the_budget_is_longer_than_the_longest_earlier_start_of_the_same_script(tmp_path):
    folder = tmp_path / "incident"
    grow(INCIDENTS / "h200-1gpu-crash-loop", folder, None)
    inc = pm.load_incident(folder)
    from dflash_postmortem.model.attempts import attempts
    from dflash_postmortem.watch.live import start_budget

    att = attempts(inc)
    fixed = att[att["run"] == "looped-fixed"].iloc[0]
    later = fixed.copy()
    later["start"] = fixed["start"] + pd.Timedelta(minutes=5)
    budget, why = start_budget(att, later, None)
    took = (fixed["first_step"] - fixed["start"]).total_seconds()
    assert budget == pytest.approx(1.5 * took)
    assert why.startswith("1.5 × the longest earlier start")


def test_watch_once_prints_the_state_and_its_record_is_skipped_when_the_folder_is_loaded(tmp_path, capsys):
    folder = tmp_path / "incident"
    shutil.copytree(INCIDENTS / "h200-1gpu-crash-loop", folder)
    (folder / WATCH_LOG).write_text("04:37:00  looped  start at 04:37:00 never came up\n")
    assert main(["watch", str(folder), "--once", "--width", "120"]) == 0
    out = capsys.readouterr().out.splitlines()
    # the loop never trained; the fixed run trained, then was stopped (its pace: its last lines)
    assert out[-1] == "watching 2 jobs · looped never trained ? tok/s 0 % · looped-fixed exited 64.2K tok/s 51 %"
    assert all(len(line) <= 120 for line in out)
    rep = {r.path: r for r in pm.load_incident(folder).load_report.files}
    assert rep[WATCH_LOG].notes == ["the watcher's own record of what it announced (dflash-postmortem watch): not evidence"]


def test_a_script_recorded_session_grows_by_the_dates_typed_in_it(tmp_path):
    """A terminal recorded by `script` has no time on its lines but the `date`s the operator typed
    (`Tue Dec  1 10:30:29 AM UTC 2026`): grown to 10:30:00 it holds the first launch and not what
    was typed after the next `date` (the second launch, the kill), and a look then announces the
    start and no failed one (the whole transcript there made both launches "never came up")."""
    src = INCIDENTS / "h200-1gpu-survivor"
    folder = tmp_path / "live"
    grow(src, folder, "2026-12-01 10:30:00")
    typed = (folder / "logs" / "terminal.log").read_text()
    assert "--run-name baseline" in typed and "--run-name regressed" not in typed and "kill" not in typed
    said = Watch(folder, clock_now=lambda: pd.Timestamp("2026-12-01 10:30:00", tz="UTC")).look()
    assert [a.kind for a in said if a.kind in ("attempt_started", "failed_start")] == ["attempt_started"], \
        [a.text for a in said]


def test_a_tensorboard_run_grows_by_its_events_wall_times(tmp_path):
    """TensorBoard's event files are binary, with a wall time on every event: grown to 17:41:00,
    the first run's file holds its events up to then and the resumed run's (first event 17:41:55)
    is not there yet; the kit reads no TensorBoard point after that second (the moments are the
    files' own second-resolution clock: a line stamped 17:41:00 is in)."""
    src = INCIDENTS / "h200-1gpu-hf-oom-resume"
    folder = tmp_path / "live"
    grow(src, folder, "2026-12-02 17:41:00")
    files = sorted(p.relative_to(folder).parts[3] for p in folder.rglob("*.tfevents.*"))
    assert files == ["Dec02_17-40-39_vm"]
    whole = next(src.rglob("Dec02_17-40-39_vm/*.tfevents.*")).stat().st_size
    assert 0 < next(folder.rglob("*.tfevents.*")).stat().st_size < whole
    metrics = pm.load_incident(folder).metrics
    board = metrics[metrics["source"].str.contains("tfevents", na=False)]
    assert len(board) and board["time"].max() < pd.Timestamp("2026-12-02 17:41:01", tz="UTC")


def test_a_wandb_run_grows_record_by_record(tmp_path):
    """A `.wandb` log grows by its records' own times (a history row's `_timestamp`, a console
    line's, a stats sample's): grown to 05:21:33, the first run's log is a prefix of the whole
    one, cut where a record begins, the kit reads no point of it after that second, and the runs
    started later are not there yet."""
    src = INCIDENTS / "h200-2gpu"
    folder = tmp_path / "live"
    grow(src, folder, "2026-11-30 05:21:33")
    (grown,) = folder.rglob("*.wandb")
    whole = (src / grown.relative_to(folder)).read_bytes()
    assert grown.parent.name.endswith("3lsy4q7j") and whole.startswith(grown.read_bytes()) and grown.stat().st_size < len(whole)
    metrics = pm.load_incident(folder).metrics
    run = metrics[metrics["source"].str.endswith(".wandb", na=False)]
    assert len(run) and run["time"].max() < pd.Timestamp("2026-11-30 05:21:34", tz="UTC")


def test_a_folders_links_grow_as_links(tmp_path):
    """wandb's top-level `debug.log` and `latest-run` are links into the newest run: grown again
    they are links, not copies. A copy read as a log of its own, at 10:27:52 of the never-trains
    capture, gave the harness's python process a start of its own that then "never came up"."""
    src = INCIDENTS / "h200-1gpu-never-trains"
    folder = tmp_path / "live"
    grow(src, folder, "2026-12-01 10:27:52")
    top = folder / "wandb" / "wandb"
    assert (top / "debug.log").is_symlink() and (top / "latest-run").is_symlink()
    assert (top / "debug.log").resolve().parent.parent == (top / "latest-run").resolve()
    said = Watch(folder, clock_now=lambda: pd.Timestamp("2026-12-01 10:27:52", tz="UTC")).look()
    told = [(a.kind, a.job) for a in said if a.kind in ("attempt_started", "failed_start")]
    assert told == [("attempt_started", "big"), ("failed_start", "big"), ("attempt_started", "fixed")], told


def test_a_finding_of_no_named_run_is_told_for_its_attempts_job(tmp_path):
    """The seed's restart ran with no run name: its start is told for "job 3" (its attempt's job),
    and so are its failed start and its "not starting", not "?" or "nan"."""
    folder = tmp_path / "seed"
    grow(INCIDENTS / "seed-8gpu-reconstruction", folder, None)
    said = Watch(folder, clock_now=lambda: pd.Timestamp("2026-05-09 23:00", tz="UTC")).look()
    third = [(a.kind, a.job) for a in said if a.kind in ("attempt_started", "failed_start", "not_starting")
             and a.job not in ("baseline", "opt", "opt2")]
    assert sorted(third) == [("attempt_started", "job 3"), ("failed_start", "job 3"), ("not_starting", "job 3")], \
        [(a.kind, a.job) for a in said]


def test_rank_logs_written_beside_torchruns_output_are_watched_as_one_start(tmp_path):
    """h200-1gpu-rank-logs grown every 5 s of its clock, the watch looking at each moment: one
    start (the launch at 01:19:01.788), its first step (01:19:27, both ranks' files), its end at
    01:20:25 (rank 0's timeout); never a second start for the rank files that appear 14 s after the
    launch, whatever is read of them."""
    folder = tmp_path / "ranks"
    now = {"t": pd.Timestamp("2026-12-04 01:19:00", tz="UTC")}
    watch = Watch(folder, clock_now=lambda: now["t"])
    said = []
    while now["t"] <= pd.Timestamp("2026-12-04 01:20:35", tz="UTC"):
        grow(INCIDENTS / "h200-1gpu-rank-logs", folder, now["t"].strftime("%Y-%m-%d %H:%M:%S"))
        said += [(a.kind, a.time) for a in watch.look()]
        now["t"] += pd.Timedelta(seconds=5)
    assert said == [("attempt_started", pd.Timestamp("2026-12-04 01:19:01.788", tz="UTC")),
                    ("first_step", pd.Timestamp("2026-12-04 01:19:27", tz="UTC")),
                    ("ended", pd.Timestamp("2026-12-04 01:20:25", tz="UTC"))]


def test_a_relaunch_is_not_told_recovered_by_its_first_step_lines(tmp_path):
    """The thread-death capture's relaunch grown second by second: its first step line rates its
    warm-up (step 5, 122,494 tok/s, 1.88 of the stalled run's level; the README measures it near
    60-65K). Until five samples are in (02:36:16) no look tells how it came back; then it is told
    at its level from them, and each way it came back is told once for the run."""
    looks = _looks_while_growing(INCIDENTS / "h200-1gpu-thread-death", tmp_path / "live",
                                 "2026-12-02 02:36:11", "2026-12-02 02:36:26", "1s")
    told = [(t, a) for t, said in looks for a in said if a.kind in ("recovered", "partial_recovery")]
    assert told and min(t for t, _ in told) >= pd.Timestamp("2026-12-02 02:36:16", tz="UTC"), [a.text for _, a in told]
    levels = [float(re.search(r"to ([\d.]+)K tok/s", a.text).group(1)) for _, a in told]
    assert all(48 <= x <= 66 for x in levels), [a.text for _, a in told]
    kinds = [a.kind for _, a in told]
    assert len(kinds) == len(set(kinds)) and all(a.job == "lone-drafter-2" for _, a in told), [a.text for _, a in told]


def test_a_death_is_told_once_as_its_time_moves(tmp_path):
    """The HF out-of-memory capture grown every 3 s from 17:40:37: the Trainer's log has no times
    of its own, so the time of its traceback moves as the lines and events around it arrive (17:40:46, 17:41:12,
    then 17:41:13, where the README's driver saw the error); the one attempt's death was told at
    each (three "ended") and is now told once, as the post-mortem finds one."""
    src = INCIDENTS / "h200-1gpu-hf-oom-resume"
    looks = _looks_while_growing(src, tmp_path / "live", "2026-12-02 17:40:37", "2026-12-02 17:41:22", "3s", to_the_end=True)
    said = [a for _, told in looks for a in told]
    _, found = loaded(src.name)
    assert [n["run"] for k, n in zip(found["kind"], found["numbers"], strict=True) if k == "training_died"] == ["hf_train"]
    assert [a.job for a in said if a.kind == "ended"] == ["hf_train"], [a.text for a in said if a.kind == "ended"]


@pytest.mark.parametrize(("name", "start", "end", "pid"), [
    ("h200-1gpu-stall-crash", "2026-11-30 09:44:24", "2026-11-30 09:44:42", 467),
    ("h200-1gpu-thread-death", "2026-12-02 02:35:19", "2026-12-02 02:35:35", 1251),
])
def test_a_threads_traceback_is_no_death_while_the_listing_still_shows_its_process(tmp_path, name, start, end, pid):
    """A drafter thread raises (`Exception in thread drafter-0:` and its traceback) and the
    process lives on, its loop waiting on the dead thread: the post-mortem finds a stall, no
    death. Grown two seconds at a time, the watch told the traceback as the run's death at once
    (`died at 09:44:29`), before the next `ps` listing showed the process alive; now a thread's
    traceback waits for the listing, which shows the process after it, and the stall is told."""
    _, found = loaded(name)
    assert "training_died" not in set(found["kind"]) and "stall" in set(found["kind"])
    looks = _looks_while_growing(INCIDENTS / name, tmp_path / "live", start, end, "2s")
    said = [a for _, told in looks for a in told]
    assert [a.text for a in said if a.kind == "ended"] == []
    assert [a.kind for a in said if a.kind == "stall" and f"PID {pid} was alive" in a.text] == ["stall"]


def test_a_launchers_restart_its_agent_did_not_log_owns_the_steps_after_the_attempt_before_ended(tmp_path):
    """torchrun's agent at its default level logs each attempt's end (`failed (exitcode: 1) ...
    (pid: 611)`) and no restart: the third round's lines came after the second's end still
    numbered as the second's (the file tells the rounds apart only at the third's own failure).
    Grown a second at a time, the watch gave the third round's first step (04:36:50) to the
    second, which had ended at 04:36:38 without one, and told that round's death ("died at
    04:36:38"); the post-mortem finds two deaths, the first and the third rounds'. A start-up
    after its attempt's end is the launcher's restart, and the workers the listing shows
    starting then are its."""
    src = INCIDENTS / "h200-1gpu-torchrun-crashloop"
    _, found = loaded(src.name)
    died = sorted(f"{t:%H:%M:%S}" for k, t in zip(found["kind"], found["start"], strict=True) if k == "training_died")
    assert died == ["04:36:32", "04:36:57"]
    looks = _looks_while_growing(src, tmp_path / "live", "2026-12-02 04:36:44", "2026-12-02 04:36:58", "2s")
    told = sorted(re.search(r"died at (\S+):", a.text).group(1) for _, said in looks for a in said if a.kind == "ended")
    assert told == died


def _looks_while_growing(src: Path, folder: Path, start: str, end: str, every: str, to_the_end: bool = False) -> list:
    """(moment, what the watch told at it) of each look at `folder` while `src` is grown into it
    from `start` to `end` (UTC) a step of `every` at a time; then, with `to_the_end`, one look at
    the whole of it."""
    now = {"t": None}
    watch = Watch(folder, clock_now=lambda: now["t"])
    looks = []
    for t in pd.date_range(start, end, freq=every, tz="UTC"):
        grow(src, folder, f"{t:%Y-%m-%d %H:%M:%S}")
        now["t"] = t
        looks.append((t, watch.look()))
    if to_the_end:
        grow(src, folder, None)
        looks.append((None, watch.look()))
    return looks


def test_a_loss_that_stops_being_a_number_is_told_once_as_it_happens(tmp_path):
    """The oom-bashx relaunch grown a second at a time: its loss is nan from step 210 (02:34:52)
    to its stop; told once, at that line, and not before it is written."""
    looks = _looks_while_growing(INCIDENTS / "h200-1gpu-oom-bashx", tmp_path / "live",
                                 "2026-12-02 02:34:48", "2026-12-02 02:34:56", "1s")
    told = [(t, a) for t, said in looks for a in said if a.kind == "loss_not_finite"]
    assert [(f"{t:%H:%M:%S}", f"{a.time:%H:%M:%S}", a.job) for t, a in told] == [("02:34:52", "02:34:52", "big-drafter")]
    assert told[0][1].text == "loss of run big-drafter stopped being a number at step 210"
    assert told[0][1].evidence.startswith("logs/launch2.log:55")


def _trainer_log(path: Path, run: str, start: str, rates: list[int], stopped: bool) -> None:
    """A log in the replay trainer's form: a line a second from `start` at each rate."""
    t0 = pd.Timestamp(start)
    lines = [f"{t0 + pd.Timedelta(seconds=i):%Y-%m-%d %H:%M:%S} [{run}] step {i + 1} loss 6.0 tok/s {r} queue 0"
             for i, r in enumerate(rates)]
    if stopped:
        lines.append(f"{t0 + pd.Timedelta(seconds=len(rates)):%Y-%m-%d %H:%M:%S} [{run}] Training stopped")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def test_a_last_start_that_ended_with_few_samples_is_told_as_the_post_mortem_tells_it(tmp_path):
    """A run at 2,000 tok/s, its relaunch at 1,000, then one at 2,000 for three lines: while that
    start still runs, three lines are too few to say how it came back (warm-up may be in them);
    once its log says it stopped, they are all it left, and the watch tells the recovery the
    post-mortem finds in the same folder."""
    logs = tmp_path / "logs"
    _trainer_log(logs / "train.log", "base", "2026-12-05 10:00:00", [2000] * 20, stopped=True)
    _trainer_log(logs / "train2.log", "slow", "2026-12-05 10:00:30", [1000] * 20, stopped=True)
    _trainer_log(logs / "train3.log", "fixed", "2026-12-05 10:01:00", [2000] * 3, stopped=False)
    watch = Watch(tmp_path)
    said = watch.look()
    assert [a.job for a in said if a.kind == "throughput_fell"] == ["slow"]
    assert not [a for a in said if a.kind in ("recovered", "partial_recovery")]
    _trainer_log(logs / "train3.log", "fixed", "2026-12-05 10:01:00", [2000] * 3, stopped=True)
    said = watch.look()
    told = [(a.kind, a.job, a.time) for a in said if a.kind in ("recovered", "partial_recovery")]
    assert told == [("recovered", "fixed", pd.Timestamp("2026-12-05 10:01:00", tz="UTC"))]
    found = pm.detect(pm.load_incident(tmp_path))
    assert found[found["kind"] == "recovery"]["start"].tolist() == [told[0][2]]


def test_two_failed_restarts_in_a_row_are_told_each_though_the_first_seems_to_end_where_the_second_begins(tmp_path):
    """The replay-full capture's run `fixed` failed to start twice (07:08:05.886: its session
    killed; 07:08:11.234: its log's folder missing). Read live before the transcript held the
    kill (in fresh-clone test runs the replay's transcript lines came seconds late), the first
    start's end is where the second begins; the watch took the second for the first, as one
    stretch of time, and told one. Each start is told once, by its launch line."""
    src, folder = INCIDENTS / "h200-2gpu-replay-full", tmp_path / "live"
    now = {"t": pd.Timestamp("2026-11-30 07:08:12", tz="UTC")}
    watch = Watch(folder, clock_now=lambda: now["t"])
    grow(src, folder, "2026-11-30 07:08:12")
    transcript = folder / "logs" / "operator.log"
    lines = transcript.read_text().splitlines(keepends=True)
    kill = [i for i, line in enumerate(lines) if "$ kill -KILL -- -3489" in line]
    assert kill == [8]
    transcript.write_text("".join(lines[:8] + lines[10:]))  # the kill and what it printed, not yet written
    said = watch.look()
    ends = {f["start"].strftime("%H:%M:%S.%f")[:12]: f["end"] for _, f in watch.findings.iterrows() if f["kind"] == "failed_restart"}
    assert ends["07:08:05.886"] == pd.Timestamp("2026-11-30 07:08:11.234", tz="UTC")  # the touch
    told = [(f"{a.time:%H:%M:%S.%f}"[:12], a.job, a.evidence.split()[0]) for a in said if a.kind == "failed_start"]
    assert told == [("07:08:05.886", "fixed", "logs/operator.log:7"), ("07:08:11.234", "fixed", "logs/operator.log:16")]
    grow(src, folder, None)
    now["t"] = pd.Timestamp("2026-11-30 07:09:30", tz="UTC")
    assert [a for a in watch.look() if a.kind == "failed_start"] == []  # each told once, the kill read or not
