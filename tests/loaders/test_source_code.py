"""Files that are not evidence (source_code.py): recognised by content, never read as console text."""

from __future__ import annotations

from pathlib import Path

from support.incidents import load_written

import dflash_postmortem as pm
from dflash_postmortem.loaders import sniff

REPO = Path(__file__).resolve().parents[2]


def _load(tmp_path, name: str, text: str) -> pm.Incident:
    return load_written(tmp_path, name, text)


def test_a_python_file_beside_the_logs_gives_no_events_whatever_its_name(tmp_path):
    # the trainer the replay runs: its strings hold log lines, tracebacks and `tok/s`
    text = (REPO / "dflash_postmortem" / "replay" / "train.py").read_text(encoding="utf-8")
    inc = _load(tmp_path, "notes.txt", text)
    rep = inc.load_report.files[0]
    assert rep.format == "source-code" and rep.parsed == 0 and rep.balanced
    assert dict(rep.skipped) == {"source code, not evidence": rep.read}
    assert inc.events.empty and inc.metrics.empty


def test_a_launcher_script_is_read_for_its_flags(tmp_path):
    text = """#!/usr/bin/env bash
set -euo pipefail
export NCCL_DEBUG=INFO
torchrun --nproc_per_node 8 train.py --lr 3e-4 --batch-size 32 --run-name night1
echo done
"""
    inc = _load(tmp_path, "go", text)
    rep = inc.load_report.files[0]
    assert rep.format == "source-code" and rep.parsed == 1 and rep.balanced
    assert any("line 4: runs train.py" in n and "--lr 3e-4" in n and "--run-name night1" in n for n in rep.notes)
    assert inc.events.empty


def test_a_trainers_settings_file_is_configuration(tmp_path):
    inc = _load(tmp_path, "cfg", "lr = 3e-4\nbatch_size = 32\nwarmup_steps = 100\n[model]\nlayers = 2\n")
    rep = inc.load_report.files[0]
    assert rep.format == "source-code" and dict(rep.skipped) == {"configuration, not evidence": 5}
    assert any("lr=0.0003" in n for n in rep.notes)


