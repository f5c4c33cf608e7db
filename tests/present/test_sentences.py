"""Every sentence, on the real captures: the formatters, the notebooks' headlines (the same lines
tests/notebook_headlines.json holds), the verdicts and the report index's summary (the terminal's layout: test_terminal_view.py)."""

import json
import warnings

import pandas as pd
import pytest
from support.incidents import smi_stream_only
from support.stack_dumps import PY_SPY_DUMP

import dflash_postmortem as pm
from dflash_postmortem import units
from dflash_postmortem.analysis import replay_ab
from dflash_postmortem.detect import throughput
from dflash_postmortem.present import sentences as text

T = pd.Timestamp("2026-11-30 05:22:17.687", tz="UTC")


def test_one_formatter_each():
    assert units.clock(T) == "05:22:17"
    assert units.clock(T, date=True, utc=True) == "2026-11-30 05:22:17 UTC"
    assert units.clock(None) == "" and units.clock(pd.NaT, missing="?") == "?"
    # a time its source gives only roughly says how much later it may be; to the second says nothing more
    assert units.clock_within(T, 2.0) == "05:22:17 (up to 2 s later)"
    assert units.clock_within(T, 1.0) == units.clock_within(T, None) == units.clock_within(T, 0.0) == "05:22:17"
    # ps's START `05:22` (a whole minute, 60 s); 60 s between two listings from 05:22:17 is a range
    assert units.start_clock(T.floor("min"), 60.0) == "05:22 (to the minute)"
    assert units.start_clock(T, 60.0) == "05:22:17-05:23:17"
    # (between two listings ten seconds apart: a range, not the first of its seconds)
    assert units.start_clock(T, 10.0) == "05:22:17-05:22:27" and units.start_clock(T, 1.0) == "05:22:17"
    # ps's `Nov30` (a day), and a start between listings five minutes apart: neither a minute
    day, five = pd.Timestamp("2026-11-30", tz="UTC"), pd.Timestamp("2026-11-30 05:20:00", tz="UTC")
    assert units.start_clock(day, 86400.0) == "2026-11-30 (to the day)"
    assert units.start_clock(five, 300.0) == "05:20:00-05:25:00"
    assert (units.duration(91.0), units.duration(4785.6), units.duration(None)) == ("91 s", "4,786 s", "n/a")
    assert (units.tok_s(146812.5), units.tok_s(74918.0), units.tok_s(21500)) == ("146.8K", "74.9K", "21.5K")
    assert (units.gpu_hours(0.0253), units.gpu_hours(5.049), units.gpu_hours(1234.5)) == ("0.03", "5.05", "1,234.50")
    # tokens lost are rates times seconds: three digits, not eight
    assert [units.tokens(v) for v in (8966020.0, 48837975.0, 979389.0, 512.0, 2.5e9)] == ["8.97M", "48.8M", "979K", "512", "2.5B"]
    assert [units.count(n, w) for n, w in ((1, "line"), (3, "line"), (2, "process"), (1, "process"), (1200, "GPU sample"))] \
        == ["1 line", "3 lines", "2 processes", "1 process", "1,200 GPU samples"]
    # no number, no digits: a missing level or count reads n/a, never nanK
    for missing in (float("nan"), None, pd.NA):
        assert units.tok_s(missing) == units.gpu_hours(missing) == units.tokens(missing) == "n/a"
    assert units.share(64.0, 75.0) == "64 s (85%)" and units.share(64.0, float("nan")) == units.share(64.0, 0) == "64 s"
    assert text.one_line("a\n  b\tc", 10) == "a b c" and text.one_line("x" * 12, 10) == "x" * 9 + "…"
    assert text.gpu_label("node17", 5, True) == "node17:GPU 5" and text.gpu_label("node17", 5, False) == "GPU 5"


@pytest.fixture(scope="module")
def headlines(repo_dir) -> dict:
    """The reviewed lines every notebook's `# HEADLINE` cell prints on the bundled capture."""
    return {k: v.strip() for k, v in json.loads((repo_dir / "tests" / "notebook_headlines.json").read_text()).items()}


def test_headlines_say_what_was_reviewed(bundled_incident, bundled_findings, headlines):
    segments = throughput.segments(throughput.series(bundled_incident))
    assert text.headline_text(bundled_findings) == headlines["01_overview"]
    assert text.levels_text(segments) == headlines["02_throughput_drop"]
    assert text.restart_text(bundled_findings) == headlines["03_failed_restart"]
    assert text.recovery_text(bundled_findings) == headlines["04_recovery"]
    assert text.effects_text(replay_ab.replay_effects(bundled_incident)) == headlines["05_replay_ab"]


def test_headlines_without_evidence():
    nothing = pm.detect(pm.Incident())
    assert text.headline_text(nothing) == "no throughput regression found"
    assert text.levels_text(throughput.segments(throughput.series(pm.Incident()))) == (
        "no data from training logs or wandb runs (train/tok_per_s, or a step counter)")
    assert text.restart_text(nothing) == "failed restarts: 0; slow starts: 0; stale processes: 0"
    assert text.recovery_text(nothing) == "no throughput drop, nothing to recover from"
    assert text.effects_text(replay_ab.replay_effects(pm.Incident())).startswith("no data from replay runs")


