"""The shell-command vocabulary (shell_words.py): prompts, launches and what they run, kill targets,
`timeout`, signals and exit statuses."""

from __future__ import annotations

import pytest

from dflash_postmortem.shell_words import (
    echoed_command,
    environment_changes,
    exit_meaning,
    foreground_log,
    foreground_program,
    hangup_exposed,
    kill_targets,
    loop_passes,
    match_prompt,
    multiplexer_session,
    only_helpers,
    parse_launch,
    parse_launches,
    pipes_into,
    runs_launcher,
    runs_script,
    signal_name,
    timeout_wrapper,
    windows_crash_said,
    without_redirections,
)


@pytest.mark.parametrize(("line", "command"), [
    ("root@gpu-node:~/w# nvidia-smi", "nvidia-smi"),
    ("user@host:~$ kill -9 -- -924", "kill -9 -- -924"),
    ("(venv) (base) user@host:~/w (main)$ python train.py", "python train.py"),
    ("[root@skl-node-1 eris]# dmesg -T", "dmesg -T"),
    ("[havb@be-lx139213:~]$ perl -wE 1", "perl -wE 1"),
    ("(venv) user@host ~ % ps aux", "ps aux"),
    ("user@host ~ $ ls", "ls"),
    ("mac:~ user$ top -l 1", "top -l 1"),
    ("bash-5.1$ echo $?", "echo $?"),
    ("❯ torchrun --nproc-per-node 8 train.py", "torchrun --nproc-per-node 8 train.py"),
    ("➜  dflash git:(main) ✗ pkill -f train.py", "pkill -f train.py"),
    ("PS C:\\Users\\me> nvidia-smi", "nvidia-smi"),
    ("$ nohup python train.py &", "nohup python train.py &"),
    ("# kill 4242", "kill 4242"),
    (" host:~ # kill -9 973", "kill -9 973"),
    ("ttyserver@ttyserver:~> kill 637", "kill 637"),
    ("hacker@processes~killing-processes:~$ kill 136", "kill 136"),
    ("    $ nvidia-smi -L", "nvidia-smi -L"),
])
def test_prompt_forms(line, command):
    p = match_prompt(line)
    assert p is not None and p.command == command and not p.trace_depth


@pytest.mark.parametrize("line", [
    "# NameTester.rb tests class Name and its operations",  # a comment is not a root prompt
    "Tasks: 112 total,   1 running",
    "        $ indented deeper than a code block",
    "root        1422  0.1  0.0      0     0 ?        Ds   Jul22  32:01 [Xorg]",
])
def test_not_prompts(line):
    assert match_prompt(line) is None


def test_set_x_trace_lines_are_commands_of_a_script():
    assert match_prompt("+ python train.py --lr 3e-4").trace_depth == 1
    assert match_prompt("++ cat /run/train.pid").command == "cat /run/train.pid"


def test_command_vocabulary():
    g = kill_targets("sudo kill -9 -- -924 5")
    assert [(k.pid, k.is_group, k.signal) for k in g] == [(924, True, "SIGKILL"), (5, False, "SIGKILL")]
    assert [k.pattern for k in kill_targets('pkill -f "python train.py"')] == ["python train.py"]
    (subst,) = kill_targets("kill -9 -$(cat run/train.pid)")  # known only when it ran: the text is kept
    assert (subst.pid, subst.expr, subst.is_group) == (None, "$(cat run/train.pid)", True)
    assert timeout_wrapper(["timeout", "--signal=INT", "-k", "5", "1.5m", "python"]) == (90.0, "SIGINT")
    assert parse_launch("timeout -s KILL 2 python x.py").launcher == "timeout"
    assert signal_name("-31") == "SIGSYS" and exit_meaning(130) == ("SIGINT", "killed by SIGINT")


def test_a_pid_named_twice_in_one_kill_is_one_target():
    (t,) = kill_targets("kill -9 6943 6943 6943")
    assert (t.pid, t.signal, t.is_group) == (6943, "SIGKILL", False)
    assert [(k.pid, k.is_group) for k in kill_targets("kill 5 -- -5 5")] == [(5, False), (5, True)]
    assert [k.pid for k in kill_targets("kill 7; kill 7")] == [7, 7]  # two commands: two kills


