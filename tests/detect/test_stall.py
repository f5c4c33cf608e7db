"""Stalls: memory held, utilization ~0, no step progress."""

from pathlib import Path

import pandas as pd
import pytest

from dflash_postmortem.detect import detect_stalls


def test_no_stall_in_the_captures(bundled_findings, seed_findings):
    assert (bundled_findings["kind"] != "stall").all()
    assert (seed_findings["kind"] != "stall").all()


def test_stall_when_steps_stop_and_gpus_idle(seed_incident):
    """Cut the relaunched run's steps after 22:00 and zero its utilization: a stall appears."""
    cut = pd.Timestamp("2026-05-09 22:00", tz="UTC")
    g = seed_incident.gpus.copy()
    g.loc[g["time"] >= cut, "util_gpu_pct"] = 0.0
    m = seed_incident.metrics
    inc = type(seed_incident)(gpus=g, metrics=m[m["time"] < cut], processes=seed_incident.processes,
                              config=seed_incident.config)
    st = detect_stalls(inc)
    assert len(st) == 1
    # a stall begins where progress stopped: the last step line before the cut
    assert st.iloc[0]["start"] == m.loc[m["time"] < cut, "time"].max()
    assert st.iloc[0]["numbers"]["processes_alive"] >= 1


STALL = Path(__file__).resolve().parents[2] / "data" / "incidents" / "h200-1gpu-stall"


@pytest.fixture(scope="module")
def stall_incident():
    import warnings

    import dflash_postmortem as pm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(STALL)


def test_real_h200_stall_found_with_its_evidence(stall_incident, line_at):
    """The drafter thread blocked at its step 150 on the H200: memory held at 0 %, no step, until
    the operator's kill at 09:29:49."""
    st = detect_stalls(stall_incident)
    assert len(st) == 1
    s = st.iloc[0]
    T = lambda x: pd.Timestamp(f"2026-11-30 {x}", tz="UTC")  # noqa: E731
    assert s["start"] == T("09:28:53")  # the last step line: progress stopped there
    assert T("09:29:45") <= s["end"] <= T("09:29:50")
    n = s["numbers"]
    assert n["holders"] == [int((STALL / "run" / "stalled.pid").read_text())] == [474]
    assert n["last_step_time"] == T("09:28:53")
    assert "held by PID 474 (6996 MiB)" in s["detail"] and "at most 0 % in 80% of the samples" in s["detail"]
    cited = {ref: line_at(STALL, ref) for ref in s["evidence"]}
    assert cited["logs/train.log:41"] == "2026-11-30 09:28:53 [stalled] step 145 loss 11.8771 tok/s 30412 queue 0"
    samples = [t for ref, t in cited.items() if ref.startswith("logs/smi_stream.csv:")]
    assert samples and all(", 0, GPU-5bbac3f5-7366-d9e9-7812-d931ec204731, 7005, 143771, 0, " in t for t in samples)
    assert any(ref.startswith("logs/smi_apps_stream.csv:") and ", 474, " in t for ref, t in cited.items())


def test_real_h200_stall_threshold_comes_from_incident_toml(stall_incident):
    assert stall_incident.config.detect["stall_s"] == 37.5
    assert detect_stalls(stall_incident, threshold_s=300).empty  # 54 s is no stall by the default


def test_real_h200_stall_in_the_whole_picture(stall_incident):
    from dflash_postmortem.detect import detect

    kinds = detect(stall_incident)["kind"].tolist()
    assert kinds.count("stall") == 1 and kinds.count("verified_start") == 1
    assert "failed_restart" not in kinds


CRASH = STALL.parent / "h200-1gpu-stall-crash"


