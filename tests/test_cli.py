"""The command line: one clear error line and a non-zero exit for bad input, no traceback."""

import html
import os
import shutil
import subprocess
import sys
import tomllib

import pytest

from dflash_postmortem.cli import main


def test_report_on_missing_folder_is_one_line_and_nonzero(capsys):
    assert main(["report", "/nonexistent"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["dflash-postmortem report: error: /nonexistent: no such incident folder or file"]


def test_inspect_lists_every_file_and_the_frames(capsys, bundled_dir):
    assert main(["inspect", str(bundled_dir), "--width", "100", "-v"]) == 0
    out = capsys.readouterr().out
    assert "logs/smi_stream.csv" in out and "nvidia-smi-query-csv" in out
    assert "README.md" in out  # not evidence, but listed
    frames = out.split("\nFrames:\n")[1].splitlines()
    assert [line.split()[0] for line in frames] == ["gpus", "gpu_processes", "metrics", "events", "processes"]


def test_inspect_fits_the_width_columns_says(capsys, monkeypatch, bundled_dir):
    monkeypatch.setenv("COLUMNS", "72")
    assert main(["inspect", str(bundled_dir)]) == 0
    assert 60 < max(len(line) for line in capsys.readouterr().out.splitlines()) <= 72
    assert main(["inspect", str(bundled_dir), "--width", "120"]) == 0  # --width wins over COLUMNS
    assert 100 < max(len(line) for line in capsys.readouterr().out.splitlines()) <= 120


SECRETS = {
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "wandb": "0123456789abcdef0123456789abcdef01234567",
    "password": "hunter2-correct-horse",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.sig",
    "aws_id": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github": "ghp_" + "a1B2c3D4e5" * 4,
}


def _edit_line(path, n: int, edit) -> None:
    lines = path.read_text().split("\n")
    lines[n - 1] = edit(lines[n - 1])
    path.write_text("\n".join(lines))


def _incident_with_secrets(tmp_path, bundled_dir):
    """The bundled capture with secrets planted where inspect shows them: the title, the
    detection and mitigation commands of the shell transcript (timeline), and a training-log line
    the regression cites (shown with -v)."""
    import shutil

    folder = tmp_path / "incident"
    shutil.copytree(bundled_dir, folder)
    s = SECRETS
    _edit_line(folder / "logs" / "operator.log", 5, lambda line: line.replace(
        "$ kill", f"$ curl -s -H 'Authorization: Bearer {s['bearer']}' https://x/ok; kill"))
    _edit_line(folder / "logs" / "operator.log", 17, lambda line: line.replace(
        "setsid nohup python3", f"HF_TOKEN={s['hf']} WANDB_API_KEY={s['wandb']} setsid nohup python3").replace(
        "--seconds 90", f"--seconds 90 --password {s['password']}"))
    _edit_line(folder / "logs" / "train_opt.log", 9,
               lambda line: line + f" AWS_SECRET_ACCESS_KEY={s['aws_secret']} {s['github']}")
    # and an escape that would clear the user's screen
    (folder / "incident.toml").write_text(f'title = "h200 night {s["aws_id"]}\\u001b[2J"\n')
    return folder


def test_inspect_masks_secrets_unless_no_redact(capsys, tmp_path, bundled_dir):
    from dflash_postmortem.present.redact import MASK

    folder = _incident_with_secrets(tmp_path, bundled_dir)
    assert main(["inspect", str(folder), "-v", "--width", "100"]) == 0
    out = capsys.readouterr().out
    assert [name for name, secret in SECRETS.items() if secret in out] == []
    assert out.startswith(f"Incident: h200 night {MASK}\\x1b[2J\n") and "\x1b" not in out
    assert f"$ curl -s -H 'Authorization: Bearer {MASK}' https://x/ok; kill" in out
    assert f"HF_TOKEN={MASK} WANDB_API_KEY={MASK}" in out and f"--password {MASK}" in out
    assert f"queue 0 AWS_SECRET_ACCESS_KEY={MASK} {MASK}\n" in out  # the cited log line
    assert main(["inspect", str(folder), "-v", "--width", "100", "--no-redact"]) == 0
    raw = capsys.readouterr().out
    assert [name for name, secret in SECRETS.items() if secret not in raw] == [] and MASK not in raw


def test_an_error_line_is_masked_too(capsys, monkeypatch, bundled_dir):
    import dflash_postmortem.present.terminal_view as text
    from dflash_postmortem.errors import PostmortemError

    def quoting(*a, **kw):
        raise PostmortemError(f"line 3: expected a step, found 'HF_TOKEN={SECRETS['hf']}'")

    monkeypatch.setattr(text, "render_inspect", quoting)
    smi = str(bundled_dir / "logs" / "smi_stream.csv")
    assert main(["inspect", smi]) == 2
    assert capsys.readouterr().err.strip() == (
        "dflash-postmortem inspect: error: line 3: expected a step, found 'HF_TOKEN=[REDACTED]'")
    assert main(["inspect", smi, "--no-redact"]) == 2
    assert SECRETS["hf"] in capsys.readouterr().err


def test_console_script_runs_as_a_process(bundled_dir):
    r = subprocess.run([sys.executable, "-m", "dflash_postmortem.cli", "inspect", "/nonexistent"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "no such file or folder" in r.stderr


def test_bad_param_syntax(capsys, bundled_dir):
    assert main(["report", str(bundled_dir), "--param", "novalue"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def _folder_with_a_dangling_link(tmp_path, bundled_dir):
    import os
    import shutil

    folder = tmp_path / "incident"
    folder.mkdir()
    shutil.copy(bundled_dir / "logs" / "smi_stream.csv", folder / "smi.csv")
    os.symlink("gone.log", folder / "dangling")
    return folder


def test_inspect_lists_what_it_could_not_read_and_exits_0(capsys, tmp_path, bundled_dir):
    folder = _folder_with_a_dangling_link(tmp_path, bundled_dir)
    assert main(["inspect", str(folder), "--width", "100"]) == 0
    captured = capsys.readouterr()
    assert "dangling  could not be read: dangling symbolic link to gone.log: not read" in captured.out
    assert "smi.csv" in captured.out and "gpus" in captured.out
    assert captured.err.strip().splitlines()[-1] == (
        "1 file could not be read (see the load report above; --strict stops at the first)")


def test_strict_is_one_line_and_exit_2(capsys, tmp_path, bundled_dir):
    folder = _folder_with_a_dangling_link(tmp_path, bundled_dir)
    assert main(["inspect", str(folder), "--strict"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["dflash-postmortem inspect: error: dangling: dangling symbolic link to gone.log: not read"]


@pytest.mark.usefixtures("cli_report_kernels")
def test_report_strict_stops_on_what_the_cache_has_seen_and_the_cache_sees_new_links(capsys, tmp_path, monkeypatch,
                                                                                     bundled_dir):
    # The cache of loaded incidents is keyed by every entry the load walks (a dangling link too),
    # and a strict report never takes a cached incident that has something a strict load refuses.
    monkeypatch.setenv("DFLASH_POSTMORTEM_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "incident"
    folder.mkdir()
    shutil.copy(bundled_dir / "logs" / "smi_stream.csv", folder / "smi.csv")
    assert main(["report", str(folder), "-o", str(tmp_path / "clean"), "--only", "01", "--no-progress"]) == 0
    assert "could not be read" not in capsys.readouterr().err
    os.symlink("gone.log", folder / "dangling")  # no regular file changed
    assert main(["report", str(folder), "-o", str(tmp_path / "lenient"), "--only", "01", "--no-progress"]) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("1 file could not be read")
    assert main(["report", str(folder), "-o", str(tmp_path / "strict"), "--only", "01", "--no-progress",
                 "--strict"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["dflash-postmortem report: error: dangling: dangling symbolic link to gone.log: not read"]
    assert not (tmp_path / "strict" / "01_overview.html").exists()


def test_a_bug_is_one_line_without_debug_and_a_traceback_with_it(capsys, monkeypatch, bundled_dir):
    import dflash_postmortem.present.terminal_view as text

    def broken(*a, **kw):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(text, "render_inspect", broken)
    assert main(["inspect", str(bundled_dir / "logs" / "smi_stream.csv")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip() == ("dflash-postmortem inspect: internal error: ZeroDivisionError: division by zero "
                           "(run with --debug for the traceback, and please report it)")
    assert main(["inspect", str(bundled_dir / "logs" / "smi_stream.csv"), "--debug"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_launch_without_a_command_is_one_line(capsys):
    code = main(["launch", "--log", "x.log"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.usefixtures("cli_report_kernels")
def test_report_on_a_hostile_folder_writes_every_page(capsys, tmp_path, bundled_dir, fixtures_dir):
    """Everything a crash and a careless copy leave in one folder: the report is written, every
    page runs, the command says how many files it could not read and exits 0."""
    import os
    import shutil

    folder = tmp_path / "incident"
    folder.mkdir()
    shutil.copy(bundled_dir / "logs" / "smi_stream.csv", folder / "smi.csv")
    shutil.copy(bundled_dir / "logs" / "train.log", folder / "train.log")
    os.mkfifo(folder / "pipe")
    os.symlink("gone", folder / "dangling")
    os.symlink("loop2", folder / "loop1")
    os.symlink("loop1", folder / "loop2")
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 12)
    (folder / "empty.log").write_bytes(b"")
    text = (bundled_dir / "logs" / "smi_stream.csv").read_text().replace("\n", "\r\n")
    (folder / "powershell.csv").write_bytes(text.encode("utf-16"))
    shutil.copy(fixtures_dir / "wandb" / "moe-l4-flipped-header-byte.wandb", folder / "run.wandb")
    out = tmp_path / "report"
    assert main(["report", str(folder), "-o", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == ("3 files could not be read (see the load report on the overview page; "
                                            "--strict stops at the first)")
    index = (out / "index.html").read_text()
    assert "<strong>failed</strong>" not in index
    assert len(list(out.glob("0*.html"))) == 5


def test_inspect_with_nothing_to_tell_from_says_so_and_exits_1(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("what we think happened\n")
    for folder in ("empty", "notes"):
        assert main(["inspect", str(tmp_path / folder)]) == 1
        out = capsys.readouterr().out
        assert "No evidence to tell from:" in out and "Nothing went wrong" not in out
    assert "1 file read, none with a row" in out


def test_help_shows_two_examples_and_a_folder(capsys):
    for argv in (["--help"], ["inspect", "--help"], ["report", "--help"]):
        try:
            main(argv)
        except SystemExit as e:
            assert e.code == 0
        out = capsys.readouterr().out
        assert "dflash-postmortem inspect my-incident/" in out and "dflash-postmortem report my-incident/ -o out/" in out
        assert "incident.toml" in out and "logs/train.log" in out


@pytest.mark.usefixtures("cli_report_kernels")
def test_report_on_several_incidents_writes_one_report_each(tmp_path, bundled_dir, capsys):
    """`report A B -o out`: out/A/ and out/B/, each its own incident's pages and title (as `make
    reports` does)."""
    survivor, stall = bundled_dir.parent / "h200-1gpu-survivor", bundled_dir.parent / "h200-1gpu-stall"
    out = tmp_path / "reports"
    assert main(["report", str(survivor), str(stall), "-o", str(out), "--only", "01", "--no-progress"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said == [f"report written: {out / 'h200-1gpu-survivor' / 'index.html'}",
                    f"report written: {out / 'h200-1gpu-stall' / 'index.html'}"]
    for folder, run in ((survivor, "regressed"), (stall, "stalled")):
        title = tomllib.loads((folder / "incident.toml").read_text())["title"]
        assert run in (out / folder.name / "01_overview.html").read_text(encoding="utf-8")
        assert f"<title>Post-mortem: {html.escape(title)}" in (out / folder.name / "index.html").read_text(encoding="utf-8")
    assert "regressed" not in (out / "h200-1gpu-stall" / "01_overview.html").read_text(encoding="utf-8")


@pytest.mark.usefixtures("cli_report_kernels")
def test_report_on_one_file_reads_it_as_the_incident(tmp_path, bundled_dir, capsys):
    """`report launch.log`: a one-file incident (a `bash -x` launcher whose start died of CUDA OOM),
    said so, its evidence links into a view of that file."""
    log = bundled_dir.parent / "h200-1gpu-oom-bashx" / "logs" / "launch.log"
    out = tmp_path / "report"
    assert main(["report", str(log), "-o", str(out), "--only", "01", "--no-progress"]) == 0
    assert capsys.readouterr().out.strip() == (f"report written: {out / 'index.html'} "
                                               "(one file read as the incident: launch.log)")
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "out of memory" in index and 'data-ref="launch.log:' in index
    assert (out / "evidence" / "launch.log.html").is_file()