def test_pkill_of_a_group_or_session_targets_it_whole():
    """`pkill -g PGID` and `pkill -s SID` alone kill a whole group (pkill's `-s` is a session, not
    a signal as for kill); with a pattern the group only narrows which processes match."""
    assert [(k.pid, k.is_group, k.signal) for k in kill_targets("pkill -9 -g 3489")] == [(3489, True, "SIGKILL")]
    assert [(k.pid, k.is_group) for k in kill_targets("pkill -s 120")] == [(120, True)]
    assert [(k.pid, k.pattern) for k in kill_targets("pkill -g 12 -f train.py")] == [(None, "train.py")]
    assert kill_targets("pkill -s 0") == []  # the caller's own session: nothing the evidence can name
    assert [k.signal for k in kill_targets("kill -s KILL 5")] == ["SIGKILL"]


def test_a_multiplexer_session_killed_is_the_target_and_a_launch_names_its_session():
    """`tmux kill-session` and `screen -X quit` close a session: what was started in it gets
    SIGHUP. A launch into tmux or screen names the session it started the trainer in."""
    assert [(k.program, k.session, k.signal) for k in kill_targets("tmux kill-session -t train")] == [("tmux", "train", "SIGHUP")]
    assert [k.session for k in kill_targets("tmux kill-session -t=train:0.1")] == ["train"]  # a pane's session
    assert [k.session for k in kill_targets("tmux kill-server")] == ["*"]
    assert [k.session for k in kill_targets("screen -X -S job quit")] == [k.session for k in kill_targets("screen -S job -X quit")] == ["job"]
    assert kill_targets("tmux ls; tmux attach -t train; screen -r job") == []
    assert multiplexer_session("tmux new-session -d -s train 'nohup python train.py > a.log 2>&1'") == "train"
    assert multiplexer_session("tmux new -s t2 -d python x.py") == "t2"
    assert multiplexer_session("tmux send-keys -t train:0 'python train.py' Enter") == "train"
    assert multiplexer_session("screen -dmS job python train.py") == multiplexer_session("screen -S job -d -m python t.py") == "job"
    assert multiplexer_session("nohup python train.py &") is None


def test_parse_launch_forms():
    ssh = parse_launch("ssh node17 'cd /w && nohup torchrun --nproc-per-node 8 train.py --run-name r1 > /w/r1.log 2>&1 &'")
    assert ssh.launcher == "ssh" and ssh.run == "r1"
    tmux = parse_launch("tmux send-keys -t train 'python train.py --lr 3e-4 | tee out.log' Enter")
    assert tmux.launcher == "tmux" and tmux.log_path == "out.log"
    pct = parse_launch("pct exec 101 -- bash -c 'nohup python3 /srv/t.py --x 1 >> /root/t.log 2>&1 &'")
    assert pct.launcher == "pct exec" and pct.log_path == "/root/t.log"
    dock = parse_launch("docker exec -d trainer python train.py --epochs 3 > /logs/a.log")
    assert dock.launcher == "docker exec" and dock.args == "--epochs 3"
    assert parse_launch("ls -la /tmp") is None
    assert parse_launch("python check.py") is None  # foreground, no launcher: not a launch