def test_real_h200_stall_after_a_thread_died_names_the_traceback(line_at):
    """The unguarded loop on the H200: the drafter thread raised at its step 100 and the process
    ran on without it; the stall finding gives that traceback as the likely cause."""
    import warnings

    import dflash_postmortem as pm
    from dflash_postmortem.detect import detect

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(CRASH)
    found = detect(inc)
    # a 9 s dip in the relaunch is no regression; the relaunch is the stall's recovery
    assert sorted(found["kind"]) == ["recovery", "stall", "verified_start"]
    rec = found[found["kind"] == "recovery"].iloc[0]
    assert rec["start"] == pd.Timestamp("2026-11-30 09:45:31", tz="UTC")
    assert rec["detail"].endswith("62 s after the stall began.")  # at the last step, 09:44:29
    s = found[found["kind"] == "stall"].iloc[0]
    T = lambda x: pd.Timestamp(f"2026-11-30 {x}", tz="UTC")  # noqa: E731
    assert s["start"] == T("09:44:29") and T("09:45:08") <= s["end"] <= T("09:45:12")
    assert s["numbers"]["holders"] == [int((CRASH / "run" / "stalled.pid").read_text())] == [467]
    assert s["numbers"]["traceback"] == "RuntimeError: injected failure in the drafter at its step 100"
    assert ("likely cause: Exception in thread drafter-0 (RuntimeError: injected failure in the drafter "
            "at its step 100) at 09:44:29") in s["detail"]
    assert s["title"].endswith("with no step for 43 s")  # its last step 09:44:29 to its last sign of life
    cited = [line_at(CRASH, ref) for ref in s["evidence"]]
    assert cited[:2] == ["2026-11-30 09:44:29 [stalled] step 95 loss 11.9559 tok/s 19877 queue 0",
                         "Exception in thread drafter-0:"]


REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-world"


