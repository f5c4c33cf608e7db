"""The command line: one clear error line and a non-zero exit for bad input, no traceback."""

import subprocess
import sys

from dflash_postmortem.cli import main


def test_report_on_missing_folder_is_one_line_and_nonzero(capsys):
    assert main(["report", "/nonexistent"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["dflash-postmortem report: error: /nonexistent: no such incident folder"]


def test_inspect_lists_every_file_and_the_frames(capsys, bundled_dir):
    assert main(["inspect", str(bundled_dir)]) == 0
    out = capsys.readouterr().out
    assert "logs/smi_stream.csv" in out and "nvidia-smi-query-csv" in out
    assert "README.md" in out  # not evidence, but listed
    for frame in ("gpus", "gpu_processes", "metrics", "events", "processes"):
        assert frame in out


def test_console_script_runs_as_a_process(bundled_dir):
    r = subprocess.run([sys.executable, "-m", "dflash_postmortem.cli", "inspect", "/nonexistent"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "no such file or folder" in r.stderr


def test_bad_param_syntax(capsys, bundled_dir):
    assert main(["report", str(bundled_dir), "--param", "novalue"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err