@pytest.mark.parametrize(("cmd", "launcher", "log_path", "args"), [
    ("nohup python train.py --lr 3e-4 > /w/a.log 2>&1 &", "nohup", "/w/a.log", "--lr 3e-4"),
    ("nohup python train.py --workers 2 > /w/a.log 2>&1 &", "nohup", "/w/a.log", "--workers 2"),
    ("setsid python3 t.py --x 1 >/w/b.log 2>/w/b.err < /dev/null & disown", "setsid", "/w/b.log", "--x 1"),
    ("python t.py --name 'my run' &>> /w/c.log &", "&", "/w/c.log", "--name my run"),
    ("ssh node17 'cd /w && nohup torchrun --nproc-per-node 8 train.py --run-name r1 > /w/r1.log 2>&1 &'",
     "ssh", "/w/r1.log", "--nproc-per-node 8 train.py --run-name r1"),
    ("pct exec 101 -- bash -c 'nohup python3 /srv/t.py --x 1 >> /root/t.log 2>&1 &'", "pct exec", "/root/t.log", "--x 1"),
    ("docker exec -d trainer bash -c \"python train.py --epochs 3 2>&1 | tee -a /logs/d.log\"",
     "docker exec", "/logs/d.log", "--epochs 3"),
    ("tmux send-keys -t train 'python train.py --lr 3e-4 | tee out.log' Enter", "tmux", "out.log", "--lr 3e-4"),
    ("tmux new -d -s t 'python train.py --lr 1 2>&1 | tee /w/t.log'", "tmux", "/w/t.log", "--lr 1"),
    ("torchrun --nproc-per-node 2 train.py --bs 8 > /w/tr.log 2>&1 &", "torchrun", "/w/tr.log", "--nproc-per-node 2 train.py --bs 8"),
    # its output through a filter into the file: the file the pipeline ends in is its log
    ("nohup python train.py --lr 1 2>&1 | cut -c21- > logs/train.log &", "nohup", "logs/train.log", "--lr 1"),
    ("python t.py --x 1 | grep --line-buffered step | tee -a /w/steps.log &", "&", "/w/steps.log", "--x 1"),
    # unbalanced quote (a paste cut short): still read, nothing raised; its redirection inside the
    # quote is none, so nohup writes nohup.out
    ("nohup python train.py --tag 'abc > /w/u.log 2>&1 &", "nohup", "nohup.out", "--tag abc > /w/u.log 2>&1 &"),
])
def test_parse_launch_tokenises_with_shlex(cmd, launcher, log_path, args):
    x = parse_launch(cmd)
    assert (x.launcher, x.log_path, x.args) == (launcher, log_path, args)
    assert x.background == (log_path not in (None, "nohup.out"))  # the cut-short one's `&` is inside its quote


@pytest.mark.parametrize("cmd", [
    "cd /w && dflash-postmortem launch --log /w/logs/t.log --expect-gpu -- python3 -m pkg.train --run-name fixed --lr 1",
    "cd /w && /opt/venv/bin/python3 -m dflash_postmortem.cli launch --log=/w/logs/t.log --timeout 600 -- "
    "python3 -m pkg.train --run-name fixed --lr 1",
])
def test_parse_launch_kit_launcher(cmd):
    x = parse_launch(cmd)
    assert (x.launcher, x.log_path, x.program, x.args, x.run) == (
        "dflash-postmortem launch", "/w/logs/t.log", "python3", "-m pkg.train --run-name fixed --lr 1", "fixed")
    assert x.background


def test_a_foreground_command_into_a_log_names_the_log_it_writes():
    """h100-1gpu-leak-oom's first command (foreground through `tee`), one into a redirect, and
    what is no trainer's start: a background start (parse_launch's), a read of the log, a tool."""
    assert foreground_log("/opt/torch/.venv/bin/python3 run/hf_train.py --out runs/gpt2 --max-steps 1000 "
                          "--leak-mib 256 2>&1 | tee logs/train.log") == "logs/train.log"
    assert foreground_log("python train.py --lr 3e-4 > logs/run.log 2>&1") == "logs/run.log"
    assert foreground_log("bash ./launch.sh big > logs/launch.log 2>&1; echo exit=$?") == "logs/launch.log"
    assert foreground_log("nohup python train.py > logs/run.log 2>&1 &") is None
    assert foreground_log("grep -c OutOfMemoryError logs/train.log") is None
    assert foreground_log("nvidia-smi -l 1 > logs/smi.txt") is None


def test_a_sweep_agent_in_the_foreground_runs_its_runs_and_other_words_run_none():
    """`wandb agent` starts each run of its sweep as its child, on its terminal: its output is
    theirs (tests/present/test_sentences.py, an srun session's sweep). `wandb sweep` only creates
    a sweep, and no command's last word is a program for being last."""
    assert foreground_program("wandb agent zhao-group/torchcell/k0yw7xgw") == "wandb"
    assert foreground_program("wandb sweep conf/sweep.yaml") is None
    assert foreground_program("ls -la") is None and foreground_program("conda activate torchcell") is None