@pytest.mark.parametrize("sample", [
    "tensorboard/hf-trainer-t5-text-args-train-scalars.tfevents",  # a loss every 500 steps, 127 s apart
    "train-log/xtuner-mmengine-iter-train-slash-date-data-stall.log",  # 29 s apart; a slow data load inside one step
    "train-log/eagle1-draft-pipe-logger-kv-automodel.log",  # 20 s apart
])
def test_a_steady_trainer_that_logs_no_tokens_has_no_stall(sample, tmp_path):
    """Public logs of trainers that log steps and no tokens, each line at its steady interval:
    the stall threshold is measured on those intervals (3 x the median), so no stretch of their
    training is a stall (it once was, when only tok/s lines counted as steps)."""
    import shutil
    import warnings

    import dflash_postmortem as pm
    shutil.copy(REAL / sample, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    assert len(inc.metrics) > 0
    assert detect_stalls(inc).empty
    assert pm.detect(inc).empty


def test_a_hugging_face_run_that_stops_training_to_evaluate_has_no_stall():
    """A healthy Trainer run recorded on this CPU machine (tests/detect/fixtures/hf-long-eval-cpu):
    three evaluations of 92-97 s each, no training step meanwhile, the process working. The
    evaluation's bar, drawn below the unfinished training bar, is no training bar (its elapsed time
    would push the log's clock minutes past the run's end); each gap holds the evaluation's results,
    so it is work, not a stall."""
    import warnings

    import dflash_postmortem as pm
    from dflash_postmortem.model import states
    from dflash_postmortem.model.step_lines import step_lines

    folder = Path(__file__).resolve().parent / "fixtures" / "hf-long-eval-cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(folder)
    log = step_lines(inc)
    log = log[log["source"] == "logs/hf_train.log"]
    # only the training bar's steps, 1..300; the last of them, then the last evaluation's
    # runtime, end where the driver saw the run's summary (23:06:45.726)
    assert log["step"].max() == 300 and log["step"].min() >= 1
    m = inc.metrics
    runtime = m[(m["source"] == "logs/hf_train.log") & (m["metric"] == "eval/runtime")]["value"].tolist()
    assert runtime == pytest.approx([91.97, 92.2, 96.59])
    ended = log["time"].max() + pd.Timedelta(seconds=runtime[-1])
    assert abs(ended - pd.Timestamp("2026-12-02 23:06:45.726", tz="UTC")) < pd.Timedelta(seconds=5)
    st = states(inc)
    assert "stalled" not in set(st["state"])
    assert pm.detect(inc).empty


def _one(path: Path):
    import warnings

    import dflash_postmortem as pm
    from dflash_postmortem.detect import detect

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(path)
    return inc, detect(inc)


REAL_WORLD = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "real-world"


def test_a_checkpoint_save_that_finished_is_no_stall():
    """pytorch/torchtitan #1301: step 1 at 23:40:42.708, `Saving the checkpoint` a millisecond
    later, `Finished saving the checkpoint ... in 393.86 seconds` at 23:47:16.568: the run was
    writing its checkpoint (the issue is its slowness), not stalled; its span reaches the save's end
    (it ended at step 1's line before the save lines were read)."""
    inc, found = _one(REAL_WORLD / "train-log" / "torchtitan-sync-checkpoint-save-394s-gap-after-step-1.log")
    assert "stall" not in set(found["kind"])
    saves = inc.events[inc.events["pattern"] == "checkpoint_save"]
    assert saves["ref"].str.rsplit(":", n=1).str[1].tolist() == ["3", "5"]
    assert inc.span()[1] == pd.Timestamp("2025-06-16 23:47:16.568", tz="UTC")


def test_a_checkpoint_save_that_never_finished_is_a_stall(tmp_path):
    """The same save with no word that it finished and the log going on idle for ten minutes: a stall."""
    text = (REAL_WORLD / "train-log" / "torchtitan-sync-checkpoint-save-394s-gap-after-step-1.log").read_text().splitlines()
    log = tmp_path / "train.log"
    log.write_text("\n".join(text[:3] + ["[rank0]:[titan] 2025-06-16 23:50:42,000 - root - WARNING - "
                                         "[GC] still waiting on the checkpointer"]) + "\n")
    inc, found = _one(log)
    assert found["kind"].tolist() == ["stall"]
    assert found.iloc[0]["start"] == pd.Timestamp("2025-06-16 23:40:42.708", tz="UTC")


def test_steps_a_later_tail_shows_far_ahead_at_the_runs_pace_are_no_stall(tmp_path):
    """h100-1gpu-table-loop without logs/train.log: the operator's `tail -n 3` at 12:17:17 printed
    steps 1920-1960, the `tail -n 2` at 12:18:37 the save and the end at step 3800 (12:18:27): 1,840
    steps in 70 s, at the run's pace; the lines between are not in the evidence, and the run did not
    stall (it trained on: README)."""
    import shutil

    folder = tmp_path / "inc"
    shutil.copytree(Path(__file__).resolve().parents[2] / "data" / "incidents" / "h100-1gpu-table-loop", folder)
    (folder / "logs" / "train.log").unlink()
    _, found = _one(folder)
    assert "stall" not in set(found["kind"])


def test_undated_step_lines_after_a_dated_banner_are_no_silence(tmp_path):
    """hiyouga/LLaMA-Factory's Trainer log: the banner at 07:26:19, 44 dicts and the final bar
    with no time of their own, then `Saving model checkpoint` at 07:30:24 (the bar: 222 steps in
    04:05). The dicts were written between the two; no silence is measured from the banner's time
    (it was "stalled 245 s"). The same lines with times of their own show the stall."""
    inc, found = _one(REAL_WORLD / "train-log" / "llamafactory-lora-sft-llama3-8b-bnb4bit-h100.log")
    assert "stall" not in set(found["kind"])
    assert inc.span()[1] == pd.Timestamp("2025-05-15 07:30:24.686", tz="UTC")
    dated = tmp_path / "train.log"
    dated.write_text("".join(f"2025-05-15 07:26:{19 + i:02d} step {i + 1} loss 0.7 tok/s 1000\n" for i in range(10))
                     + "[INFO|trainer.py:3984] 2025-05-15 07:30:24,686 >> Saving model checkpoint to out/checkpoint-222\n")
    _, found = _one(dated)
    assert found["kind"].tolist()[0] == "stall"
