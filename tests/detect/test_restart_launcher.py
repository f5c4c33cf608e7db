"""Failed starts caught by `dflash-postmortem launch`: its own FAIL lines are the reason given.

The transcript is recorded here, for real: the CLI runs twice in a shell and what it printed is
written the way the operator's transcript in the bundled capture writes commands and output.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import dflash_postmortem as pm
from dflash_postmortem.detect import detect_failed_restarts
from dflash_postmortem.model import states

CRASH = ("import sys; print('Loading target model on cuda:0 ...', flush=True); "
         "raise RuntimeError('CUDA error: out of memory')")


def _record(folder: Path, commands: list[str], shell: str = "bash") -> Path:
    """Run each command in `shell`; write `[ISO time] $ command` then its output, like operator.log."""
    lines = []
    for cmd in commands:
        at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        done = subprocess.run([shell, "-c", cmd], capture_output=True, text=True, timeout=120, cwd=folder)
        lines += [f"[{at}] $ {cmd}", *(done.stdout + done.stderr).splitlines()]
    path = folder / "operator.log"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    folder = tmp_path_factory.mktemp("launcher")
    (folder / "logs").mkdir()
    cli = f"{sys.executable} -m dflash_postmortem.cli launch --settle 3 --timeout 20"
    _record(folder, [
        f"{cli} --log {folder}/workspace/train_opt2.log -- {sys.executable} -c 'print(1)'",
        f"{cli} --log {folder}/logs/train_crash.log -- {sys.executable} -c \"{CRASH}\"",
    ])
    inc = pm.load_incident(folder)
    return folder, inc, detect_failed_restarts(inc)


def test_both_launches_failed_with_the_launchers_reason(launched):
    folder, inc, found = launched
    fr = found[found["kind"] == "failed_restart"].sort_values("start")
    assert len(fr) == 2, found[["kind", "title"]]
    first, second = fr.iloc[0], fr.iloc[1]
    assert first["numbers"]["reason"] == "log folder missing"
    assert f"log folder {folder}/workspace does not exist; nothing was started" in first["detail"]
    assert second["numbers"]["reason"] == "died in start-up"
    assert "exited with status 1" in second["detail"]
    assert second["numbers"]["checks"]["process"] is True and second["numbers"]["pid"] > 0
    assert "RuntimeError: CUDA error: out of memory" in second["detail"]


def test_the_launchers_lines_are_cited(launched, line_at):
    folder, _, found = launched
    fr = found[found["kind"] == "failed_restart"].sort_values("start")
    first = [line_at(folder, ref) for ref in fr.iloc[0]["evidence"]]
    assert any(c.startswith("launch: start FAIL") for c in first)
    second = [line_at(folder, ref) for ref in fr.iloc[1]["evidence"]]
    assert any(c.startswith("launch: alive FAIL") and "exited with status 1" in c for c in second)
    assert any("RuntimeError: CUDA error: out of memory" in c for c in second)
    # and the same traceback in the trainer's own log, which carries no timestamp at all
    assert "logs/train_crash.log:2" in fr.iloc[1]["evidence"]
    assert line_at(folder, "logs/train_crash.log:2") == "Traceback (most recent call last):"


def test_an_untimed_log_is_dated_from_the_launch_that_wrote_it(launched):
    _, inc, found = launched
    launch = inc.events[(inc.events["kind"] == "launch") & inc.events["log_path"].str.endswith("train_crash.log")]
    tb = inc.events[inc.events["kind"] == "traceback"]
    assert len(tb) == 1 and tb["time"].iloc[0] == launch["time"].iloc[0]
    rep = next(f for f in inc.load_report.files if f.path == "logs/train_crash.log")
    assert any(a.startswith("dated afterwards: no line has a timestamp, so its 3 rows are placed at the launch "
                            "that wrote the file (operator.log:4,") for a in rep.assumptions)
    assert found[found["kind"] == "slow_start"].empty  # the launcher saw it exit: not slow


@pytest.fixture(scope="module")
def nohup_crash(tmp_path_factory):
    """The same crash started the usual way: nohup into a log, then the operator counts processes."""
    folder = tmp_path_factory.mktemp("nohup")
    (folder / "logs").mkdir()
    (folder / "crash_train.py").write_text(CRASH.replace("; ", "\n") + "\n")
    _record(folder, [
        f"nohup {sys.executable} {folder}/crash_train.py > {folder}/logs/train_opt2.log 2>&1 &",
        # the operator waits for the log to say something (seconds on a busy machine), then counts
        f"for i in $(seq 60); do grep -q Error {folder}/logs/train_opt2.log && break; sleep 0.5; done; "
        "sleep 1; ps aux | grep crash_train.py | grep -v grep | wc -l",
    ])
    inc = pm.load_incident(folder)
    return folder, inc, detect_failed_restarts(inc)


def test_a_log_that_ends_in_a_traceback_is_a_death_not_a_slow_start(nohup_crash, line_at):
    folder, inc, found = nohup_crash
    assert found[found["kind"] == "slow_start"].empty, found[["kind", "detail"]]
    fr = found[found["kind"] == "failed_restart"]
    assert len(fr) == 1
    r = fr.iloc[0]
    assert r["numbers"]["reason"] == "out of memory in start-up"  # the traceback's exception says so
    assert "RuntimeError: CUDA error: out of memory" in r["detail"]
    cited = [line_at(folder, ref) for ref in r["evidence"]]
    assert "Traceback (most recent call last):" in cited
    assert "0" in [c.strip() for c in cited]  # the operator's count after it


def test_the_checklist_shows_what_the_launcher_saw(launched):
    from dflash_postmortem.present import tables

    _, inc, found = launched
    table = tables.launch_checklist(inc, found)
    crash = table[table["command"].str.contains("train_crash.log")].iloc[0]
    assert crash["process started"].endswith("(launcher)") and "PID " in crash["process started"]
    assert crash["verdict"].endswith("never came up: died in start-up")
    missing = table[table["command"].str.contains("train_opt2.log")].iloc[0]
    assert missing["process started"] == "✗ none"
    assert missing["verdict"].endswith("never came up: log folder missing")


LOADING = ("import time; print('Loading target model on cuda:0 ...', flush=True); time.sleep(30)")


@pytest.fixture(scope="module")
def still_loading(tmp_path_factory):
    """A start still loading when the operator's session ends: nohup into a log, the log's first
    line seen, the process counted alive; then the evidence stops (the trainer is killed after
    the recording, so that nothing outlives the test)."""
    folder = tmp_path_factory.mktemp("loading")
    (folder / "logs").mkdir()
    (folder / "slow_train.py").write_text(LOADING.replace("; ", "\n") + "\n")
    try:
        _record(folder, [
            f"nohup {sys.executable} {folder}/slow_train.py > {folder}/logs/train.log 2>&1 &",
            f"for i in $(seq 60); do grep -q Loading {folder}/logs/train.log && break; sleep 0.5; done; "
            "ps aux | grep slow_train.py | grep -v grep | wc -l",
        ])
    finally:
        subprocess.run(["pkill", "-f", f"{folder}/slow_train.py"], check=False)
    inc = pm.load_incident(folder)
    return folder, inc, detect_failed_restarts(inc)


def test_a_start_still_loading_when_the_evidence_ends_is_slow_not_failed(still_loading):
    """The model keeps it `starting` (it showed life to the end); the detector says slow start,
    not failed: nothing shows that it gave up."""
    _, inc, found = still_loading
    assert found[found["kind"] == "failed_restart"].empty, found[["kind", "detail"]]
    slow = found[found["kind"] == "slow_start"]
    assert len(slow) == 1
    launch = inc.events[inc.events["kind"] == "launch"]["time"].iloc[0]
    assert slow.iloc[0]["start"] == launch
    assert "still starting when the evidence ends, with no sign that it failed" in slow.iloc[0]["detail"]
    st = states(inc)
    assert st["state"].tolist() == ["starting"]


def test_the_same_start_followed_by_another_gave_up(tmp_path, still_loading):
    """The same evidence with a relaunch after it: the first start was abandoned (never trained),
    so it is a failed start. The relaunch, typed as the evidence ends, has its log elsewhere and
    no listing or check after it: it was the slow start of this test until nothing could show
    that; now it cannot be judged, and the story says so."""
    folder, _, _ = still_loading
    log = (folder / "operator.log").read_text().splitlines()
    first_at = log[0][1:log[0].index("]")]
    relaunch = (datetime.fromisoformat(first_at.replace("Z", "+00:00")) + timedelta(seconds=20)).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")
    copy = tmp_path / "relaunched"
    copy.mkdir()
    (copy / "logs").mkdir()
    (copy / "logs" / "train.log").write_text((folder / "logs" / "train.log").read_text())
    (copy / "operator.log").write_text("\n".join(
        log + [f"[{relaunch}] $ nohup {sys.executable} {folder}/slow_train.py > {folder}/logs/train2.log 2>&1 &"]) + "\n")
    inc = pm.load_incident(copy)
    found = detect_failed_restarts(inc)
    st = states(inc)
    assert st.groupby("attempt")["state"].last().tolist() == ["never trained", "starting"]
    assert found["kind"].tolist() == ["failed_restart"]
    said = pm.what_happened(inc, found)
    assert said[-1].startswith(f"The start at {relaunch[11:19]} UTC cannot be judged: its log ({folder}/logs/train2.log) "
                               "is not in the incident, and no GPU sample or process listing covers its time"), said


EXITS = "import sys; print('Loading target model on cuda:0 ...', flush=True); sys.exit(3)"


@pytest.fixture(scope="module")
def exits_with_status(tmp_path_factory):
    """A start in the background that the shell waits for, its trainer exiting with status 3, the
    shell's `echo exit=$?` after it, and no traceback anywhere: only the status says how it ended."""
    folder = tmp_path_factory.mktemp("exits")
    (folder / "logs").mkdir()
    (folder / "exit_train.py").write_text(EXITS + "\n")
    _record(folder, [f"nohup {sys.executable} {folder}/exit_train.py > {folder}/logs/train.log 2>&1 & wait $!; echo exit=$?"])
    inc = pm.load_incident(folder)
    return folder, inc, detect_failed_restarts(inc)