def test_logs_sessions_and_pod_documents_stay_what_they_are(tmp_path):
    cases = {
        "log": "2024-01-01 00:00:00 [r] step 1 loss 2.0 tok/s 100\nimport torch failed\n",
        "session": "$ python train.py --lr 1\nKilled\n$ ls\n",
        "pod": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nstatus:\n  containerStatuses:\n  - restartCount: 1\n",
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        fmt, _ = sniff(path)
        assert fmt is not None and fmt.name != "source-code", name


def test_a_launcher_scripts_launch_into_a_file_says_where_its_starts_write(tmp_path):
    """A watchdog's script (tests/model/fixtures/stall-watchdog-cpu's watchdog.sh): `$PY train.py
    ... >> "$LOG" 2>&1 &` with `LOG=logs/train.log` set above it is a `script_launch` into that
    file, with no time (the script says where its starts write, not when); a default the script
    gives (`${OUT:-runs/a}`) is taken where it sets none; a launch into a file named by the
    environment alone (`$HOME/x.log`) says nothing of where."""
    text = """#!/usr/bin/env bash
PY=${PY:-python3}
LOG=logs/train.log
launch() {
    $PY train.py --max-steps 1500 >> "$LOG" 2>&1 &
    pid=$!
}
torchrun --nproc_per_node 2 eval.py --out x 2>&1 | tee "${OUT:-runs/a}/eval.log"
python3 probe.py > "$HOME/probe.log" 2>&1
"""
    inc = _load(tmp_path, "watchdog.sh", text)
    ev = inc.events
    assert ev["kind"].tolist() == ["script_launch", "script_launch"] and ev["time"].isna().all()
    assert ev["log_path"].tolist() == ["logs/train.log", "runs/a/eval.log"]
    assert ev["program"].tolist() == ["train.py", "eval.py"]
    assert [r.rsplit(":", 1)[-1] for r in ev["ref"]] == ["5", "8"]


def test_real_launcher_scripts_say_where_their_trainer_writes_where_the_script_itself_names_it():
    """Three users' launcher scripts as committed (tests/fixtures/real-world/SOURCES.tsv): a
    `LOG_FILE="train.log"` set above `nohup python train.py > "${LOG_FILE}" 2>&1 &`, and `nohup
    accelerate launch train.py > train.log 2>&1 &`, say where train.py's output goes; a log named
    from the script's argument and a `$(date)` (`./log/train_$1_$timestamp.log`) is named only when
    it runs: no place is said."""
    src = REPO / "tests" / "fixtures" / "real-world" / "source"
    said = {}
    for name in ("rtdetrv2-train-sh-nohup-into-log-file-variable.sh", "phonon-train-sh-nohup-accelerate-launch-into-train-log.sh",
                 "gaf-train-sh-nohup-into-dated-log-name.sh"):
        inc = pm.load_incident(src / name)
        assert inc.load_report.files[0].format == "source-code"
        said[name.split("-")[0]] = [(e["program"], e["log_path"], e["ref"].rsplit(":", 1)[-1]) for _, e in inc.events.iterrows()]
    assert said == {"rtdetrv2": [("train.py", "train.log", "11")], "phonon": [("train.py", "train.log", "5")], "gaf": []}


def test_a_scripts_loop_writes_a_log_a_pass():
    """A user's sweep script as committed (numberlearning/DRAM, SOURCES.tsv): `for i in $(seq 1 3)`,
    its `do` on the next line, `MODELNAME="3task_simp_norm_run_${i}"` in the body and `nohup python3
    -u Ct_2l_3t_TT_simp.py $MODELNAME > "model_runs/$MODELNAME/nohup.out" &`: three starts, three
    logs, as the shell runs it (one launch with `$MODELNAME` unresolved, and no place said, before)."""
    inc = pm.load_incident(REPO / "tests" / "fixtures" / "real-world" / "source" /
                           "dram-run-sh-seq-loop-nohup-into-a-log-per-pass.sh")
    assert inc.events["log_path"].tolist() == [f"model_runs/3task_simp_norm_run_{i}/nohup.out" for i in (1, 2, 3)]
    assert set(inc.events["program"]) == {"Ct_2l_3t_TT_simp.py"}
    assert {e.rsplit(":", 1)[-1] for e in inc.events["ref"]} == {"8"}
    # each line accounted for once, whatever the passes: the launch read, the rest skipped (the
    # `sed -i ... model_settings.py` above it edits a file it names: no launch of it)
    rep = inc.load_report.files[0]
    assert (rep.read, rep.parsed, sum(rep.skipped.values())) == (12, 1, 11)
    assert rep.notes == ["launcher script line 8: runs Ct_2l_3t_TT_simp.py"]
    # a script alone is no training, and dates nothing ("between ? and ?" before)
    assert pm.what_happened(inc, pm.detect(inc)) == [
        "No training seen in 1 file: no training step, and none of its rows dated (3 events), so nothing can be said of how it went."]


def test_a_loop_on_one_line_of_a_script_writes_a_log_a_pass(tmp_path):
    # h200-1gpu-sweep-share's typed loop (its operator.log line 2), kept in a script instead
    script = tmp_path / "sweep.sh"
    script.write_text("#!/bin/bash\nfor lr in 1e-4 1e-3; do nohup python3 train.py --run-name sweep-$lr --lr $lr "
                      "--max-steps 2600 > logs/sweep-$lr.log 2>&1 & done\nwait\n")
    inc = pm.load_incident(script)
    assert inc.events["log_path"].tolist() == ["logs/sweep-1e-4.log", "logs/sweep-1e-3.log"]
    assert inc.load_report.files[0].parsed == 1


def test_a_loops_body_may_open_on_its_do_line(tmp_path):
    # `do` carrying the body's first command, as some scripts write it
    script = tmp_path / "seeds.sh"
    script.write_text("#!/bin/bash\nfor s in 1 2\ndo nohup python train.py --seed $s > logs/seed$s.log 2>&1 &\ndone\n")
    inc = pm.load_incident(script)
    assert inc.events["log_path"].tolist() == ["logs/seed1.log", "logs/seed2.log"]
    assert inc.load_report.files[0].parsed == 1


def test_a_script_cut_inside_a_loop_accounts_for_every_line(tmp_path):
    # numberlearning/DRAM's sweep script cut after its launch line, before `done`
    whole = (REPO / "tests" / "fixtures" / "real-world" / "source" /
             "dram-run-sh-seq-loop-nohup-into-a-log-per-pass.sh").read_text().splitlines(keepends=True)
    script = tmp_path / "cut.sh"
    script.write_text("".join(whole[:8]))
    inc = pm.load_incident(script)
    rep = inc.load_report.files[0]
    assert rep.balanced and (rep.read, rep.parsed) == (8, 1)
    assert inc.events.empty  # its log is named by the loop's variable, which a loop never closed does not set