def test_verdicts_cite_their_evidence_and_escape_it(bundled_findings):
    claims = text.verdicts(bundled_findings)
    headings = [h for h, _, _ in claims.items]
    assert headings == ["05:20:00 stale python process 579 predates the launch at 05:23:01",
                        # its title names its time: not said twice
                        "restart at 05:23:01 never came up: log path does not exist, process never started"]
    _, body, evidence = claims.items[1]
    assert "/workspace/train_opt2.log" in body and evidence[0] == "logs/operator.log:8"
    assert "<code>logs/operator.log:8</code>" in claims._repr_html_()
    # the commands the sentences quote are code in HTML, not text between backticks
    assert "`" in str(claims) and "`" not in claims._repr_html_()
    assert text.html_text("a `kill -- -789` &amp; `x`") == "a <code>kill -- -789</code> &amp; <code>x</code>"
    marked = text.Claims([("<b>x</b>", "a <script> line", ["log:1 <i>"])])._repr_html_()
    assert "<script>" not in marked and "&lt;script&gt;" in marked and "&lt;i&gt;" in marked
    assert text.Missing("no <data>")._repr_html_().endswith(">no &lt;data&gt;</p>")
    assert repr(text.verdicts(bundled_findings.iloc[:0])) == "no failed restart: every launch came up"


def test_what_happened_with_nothing_found():
    inc = pm.Incident()
    assert text.what_happened(inc, pm.detect(inc)) == [
        "No evidence to tell from: 0 files read, none with a row (no step, GPU sample, process or event)."]
    assert pm.what_happened is text.what_happened


def test_nothing_went_wrong_only_where_training_ran(tmp_path, bundled_dir, repo_dir):
    """GPU samples alone show no training: the page says what it saw, not that all went well."""
    inc = smi_stream_only(tmp_path, bundled_dir)
    assert text.what_happened(inc, pm.detect(inc)) == [
        f"No training seen in 1 file: no training step between 05:20:20 UTC and 05:25:09 UTC "
        f"({len(inc.gpus):,} GPU samples), so nothing can be said of how it went."]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ran = pm.load_incident(repo_dir / "data" / "incidents" / "h200-1gpu-alternating")  # a healthy run
    assert text.what_happened(ran, pm.detect(ran)) == [
        "Nothing went wrong that the evidence shows between 02:48:12 UTC and 02:48:54 UTC: "
        "no throughput regression, stall, failed restart or start that never trained."]


def test_the_sources_line_says_what_the_evidence_was(bundled_incident):
    assert text.sources_line(bundled_incident) == "39 source files loaded, 0 could not be read, 2 not recognised"


def test_a_finding_whose_title_names_its_time_is_not_dated_twice():
    from dflash_postmortem.detect import findings as f

    at = pd.Timestamp("2026-12-04 05:09:57", tz="UTC")
    slow = f.frame([f.finding("slow_start", at, at, "info", ["logs/operator.log:1"],
                              {"checks": {}, "run": "plain", "pid": None, "checks_seen": ["no step line yet"],
                               "first_step_after_s": None})])
    assert text.what_happened(pm.Incident(), slow) == ["Slow start after launch at 05:09:57."]
    # nothing dates it (a listing's ages with no anchor): said once, not "at  at ?"
    undated = f.frame([f.finding("slow_start", None, None, "info", ["pods.txt:3"],
                                 {"checks": {}, "run": "plain", "pid": None, "checks_seen": ["no step line yet"],
                                  "first_step_after_s": None})])
    assert text.what_happened(pm.Incident(), undated) == ["Slow start after launch at an unknown time."]