def test_a_start_that_exits_with_a_status_is_told_from_its_end(exits_with_status, line_at):
    """The reason is the attempt model's end (its exit status), cited at the shell's line."""
    folder, inc, found = exits_with_status
    fr = found[found["kind"] == "failed_restart"]
    assert len(fr) == 1, found[["kind", "title"]]
    r = fr.iloc[0]
    assert r["numbers"]["reason"] == "exited"
    assert r["title"].endswith("never came up: exited with status 3 during start-up")
    assert "exited with status 3 during start-up (`exit=3`)" in r["detail"]  # the line that shows it
    assert line_at(folder, r["evidence"][0]) == "exit=3"
    assert states(inc)["state"].tolist() == ["starting", "never trained"]


@pytest.mark.parametrize("shell", ["bash", "dash", "zsh"])
@pytest.mark.parametrize(("target", "reason"), [("missing/train.log", "redirect target missing"),
                                                 ("/sys/train.log", "log not writable")])
def test_a_redirect_the_shell_could_not_open_ends_the_start_in_every_shell(tmp_path, line_at, shell, target, reason):
    """The same background launch typed in bash, dash and zsh, into a folder that is not there and
    into one no user may write (/sys): each shell says so in its own words (`bash: ...: No such
    file or directory`, `sh: 1: cannot create ...: Directory nonexistent`, `zsh:1: no such file or
    directory: ...`), and the model ends the start on that line."""
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} on this machine (make test installs it where apt-get is available)")
    log = target if target.startswith("/") else f"{tmp_path}/{target}"
    (tmp_path / "exit_train.py").write_text(EXITS + "\n")  # never runs: the redirect fails first
    _record(tmp_path, [f"nohup {sys.executable} {tmp_path}/exit_train.py > {log} 2>&1 &"], shell=shell)
    inc = pm.load_incident(tmp_path)
    found = detect_failed_restarts(inc)
    fr = found[found["kind"] == "failed_restart"]
    assert len(fr) == 1, found[["kind", "title"]]
    r = fr.iloc[0]
    assert r["numbers"]["reason"] == reason
    said = line_at(tmp_path, r["evidence"][1])  # after the launch line: the shell's own
    assert log in said and said.startswith(("bash:", "sh:", "dash:", "zsh:")), said
    assert states(inc)["state"].tolist() == ["starting", "never trained"]