# GNU make's output as it was recorded (data/incidents/h100-1gpu-make-launcher, typescript lines 4-6):
# the recipe line echoed with its variables filled in, then make's own error line.
_MAKE_ECHO = ("python -m dflash_postmortem.replay.train --run-name drafter --max-steps 600 --pid-file "
              "/scratch/dflash/drafter.pid > logs/train-20261205-172853.log 2>&1")


@pytest.mark.parametrize(("typed", "output", "echoed"), [
    ("make train", [_MAKE_ECHO, "make: *** [Makefile:14: train] Error 1"], _MAKE_ECHO),
    ("make -C exp train RUN=a 2>&1 | tee make.log",
     ["make: Entering directory '/w/exp'", "mkdir -p logs", "cd src && torchrun --nproc-per-node 8 train.py",
      "step 1"], "cd src && torchrun --nproc-per-node 8 train.py"),
    ("just train", ["python3 train.py --lr 3e-4", "step 1 loss 2.1"], "python3 train.py --lr 3e-4"),
    # a silent (`@`) recipe prints no command: what it printed is the trainer's own output
    ("make train", ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                    "make: *** [Makefile:2: train] Error 1"], None),
    # only a recipe runner echoes what it runs: `cat` of a script prints commands it does not run
    ("cat run.sh", ["python train.py > logs/train.log 2>&1"], None),
    ("make", ["echo starting", "make: Nothing to be done for 'all'."], None),
])
def test_a_recipe_runner_launches_the_command_it_echoed(typed, output, echoed):
    assert echoed_command(typed, output) == echoed


def test_a_command_without_its_redirections_is_what_its_process_holds():
    # (h200-1gpu-watched-relaunch: `pkill -f 'train3[.]log'` matched no process: the log's name is
    # in the typed command's redirection only)
    assert without_redirections("nohup python train.py --run-name a > logs/train3.log 2>&1 &") == \
        "nohup python train.py --run-name a &"
    assert without_redirections("python train.py 2> err.log < in.txt") == "python train.py"


@pytest.mark.parametrize(("typed", "kept", "given"), [
    # (h100-1gpu-debug-env, typescript lines 11 and 22)
    ("export CUDA_LAUNCH_BLOCKING=1", {"CUDA_LAUNCH_BLOCKING": "1"}, {}),
    ("unset CUDA_LAUNCH_BLOCKING", {"CUDA_LAUNCH_BLOCKING": None}, {}),
    ("export NCCL_DEBUG=INFO TORCH_NCCL_BLOCKING_WAIT='1'; cd /w", {"NCCL_DEBUG": "INFO", "TORCH_NCCL_BLOCKING_WAIT": "1"}, {}),
    ("declare -x OMP_NUM_THREADS=4", {"OMP_NUM_THREADS": "4"}, {}),
    ("export PATH", {}, {}),  # exports what is already set: nothing said of its value
    # for the program it runs only, behind `env` and `nohup`
    ("CUDA_VISIBLE_DEVICES=0,1 nohup python train.py --lr=3e-4 > l 2>&1 &", {}, {"CUDA_VISIBLE_DEVICES": "0,1"}),
    ("env OMP_NUM_THREADS=1 torchrun --nproc-per-node 2 train.py A=2", {}, {"OMP_NUM_THREADS": "1"}),
    ("python train.py --lr=3e-4", {}, {}),
])
def test_what_a_typed_command_sets_in_the_environment(typed, kept, given):
    assert environment_changes(typed) == (kept, given)