@pytest.mark.parametrize("sample, shows", [
    # nvidia-smi could not reach a GPU
    ("smi-error/device-handle-gpu-lost-windows-wrapped.txt", "What it shows going wrong: Unable to determine the device "
     "handle for GPU"),
    # a scheduler's accounting: the job's batch step failed (its table row, not its columns)
    ("slurm/sacct-format-indented-failed-nesi.txt", "What it shows going wrong: job 37171050 step batch FAILED "
     "(sacct-format-indented-failed-nesi.txt:4), and 1 more such line."),
    # `echo $?` after a command a signal ended: the status alone, read as what it means
    ("terminal/dumb-init-echo-status-143-after-sigterm.txt", "What it shows going wrong: exit status 143 (SIGTERM) "
     "(dumb-init-echo-status-143-after-sigterm.txt:4)."),
    # a CUDA error that ended NCCL's watchdog thread (an error line, most of which say nothing)
    ("train-log/cuda-illegal-access-watchdog-pg-guid-rank2-frames-cut.log", "What it shows going wrong: [PG ID 0 PG "
     "GUID 0(default_pg) Rank 2] Process group watchdog thread terminated with exception: CUDA error: an illegal "
     "memory access was encountered (cuda-illegal-access-watchdog-pg-guid-rank2-frames-cut.log:9)."),
    # a cgroup's OOM killer choosing a process, the line that would name the kill cut off
    ("kernel/dmesg-cgroup-v1-task-in-limit-wrapped-kill-62685-cut.txt", "What it shows going wrong: Memory cgroup out "
     "of memory: Kill process 62685 (bash) score 0 or sacrifice child (dmesg-cgroup-v1-task-in-limit-wrapped-kill-62685-cut.txt:12)"),
    # a session's nvidia-smi error, then `dmesg -T | grep NVRM`: each command's answer read by its
    # reader (the session was read as nvidia-smi's error alone, its dated Xid lines skipped)
    ("terminal/akash-provider-node-gpu-xid79-fallen-off-bus-nvidia-smi-unknown-error.txt",
     "no training step between 21:29:39 UTC and 21:29:39 UTC (6 events). What it shows going wrong: NVRM: GPU "
     "0000:a1:00.0: GPU has fallen off the bus (akash-provider-node-gpu-xid79-fallen-off-bus-nvidia-smi-unknown-error.txt:8)"),
    # the kernel's Xid for a GPU fallen off the bus
    ("terminal/dmesg-nvrm-gpu-fallen-off-bus-no-xid.txt", "What it shows going wrong: NVRM: The NVIDIA GPU 0000:b3:00.0 "
     "(PCI ID: 10de:26b5) installed in this system has fallen off the bus"),
])
def test_no_training_but_what_went_wrong(tmp_path, repo_dir, sample, shows):
    """Where no training is seen, what the evidence shows going wrong is told, not "nothing can
    be said" (these public samples read so before)."""
    import shutil

    src = repo_dir / "tests" / "fixtures" / "real-world" / sample
    shutil.copy(src, tmp_path / src.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    said = text.what_happened(inc, pm.detect(inc))
    assert len(said) == 1 and said[0].startswith("No training seen in 1 file: ") and shows in said[0], said


def test_a_rank_failure_line_a_terminal_wrapped_is_told_as_the_death(tmp_path, repo_dir):
    """torchrun's `failed (exitcode: -6) local_rank: 6 (pid` wrapped at 140 columns before the
    PID: the line is the death of local rank 6 by SIGABRT (it was text, and the story said nothing
    could be said of how it went)."""
    import shutil

    shutil.copy(repo_dir / "tests" / "fixtures" / "real-world" / "torchrun" /
                "accelerate-elastic-glog-wrapped-140-exitcode-6-local-rank-6-openr1.log", tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    found = pm.detect(inc)
    assert list(found["kind"]) == ["process_died"]
    assert text.what_happened(inc, found)[0].startswith("A process died: failed (exitcode: -6) local_rank: 6 (SIGABRT).")


def test_a_failed_start_reported_by_a_failure_table_is_told_by_what_the_table_says(tmp_path, repo_dir):
    """torchelastic's ChildFailedError table (torch 1.10, PR 64681's example: `[0]:`, then `time`,
    `rank`, `exitcode: 1 (pid: 8045)`, `error_file`, `msg`) ended the start: the story quoted the
    whole table, raw, in its sentence; it is told by the entry's exit code."""
    import shutil

    shutil.copy(repo_dir / "tests" / "fixtures" / "real-world" / "torchrun" / "childfailed-msg-json-torch110-pr64681.log",
                tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    assert text.what_happened(inc, pm.detect(inc)) == [
        "The start at 17:12:07 UTC never came up: exited with status 1 during start-up (`exitcode 1 (pid: 8045)`)."]


def test_a_completed_job_is_nothing_gone_wrong(tmp_path, repo_dir):
    import shutil

    shutil.copy(repo_dir / "tests" / "fixtures" / "real-world" / "slurm" / "sacct-right-aligned-jobid-truncated-steps-nesi.txt",
                tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = pm.load_incident(tmp_path)
    assert text.what_happened(ok, pm.detect(ok))[0].endswith("so nothing can be said of how it went.")


def test_training_nothing_dates_is_seen_not_denied(tmp_path, repo_dir):
    """detectron2's `[06/13 15:47:34 d2.utils.events]` has no year and nothing else dates it: its
    steps are training the story must not deny (it said "No training seen ... 150 metric values");
    with the incident's date they are placed, and the same log tells its run."""
    import shutil

    shutil.copy(repo_dir / "tests" / "fixtures" / "real-world" / "train-log" / "detectron2-balloon-maskrcnn-plain.log", tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    said = text.what_happened(inc, pm.detect(inc))
    assert said == ["Training seen in 1 file (150 metric values, 1 event, steps 19 to 299) but not placed in time: "
                    "nothing in the evidence dates its lines, so its pace and its stops cannot be judged (where they "
                    "give a time of day, or a month and day, `date = \"YYYY-MM-DD\"` in incident.toml places them)."]
    (tmp_path / "incident.toml").write_text('date = "2020-06-13"\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dated = pm.load_incident(tmp_path)
    assert dated.metrics["time"].notna().all()
    assert text.what_happened(dated, pm.detect(dated))[0].startswith("Nothing went wrong that the evidence shows between ")


def test_a_cut_inside_a_quoted_error_closes_the_quote():
    """The index cuts a cause at 160 characters; a cut inside `...` left a raw backtick on the
    page (h200-1gpu-hangup's corrupt-checkpoint traceback)."""
    from dflash_postmortem.present.sentences import CELL_CHARS, one_line

    why = ("wrote a traceback ending `RuntimeError: PytorchStreamReader failed reading zip archive: failed finding "
           "central directory. This is an internal miniz error. If you are seeing this error, there is a high`")
    cut = one_line(why, CELL_CHARS)
    assert len(cut) == CELL_CHARS and cut.endswith("…`") and cut.count("`") == 2
    assert one_line("a b c d e f g h i j", 6) == "a b c…"


def test_the_story_is_in_the_order_it_happened_unless_that_would_cut_the_first_sign():
    """h100-1gpu-debug-env (README): the run died at 19:42:45 and its resume, typed after
    `export CUDA_LAUNCH_BLOCKING=1`, trained at less than half the pace from 19:43:11: the death is
    told first. Had three more deaths come before it (a crash loop's), the drop would be the
    sixth sentence of five: then it leads."""
    from support.bundled import loaded

    inc, found = loaded("h100-1gpu-debug-env")
    story = text.what_happened(inc, found)
    assert story[0].startswith("At 19:42:45 UTC run drafter-7b died") and story[1].startswith("At 19:43:11 UTC throughput fell")
    died = found[found["kind"] == "training_died"].iloc[0]
    earlier = [died.copy() for _ in range(3)]
    for k, row in enumerate(earlier, 1):
        row["start"] = row["end"] = died["start"] - pd.Timedelta(minutes=k)
    crowded = pd.concat([pd.DataFrame(earlier), found]).reset_index(drop=True)
    story = text.what_happened(inc, crowded)
    assert len(story) == text.MAX_SENTENCES and story[0].startswith("At 19:43:11 UTC throughput fell")
    assert [s[:11] for s in story[1:5]] == ["At 19:39:45", "At 19:40:45", "At 19:41:45", "At 19:42:45"]


def _told(tmp_path, repo_dir, sample: str) -> tuple[pm.Incident, pd.DataFrame, list[str]]:
    """A corpus sample alone in a folder, loaded, detected and told."""
    import shutil

    src = repo_dir / "tests" / "fixtures" / "real-world" / sample
    (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / src.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    found = pm.detect(inc)
    return inc, found, text.what_happened(inc, found)


def test_a_wandb_run_that_left_no_exit_record_is_named(tmp_path, repo_dir):
    """wandb writes an exit record on every end its process lives to see. sdk031-sigkill-torn-run
    (SOURCES.tsv) was SIGKILLed 11 s into training, PID 8080 (its debug.log): the story said
    nothing went wrong and nothing of the run's end; a finished run's folder says no such thing."""
    _, found, said = _told(tmp_path / "killed", repo_dir, "wandb/sdk031-sigkill-torn-run")
    assert found.empty and said == [
        "Training seen between 10:25:14 UTC and 10:25:21 UTC (297 dated step lines), too little of it to judge its pace "
        "or its stops: nothing in it went wrong that the evidence shows; run killed-flushed (PID 8080) left no last word: its "
        "record stops at 10:25:21 UTC after step 296 with no exit record, as a run killed, crashed hard or still "
        "running when the files were copied leaves it."]
    _, _, finished = _told(tmp_path / "finished", repo_dir, "wandb/sdk031-finished-run")
    assert "no last word" not in finished[0]


@pytest.mark.parametrize("sample, first", [
    # torch's later wording (`for binary located at ... with local_rank: 0 (process ID: 71)`, `the
    # closing signal`): rank 0 SIGKILLed; the agent stopped the others at 19:24:35, reported at 19:24:42
    ("torchrun/pod-prefixed-elastic-exitcode-9-local-rank-0-after-2h51m-step-2465-memoryvla.log",
     "At 19:24:35 UTC a process died: failed (exitcode: -9) for binary located at "
     "/mnt/data/miniconda3/envs/memvla/bin/python3.10 with local_rank: 0 (process ID: 71) (SIGKILL). The launcher "
     "then stopped PIDs 73, 74, 75, 76, 78."),
    # torchrun's older wording: `Sending process 60552 closing signal SIGTERM` at 14:04:27, the
    # failure's line at 14:04:28
    ("torchrun/launch-exitcode-1-local-rank-2-mid-epoch-sigterm-x3-repvit.log",
     "At 14:04:27 UTC a process died: failed (exitcode: 1) local_rank: 2 (pid: 60554) of binary: /opt/conda/bin/python. "
     "The launcher then stopped PIDs 60552, 60553, 60555."),
])
def test_a_death_a_launcher_reports_is_dated_by_its_first_reaction(tmp_path, repo_dir, sample, first):
    """A launcher stops a failed worker's peers, waits for them, then logs the failure: the
    worker was dead by the first of those stops, not only at the report (the story dated it by
    the report; the later torch wording was not read at all: "Nothing went wrong")."""
    _, found, said = _told(tmp_path, repo_dir, sample)
    assert list(found["kind"]) == ["process_died"] and said[0].startswith(first), said


def test_a_launcher_stopped_by_a_hangup_is_told_so_not_as_a_death(tmp_path, repo_dir):
    """ms-swift's torchrun got SIGHUP (`Received 1 death signal`) 6 h 32 min into its training (its
    bar: `482/672 [6:32:43<...`) and stopped its worker, PID 3681211: nothing of the job failed,
    its session hung up (the story said "A process died", and its finding that the log held no
    training step beside the summary that it held three)."""
    _, found, said = _told(tmp_path, repo_dir, "torchrun/swift-sft-eval-dict-tqdm-glued-glog-sighup-6h32m.log")
    assert said[0] == ("The launcher was stopped by SIGHUP, the signal of a terminal or session that hung up: "
                       "`Received 1 death signal, shutting down workers (SIGHUP)`, and stopped PID 3681211. "
                       "swift-sft-eval-dict-tqdm-glued-glog-sighup-6h32m.log holds 3 step lines, up to step 482 (its "
                       "progress bar had run 6:32:43), but no launch of its run and no time to place them.")
    assert found["title"].iloc[0] == ("the launcher was stopped by SIGHUP: Received 1 death signal, shutting down "
                                      "workers (SIGHUP)")
    assert "no launch of its run (its 3 step lines, up to step 482, placed at no start)" in found["detail"].iloc[0]


def test_a_traceback_after_the_last_step_line_is_the_crash_even_cut_off(tmp_path, repo_dir):
    """Pix2Seq's DETR-style log, pasted from step 1280 to 1330 and then the traceback of the CUDA
    OOM in `losses.backward()`, cut before its exception line: nothing dates the lines, and the
    story said nothing of the crash."""
    _, _, said = _told(tmp_path, repo_dir, "train-log/detr-metriclogger-max-mem-29528-then-traceback-in-backward-cut-pix2seq.log")
    assert said[0].endswith("What it shows going wrong: a traceback cut off before its exception, last in "
                            "`losses.backward()` (detr-metriclogger-max-mem-29528-then-traceback-in-backward-cut-pix2seq.log:7).")


def test_a_nan_between_fields_is_a_value_not_part_of_the_next_key(tmp_path, repo_dir):
    """NLUT's `loss_mse: nan losses: nan` (one blank between fields): the `nan` was read as the
    first word of a key `nan losses`, so the lines where every loss turned NaN at iteration 4500
    gave no row and the story said nothing of it."""
    inc, found, said = _told(tmp_path, repo_dir, "train-log/iter-time-per-iter-losses-turn-nan-at-4500-nlut.log")
    assert list(found["kind"]) == ["loss_not_finite"]
    assert said[0].startswith("The loss of run iter-time-per-iter-losses-turn-nan-at-4500-nlut stopped being a number at "
                              "step 4500 (it was 3.463 at step 4400) and stayed so to the end of the log (2 more lines)")


def test_a_sweep_agents_output_is_its_runs_log_and_a_config_dict_no_metric(tmp_path, repo_dir):
    """An srun session where `wandb agent` starts its sweep's run at 11:25:37 (`About to run
    command`) and Slurm cancels the step at its time limit at 11:42:17, printed on the agent's
    terminal: the agent's output was not read (only its command), and a config printed as a dict
    with `'loss': 'mse'` was read as a Trainer's metrics."""
    inc, found, said = _told(tmp_path, repo_dir, "terminal/srun-interactive-wandb-agent-lightning-step-time-limit-delta.txt")
    assert inc.metrics.empty
    assert said == ["The start at 11:25:37 UTC never came up: killed during start-up (`slurmstepd: error: *** STEP "
                    "3479819.0 ON gpub001 CANCELLED AT 2024-04-24T11:42:17 DUE TO TIME LIMIT ***`)."]


def test_a_checkpoint_past_the_last_step_line_is_progress_and_a_keyed_cut_traceback_an_interrupt(tmp_path, repo_dir):
    """mmsegmentation #66: `Iter [1950/20000] ... time: 2.096` at 15:19:04 (its lines every 50
    iterations), `Saving checkpoint at 2000 iterations` at 15:20:50, an evaluation bar, then
    `^CTraceback` cut off: the user's Ctrl-C, no crash. The story said training stalled for
    106 s, one interval of 50 steps at 2.1 s (a step counter's pace row stood at its interval's
    beginning, its closing line's time lost, and the save named no step)."""
    from dflash_postmortem.model.step_lines import named_step

    assert named_step("Saving checkpoint at 2000 iterations") == 2000 and named_step("at step 120") == 120
    assert named_step("took 3.5 steps") is None
    assert named_step("Saving model checkpoint to out/run1/checkpoint-200") == 200  # (Hugging Face's folder)
    _, found, said = _told(tmp_path, repo_dir, "train-log/mmseg-iter-then-checkpoint-then-eval-bar-4545s-then-ctrl-c-traceback.log")
    assert found.empty and said[0].endswith(
        "was stopped by an interrupt at 15:20:50 UTC (a traceback after Ctrl-C's `^C`, cut off).")


def test_a_run_stuck_in_its_checkpoint_save_until_ctrl_c_is_told_as_a_stall_at_the_save(tmp_path, repo_dir):
    """accelerate #2724: a DeepSpeed launcher's HF run logged steps 1-4 in its own form (`Epoch:
    [0],Step [4/5],Elapsed Time: 00:01:02,...,Speed: 15.53 steps/sec`, 14:56:06), began saving a
    checkpoint at 14:56:22 (`tmp-checkpoint-5`: step 5 reached, the stall's start), fell silent, and 10 minutes later the user pressed Ctrl-C: `^C[2024-05-26
    15:06:40,046] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 22523`. The story said
    only that the launcher stopped PID 22523 (its steps and its save were not read: the save
    behind Hugging Face's `>>`); then that it "never reached training"; it is the stall, at the
    save that never finished. The terminal's echo of the key is still read as the kill's."""
    inc, found, said = _told(tmp_path, repo_dir,
                             "terminal/deepspeed-launcher-hf-trainer-steps-save-checkpoint-silent-10min-ctrl-c-sigkill-handler.log")
    assert inc.events.loc[inc.events["pattern"] == "deepspeed_killing_subprocess", "keyed"].tolist() == [True]
    assert sorted(inc.metrics["step"].dropna().astype(int).unique()) == [1, 2, 3, 4]
    assert said[0].startswith("At 14:56:22 UTC training stalled: no step for 617 s while its process was alive: "
                              "a checkpoint save begun at 14:56:22 never finished (`Saving model checkpoint to ")


def test_a_sigkill_no_line_explains_says_who_may_have_sent_it(tmp_path, repo_dir):
    """SIGKILL comes from outside the process: where no line of the log names the sender (a
    launcher's `exitcode: -9`), the story says who may have; where the OOM killer's own line is
    there, the story names it and says nothing more."""
    (tmp_path / "agent").mkdir()
    (tmp_path / "oom").mkdir()
    _, _, said = _told(tmp_path / "agent", repo_dir,
                       "torchrun/pod-prefixed-elastic-exitcode-9-local-rank-0-after-2h51m-step-2465-memoryvla.log")
    assert ("(SIGKILL). The launcher then stopped PIDs 73, 74, 75, 76, 78. Nothing here says who sent SIGKILL: "
            "a `kill -9`, the kernel's OOM killer (the host's kernel log names its victims) or a scheduler past "
            "its grace time.") in said[0]
    _, _, oom = _told(tmp_path / "oom", repo_dir, "terminal/dmesg-T-fence-glued-oom-table-commas.txt")
    assert "killed by the OOM killer" in oom[0] and "who sent" not in oom[0]


def test_gpus_that_hold_a_loaded_programs_memory_at_no_work_are_told_where_no_training_is_seen(tmp_path, repo_dir):
    """A lone nvidia-smi answer of a card holding much of its memory at 0 % utilization (IMS-Toucan
    #93's hang: 8,814 of 24,576 MiB) shows a program that loaded and does nothing; a desktop's
    display server holding 1,583 MiB of 24,564 is no such sign."""
    (tmp_path / "hang").mkdir()
    (tmp_path / "desk").mkdir()
    _, _, said = _told(tmp_path / "hang", repo_dir, "smi-table/rtx-24gb-520.61.05-inline-backticks-hang-cut.txt")
    assert said[0].endswith(
        "(1 GPU sample). What its GPUs show: GPU 0 held 8,814 MiB at 0 % utilization in its one sample: memory taken "
        "and no work done, as by a program that loaded its model and waits or hangs, one that outlived its run, or one "
        "this view does not list (another container's or user's: a PID namespace hides them).")
    _, _, desk = _told(tmp_path / "desk", repo_dir, "smi-table/rtx4090x2-580.126.09-procs.txt")
    assert "What its GPUs show" not in desk[0] and desk[0].endswith("so nothing can be said of how it went.")


def test_sruns_abort_is_its_reaction_not_the_cause(tmp_path, repo_dir):
    """srun's `Job step aborted: Waiting up to 32 seconds for job step to finish` is its reaction
    to the cancellation slurmstepd reports (here glued after a bar, DUE TO PREEMPTION): the story
    names a line nearer the cause, the agent's SIGTERM, not srun's wait."""
    _, _, said = _told(tmp_path, repo_dir,
                       "slurm/hf-tqdm-723-of-1602-glued-slurmstepd-preemption-torchrun-sigterm-logging-error.log")
    assert "Job step aborted" not in said[0]
    assert "died while training: torch.distributed.elastic.multiprocessing.api.SignalException: Process 3045566 got signal: 15." in said[0]


def test_an_untimed_log_that_ends_on_its_own_stop_line_says_so(tmp_path, repo_dir):
    """A log nothing dates still says how it ended where its last word is the training's own stop
    (ms-swift's Trainer summary, `global_step 93`); one an interrupt stopped first says no such
    thing (Transformer-XL's `Exiting from training early`, then its `End of training`)."""
    (tmp_path / "swift").mkdir()
    (tmp_path / "txl").mkdir()
    _, _, said = _told(tmp_path / "swift", repo_dir, "train-log/ms-swift-v2-lora-sft-qwen2-7b.log")
    assert " It stopped by itself: `{'train_runtime': 443.3746, " in said[0] and "ms-swift-v2-lora-sft-qwen2-7b.log:" in said[0]
    _, _, txl = _told(tmp_path / "txl", repo_dir, "train-log/transformer-xl-exiting-from-training-early-wt103.log")
    assert "stopped by itself" not in txl[0]


@pytest.mark.parametrize("sample, said", [
    # rank 1's ALLREDUCE #395 after 23,054 steps: the hang began 600 s before the report
    ("torchrun/deepspeed-bert-bar-99pct-23054-of-23316-then-rank1-allreduce-watchdog-600s.log",
     "The collective had waited 600 s: the hang began that long before this line."),
    ("train-log/nccl-watchdog-old-format-ofa-8xv100.log", "The collective had waited 1,802 s: the hang began that long before this line."),
    # a placed death: ranks 1-3 waited in ALLREDUCE #1132079 after epoch 3 began, so it trained
    ("train-log/python-logging-epoch3-start-then-nccl-watchdog-1800s-ranks-1-3-no-rank0-old-format-ace.log",
     "died while training on rank 3: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1132079, "
     "OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) ran for 1800035 milliseconds before timing out. "
     "The collective had waited 1,800 s; this line has no time of its own (it took 15:51:09 UTC from the line before it), "
     "so if the collective began after that line, the watchdog fired at 16:21:09 UTC or later."),
    # the default group's first collective: the ranks never met (instructlab's 1 ms timeout: 90 ms)
    ("torchrun/nccl-watchdog-thread-terminated-pg-guid-instructlab.log",
     "The collective had waited 90 ms and was its group's first: the ranks never met once, so training never began."),
])
def test_a_watchdogs_report_tells_how_long_the_collective_had_waited(tmp_path, repo_dir, sample, said):
    """`ran for 600083 milliseconds`: the collective hung that long before the watchdog's line;
    `SeqNum=1` of the default group: its first, so the ranks never met."""
    _, _, told = _told(tmp_path, repo_dir, sample)
    assert said in told[0]


def test_processes_a_listing_shows_stuck_are_told_where_no_training_is_seen(tmp_path, repo_dir):
    """benfred/py-spy #390: after `py-spy record`, ps lists the target in `Tsl` (stopped until
    SIGCONT); NVIDIA/nvidia-docker #377: nvidia-smi, nvidia-persistenced and the plugin all in `D`
    since boot (blocked in the driver, per the maintainer). What the state letter means is said."""
    (tmp_path / "t").mkdir()
    (tmp_path / "d").mkdir()
    _, _, stopped = _told(tmp_path / "t", repo_dir, "terminal/py-spy-record-leaves-target-process-stopped-tsl.txt")
    assert stopped[0].endswith("What its processes show: PID 20463 (python) was stopped (`T`: alive, doing nothing "
                               "until it gets SIGCONT: Ctrl-Z, a debugger or profiler that left it).")
    _, _, blocked = _told(tmp_path / "d", repo_dir,
                          "ps/nvidia-docker-ps-aux-nvidia-smi-persistenced-d-state-after-vm-shutdown.txt")
    assert "PIDs 935 (nvidia-smi), 953 (nvidia-persistenced) and 1368 (nvidia-docker-plugin) were in uninterruptible " \
           "sleep (`D`: waiting inside the kernel" in blocked[0]


def test_a_completed_pod_is_not_what_went_wrong(tmp_path, repo_dir):
    """sql-machine-learning/elasticdl #1619: job 1's ps and worker pods `Completed`, job 2's `Error`
    (GPU out of memory): what went wrong is job 2's, never a pod that completed."""
    _, _, said = _told(tmp_path, repo_dir, "k8s/elasticdl-second-gpu-job-ps-worker-error-master-running.txt")
    assert "What it shows going wrong: pod test-train-2-ps-0: Error, 0 restarts" in said[0] and "Completed" not in said[0]


def test_too_few_dated_steps_are_no_all_clear(tmp_path, repo_dir):
    """pytorch/torchtitan #1301: one step line (23:40:42), then a checkpoint save: "nothing went
    wrong between 23:40:42 and 23:40:42" was an all-clear over no time at all."""
    _, _, said = _told(tmp_path, repo_dir, "train-log/torchtitan-sync-checkpoint-save-394s-gap-after-step-1.log")
    assert said[0] == ("Training seen at 23:40:42 UTC (1 dated step line), too little of it to judge its pace or its "
                       "stops: nothing in it went wrong that the evidence shows.")


def test_an_interrupt_is_told_with_where_it_found_the_run_waiting(tmp_path, repo_dir):
    """Detectron.pytorch #140: two days at step 553061, then the user's Ctrl-C; the traceback that
    ends in `KeyboardInterrupt:` was in the data loader's `_shutdown_workers`, putting on its queue
    (the user's own loop's frame, `next(dataiterator)`, is in a second traceback cut by the paste)."""
    _, found, said = _told(tmp_path, repo_dir, "train-log/detectron-pytorch-step-553061-hang-dataloader-deadlock-ctrl-c.log")
    assert found.empty and said[0].endswith(
        "What it shows: an interrupt (Ctrl-C, SIGINT) reached it while it was waiting in its data loader "
        "(`self.worker_result_queue.put(None)`, torch/utils/data/dataloader.py:340): `KeyboardInterrupt:` "
        "(detectron-pytorch-step-553061-hang-dataloader-deadlock-ctrl-c.log:5).")


def test_a_live_stack_dump_says_where_a_process_that_trained_nothing_waited(tmp_path):
    """DeepSpeedExamples #302: a run that never began training, its py-spy dump's main thread in
    torch's file baton (the lock a killed JIT build left): alive and waiting, no crash."""
    (tmp_path / "spy.txt").write_text(PY_SPY_DUMP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    said = text.what_happened(inc, pm.detect(inc))
    assert said[0].endswith("What its stack shows: PID 46930 (`/usr/bin/python -u main.py --local_rank=0`) was waiting "
                            "on a lock (`wait`, torch/utils/file_baton.py:42) in its main thread when its stacks were "
                            "dumped (spy.txt:1): it was alive, not crashed.")


def test_a_trainer_that_said_training_began_and_logged_no_step_is_told_so(tmp_path):
    """huggingface/transformers #21556: the Trainer's banner at 19:14:47 (`***** Running training
    *****`, 12884 optimization steps), then nothing: the run hung in its evaluation's data. The
    story said only that nothing was seen; the banner is the trainer's word that training began."""
    (tmp_path / "train.log").write_text(
        "[INFO|trainer.py:1683] 2023-02-10 19:14:47,595 >> ***** Running training *****\n"
        "[INFO|trainer.py:1684] 2023-02-10 19:14:47,595 >>   Num examples = 6441\n"
        "[INFO|trainer.py:1689] 2023-02-10 19:14:47,595 >>   Total optimization steps = 12884\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    said = text.what_happened(inc, pm.detect(inc))
    assert said == ["No training seen in 1 file: no training step after the trainer said training began at 19:14:47 UTC "
                    "(`***** Running training *****`, train.log:1) (1 event): no line shows a first step (a start that "
                    "hung or stopped before it, or a log cut there)."]


def test_a_traceback_glued_after_a_bar_is_how_the_log_ended(tmp_path, repo_dir):
    """SRGAN #59: `0/522 [00:00<?, ?it/s]Traceback ...` on one line, the next epoch's bar and the
    traceback of its DataLoader's failed start after it: the traceback follows the last step
    line (it shares its line), so it is what went wrong (the story said nothing of it)."""
    import shutil

    shutil.copy(repo_dir / "tests" / "fixtures" / "real-world" / "train-log" /
                "srgan-tqdm-epoch-1-done-then-dataloader-worker-spawn-crash.log", tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    said = text.what_happened(inc, pm.detect(inc))
    assert said[0].endswith("What it shows going wrong: a traceback cut off before its exception, last in "
                            "`return _default_context.get_context().Process._Popen(process_obj)` "
                            "(srgan-tqdm-epoch-1-done-then-dataloader-worker-spawn-crash.log:4).")


def test_a_watchdog_line_that_borrowed_its_time_says_the_wait_came_after_it(tmp_path, repo_dir):
    """Megatron-LM #1141: `[iteration] datetime: 2024-09-13 07:04:42`, then the ranks' undated
    watchdog lines (`ran for 607565 milliseconds`): their time is the iteration line's, lent; the
    deaths were then or later, and the watchdog fired the wait's length after the collective began
    (it said the hang began 608 s before 07:04:42, before the iteration it hung in)."""
    import shutil

    shutil.copy(repo_dir / "tests" / "fixtures" / "real-world" / "train-log" /
                "megatron-lm-gpt3-4gpu-stuck-second-iteration-nccl-watchdog.log", tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    found = pm.detect(inc)
    assert list(found["kind"]) == ["process_died"]
    said = text.what_happened(inc, found)[0]
    assert said.startswith("At 07:04:42 UTC or later processes on ranks 0, 3 died: ")
    assert ("The collective had waited 608 s; this line has no time of its own (it took 07:04:42 UTC from the line "
            "before it), so if the collective began after that line, the watchdog fired at 07:14:49 UTC or later.") in said
    # (a run seen training, its watchdog's line after its epoch's: its death then or later too)
    (tmp_path / "epoch").mkdir()
    shutil.copy(repo_dir / "tests" / "fixtures" / "real-world" / "train-log" /
                "python-logging-epoch3-start-then-nccl-watchdog-1800s-ranks-1-3-no-rank0-old-format-ace.log", tmp_path / "epoch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path / "epoch")
    assert text.what_happened(inc, pm.detect(inc))[0].startswith(
        "At 15:51:09 UTC or later run python-logging-epoch3-start-then-nccl-watchdog-1800s-ranks-1-3-no-rank0-old-format-ace "
        "died while training on rank 3:")


def test_a_paste_that_begins_with_its_oom_shows_a_death_not_a_start(tmp_path, repo_dir):
    """fairseq #2867: the paste begins with the trainer's OOM warning at 22:55:35 (`attempting to
    recover from OOM in forward/backward pass` after it: training was under way), then the spawn's
    traceback. No line shows a start: the OOM is a death no start is known for (it was told "The
    start at 22:55:35 UTC never came up: out of memory in start-up", of a start the file lacks)."""
    import shutil

    shutil.copy(repo_dir / "tests" / "fixtures" / "real-world" / "train-log" /
                "fairseq-bart-finetune-oom-epoch-2-mid-training.log", tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    found = pm.detect(inc)
    assert list(found["kind"]) == ["process_died"]
    said = text.what_happened(inc, found)[0]
    assert said.startswith("At 22:55:35 UTC a process died: OOM: Ran out of memory with exception: CUDA out of memory. "
                           "Tried to allocate 28.00 MiB (GPU 1;")
    assert said.endswith("holds no training step and no launch of its run.")