@pytest.mark.parametrize(("command", "runs"), [
    ("/bin/bash ./run.sh", True), ("./run.sh", True), ("bash -x /home/u/run.sh --fast", True),
    ("nohup sh run.sh", True), ("vim run.sh", False), ("tail -f run.sh.log", False), ("bash -c run.sh; ls", False),
    ("python3 train.py --resume run.sh", False),
])
def test_a_process_runs_a_script_where_it_is_its_first_word_past_a_shell(command, runs):
    """ps lists a script its #! line runs as `/bin/bash ./run.sh`: the launch `nohup ./run.sh`'s own
    process (model/attempts.py takes what runs under it as that launch's)."""
    assert runs_script(command, "run.sh") is runs


@pytest.mark.parametrize(("command", "agent"), [
    ("/opt/torch/.venv/bin/python /opt/torch/.venv/bin/torchrun --nproc-per-node 2 --no-python ./rank.sh", True),
    ("torchrun --nproc-per-node 2 train.py", True),
    ("/usr/bin/python3 -u -m torch.distributed.launch --nproc_per_node 8 train.py", True),
    ("accelerate launch --num_processes 2 train.py", True),
    # a program that names a launcher among its arguments (a recording driver's scenario names)
    ("python3 scripts/gpu_incidents.py --root /tmp/incidents torchrun-halt oom-bashx", False),
    ("/opt/torch/.venv/bin/python3 -m dflash_postmortem.replay.train --run-name ddp", False),
    ("/bin/bash ./launch.sh", False),
])
def test_a_launchers_agent_is_told_by_the_program_its_process_runs(command, agent):
    assert runs_launcher(command) is agent


def test_what_a_shells_hangup_kills_of_a_job_is_the_first_part_of_its_pipeline_nothing_guards():
    """`nohup` guards the command it starts, not the rest of the pipeline (h100-1gpu-tee-hangup:
    `nohup python3 train.py 2>&1 | tee logs/train.log &`, tee died with the terminal); a job
    started out of the session, or every part under nohup, is not exposed; a `cd` before it is
    not the job."""
    assert hangup_exposed("nohup python3 train.py --run-name tee-run 2>&1 | tee logs/train.log &") == "tee"
    assert hangup_exposed("nohup torchrun --nproc-per-node 2 t.py |& tee l &") == "tee"
    assert hangup_exposed("python3 train.py > log &") == "python3"
    assert hangup_exposed("source env.sh; python3 t.py | tee l &") == "python3"
    for guarded in ("nohup python3 train.py > log 2>&1 &", "setsid python3 train.py | tee x &",
                    "nohup python3 t.py | nohup tee x &", "cd /x && nohup python3 t.py > l &"):
        assert hangup_exposed(guarded) is None, guarded


def test_the_program_a_jobs_trainer_pipes_into_is_the_one_bash_names():
    """Bash's `[1] 685` for a background pipeline is its last process's PID (h100-1gpu-tee-hangup:
    tee's, not the trainer's)."""
    assert pipes_into("nohup python3 train.py 2>&1 | tee logs/train.log &") == "tee"
    assert pipes_into("python3 train.py |& tee -a log &") == "tee"
    assert pipes_into("nohup python3 train.py > log 2>&1 &") is None
    assert pipes_into("cat cfg | python3 train.py &") is None  # the trainer is the last: its PID


def test_a_loop_typed_in_one_line_starts_one_trainer_per_value():
    # h200-1gpu-sweep-share's operator.log line 2, as typed
    typed = ("for lr in 1e-4 1e-3; do nohup python3 train.py --run-name sweep-$lr --lr $lr --max-steps 2600 > "
             "logs/sweep-$lr.log 2>&1 & done")
    started = parse_launches(typed)
    assert [(s.run, s.log_path, s.args, s.background) for s in started] == [
        ("sweep-1e-4", "logs/sweep-1e-4.log", "--run-name sweep-1e-4 --lr 1e-4 --max-steps 2600", True),
        ("sweep-1e-3", "logs/sweep-1e-3.log", "--run-name sweep-1e-3 --lr 1e-3 --max-steps 2600", True)]
    assert parse_launch(typed).log_path == "logs/sweep-$lr.log"  # one command, as it was read before
    assert started[0].loop_pass == ("nohup python3 train.py --run-name sweep-1e-4 --lr 1e-4 --max-steps 2600 > "
                                    "logs/sweep-1e-4.log 2>&1 &")
    # a loop of one value is a pass too: its command has the value in it
    (one,) = parse_launches("for lr in 3e-4; do nohup python3 train.py --lr ${lr} > logs/lr-${lr}.log 2>&1 & done")
    assert (one.args, one.log_path) == ("--lr 3e-4", "logs/lr-3e-4.log") and one.loop_pass.startswith("nohup python3")
    assert parse_launches("nohup python3 train.py > a.log &")[0].loop_pass is None


@pytest.mark.parametrize(("typed", "passes"), [
    ("for g in {0..2}; do CUDA_VISIBLE_DEVICES=$g nohup python t.py > g${g}.log 2>&1 & done",
     ["CUDA_VISIBLE_DEVICES=0 nohup python t.py > g0.log 2>&1 &", "CUDA_VISIBLE_DEVICES=1 nohup python t.py > g1.log 2>&1 &",
      "CUDA_VISIBLE_DEVICES=2 nohup python t.py > g2.log 2>&1 &"]),
    ("cd w && for s in $(seq 2 3); do python t.py --seed $s > s$s.log & done; wait",
     ["python t.py --seed 2 > s2.log &", "python t.py --seed 3 > s3.log &"]),
    ("for m in 'small' \"big\"; do python t.py --model $m & done", ["python t.py --model small &", "python t.py --model big &"]),
    # values the line does not hold: a glob, a command's output, a variable; a range no one types by hand
    ("for f in cfg/*.yaml; do python t.py $f & done", []),
    ("for f in $(ls cfg); do python t.py $f & done", []),
    ("for f in $CONFIGS; do python t.py $f & done", []),
    ("for i in {1..100000}; do python t.py $i & done", []),
    ("nohup python t.py > a.log &", []),
])
def test_the_commands_a_loops_passes_run(typed, passes):
    assert loop_passes(typed) == passes


@pytest.mark.parametrize(("line", "helpers"), [
    # numberlearning/DRAM's sweep script (tests/fixtures/real-world/source): an edit of the file it names
    ("""sed -i '/model_name/c\\\\model_name = "'$MODELNAME'"' model_settings.py""", True),
    ("mkdir -p logs && cat train.py | grep lr", True),
    ("nohup python3 -u Ct_2l_3t_TT_simp.py $MODELNAME > out.log &", False),
    ("cd w && python train.py", False),
])
def test_a_line_of_helpers_runs_no_trainer_whatever_file_it_names(line, helpers):
    assert only_helpers(line) is helpers


def test_a_windows_crash_status_is_named_signed_or_not():
    """Windows ends a natively crashed process with an NTSTATUS as its exit code (kohya_ss #2556:
    `returned non-zero exit status 3221225477`, PowerShell's `-1073741819`); any other large
    status is only a failure."""
    assert exit_meaning(3221225477) == (None, "crashed (0xC0000005, an access violation)")
    assert exit_meaning(-1073741819) == exit_meaning(3221225477)
    assert exit_meaning(3221225725) == (None, "crashed (0xC00000FD, a stack overflow)")
    assert exit_meaning(1234567890) == (None, "failed")
    assert windows_crash_said("Command '[...]' returned non-zero exit status 3221225477.") == "0xC0000005, an access violation"
    assert windows_crash_said("Process finished with exit code -1073740791") == "0xC0000409, a stack buffer overrun (a fail-fast abort)"
    assert windows_crash_said("exit status 1") is None


@pytest.mark.parametrize("cmd, log", [
    ("nohup python3 train.py --run-name lm &", "nohup.out"),  # nohup's own file, in the current folder
    ("nohup python3 train.py > out.log 2>&1 &", "out.log"),
    ("nohup python3 train.py > /dev/null 2>&1 &", None),
    ("nohup python3 train.py | tee x.log &", "x.log"),
    ("python3 train.py &", None),  # no nohup: its output goes to the terminal
])
def test_a_nohup_launch_that_redirects_nothing_writes_nohup_out(cmd, log):
    assert parse_launch(cmd).log_path == log
