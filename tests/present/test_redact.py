"""Safe to share: secrets planted in a log, a command line and a config never reach a report, and
markup in a log line is shown as text, never run."""

import html
import re
from pathlib import Path

import pytest
from support.browser import figures_rendered

from dflash_postmortem.present.redact import MASK, redact
from dflash_postmortem.report.build import build_report

SECRETS = {
    "wandb": "0123456789abcdef0123456789abcdef01234567",
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "aws_id": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.sig",
    "password": "hunter2-correct-horse",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUv",
    "github": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "hf2": "hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa987654",
}
MARKUP = "<script>alert(1)</script>"


@pytest.mark.parametrize("text, secret", [
    (f"export WANDB_API_KEY={SECRETS['wandb']}", SECRETS["wandb"]),
    (f"HF_TOKEN='{SECRETS['hf']}' python train.py", SECRETS["hf"]),
    (f"token is {SECRETS['hf']} in the middle", SECRETS["hf"]),
    (f"aws_access_key_id = {SECRETS['aws_id']}", SECRETS["aws_id"]),
    (f"AWS_SECRET_ACCESS_KEY={SECRETS['aws_secret']}", SECRETS["aws_secret"]),
    (f"curl -H 'Authorization: Bearer {SECRETS['bearer']}' https://x", SECRETS["bearer"]),
    (f"python train.py --password {SECRETS['password']} --seconds 60", SECRETS["password"]),
    (f"python train.py --password={SECRETS['password']}", SECRETS["password"]),
    (f"git clone https://user:{SECRETS['password']}@example.com/r.git", SECRETS["password"]),
])
def test_each_secret_form_is_masked(text, secret):
    out = redact(text)
    assert secret not in out and MASK in out


def test_ordinary_text_is_untouched():
    line = "2026-11-30 05:20:58 [baseline] step 10 loss 11.8896 tok/s 148292 queue 3 --seconds 60"
    assert redact(line) == line


def _planted_incident(root: Path) -> Path:
    """A small incident whose log, launch command and config carry secrets and markup."""
    logs = root / "logs"
    logs.mkdir(parents=True)
    lines = ["2026-11-30 05:20:28 [base] Loading dataset ...",
             f"2026-11-30 05:20:29 [base] env: WANDB_API_KEY={SECRETS['wandb']} HF_TOKEN={SECRETS['hf']}",
             f"2026-11-30 05:20:29 [base] s3 upload with AWS_ACCESS_KEY_ID={SECRETS['aws_id']} "
             f"AWS_SECRET_ACCESS_KEY={SECRETS['aws_secret']}",
             "2026-11-30 05:20:30 [base] Starting training threads"]
    for i in range(60):
        lines.append(f"2026-11-30 05:{21 + i // 30:02d}:{(i * 2) % 60:02d} [base] step {5 * (i + 1)} loss 10.0 "
                     f"tok/s {20000 + (i % 3) * 50} queue 2")
    lines.append(f"2026-11-30 05:23:00 [base] WARNING fast path is not available {MARKUP}")
    for i in range(60):
        lines.append(f"2026-11-30 05:{23 + i // 30:02d}:{(i * 2) % 60:02d} [base] step {305 + 5 * i} loss 10.0 "
                     f"tok/s {10000 + (i % 3) * 50} queue 0")
    (logs / "train.log").write_text("\n".join(lines) + "\n")
    (logs / "operator.log").write_text(
        f"[2026-11-30T05:20:20.000Z] $ cd /w && setsid nohup python3 train.py --run-name base --hf-token {SECRETS['hf']} "
        f"--password {SECRETS['password']} > /w/logs/train.log 2>&1 & disown\n"
        f"[2026-11-30T05:22:00.000Z] $ curl -H 'Authorization: Bearer {SECRETS['bearer']}' https://api.example.com/ok\n"
        "ok\n")
    # ps snapshots: the secret on a command line
    (logs / "ps.txt").write_text(
        "=== 2026-11-30T05:21:00Z ===\n"
        "USER         PID    PPID STARTED  COMMAND\n"
        f"root        4242       1 05:20:30 python3 train.py --run-name base --wandb-key {SECRETS['wandb']} "
        f"--api-key {SECRETS['openai']}\n")
    # nvidia-smi's per-process CSV: the process name as launched
    (logs / "apps.csv").write_text(
        "timestamp, pid, process_name, used_gpu_memory [MiB]\n"
        f"2026/11/30 05:21:00.000, 4242, HF_TOKEN={SECRETS['hf']} python3, 20480 MiB\n")
    # a wandb run folder: its config and its console
    files = root / "wandb" / "run-20261130_052029-planted1" / "files"
    files.mkdir(parents=True)
    (files / "config.yaml").write_text(
        "_wandb:\n    value:\n        cli_version: 0.19.1\n"
        f"lr:\n    value: 0.001\nhub_token:\n    value: {SECRETS['github']}\n")
    (files / "output.log").write_text(f"login with token {SECRETS['github']}\nstep 5 loss 10.0\n")
    (files / "wandb-summary.json").write_text('{"_step": 5, "train/loss": 10.0}\n')
    (root / "incident.toml").write_text(f'title = "planted secrets {MARKUP} {SECRETS["hf2"]}"\ntimezone = "UTC"\n')
    return root


def _undone(text: str) -> str:
    """What a reader or a script gets back from a report file: HTML entities and JSON escapes
    (plotly's hover JSON writes `<` as \\u003c and `/` as \\u002f) undone."""
    text = html.unescape(text)
    text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    return text.replace("\\/", "/")


@pytest.fixture(scope="module")
def planted_report(tmp_path_factory, report_kernels) -> Path:
    inc = _planted_incident(tmp_path_factory.mktemp("planted") / "incident")
    return build_report(inc, tmp_path_factory.mktemp("planted-report"), progress=False, kernels=report_kernels)


def test_no_secret_in_any_report_file(planted_report):
    files = [f for f in planted_report.parent.rglob("*") if f.is_file() and f.name != "plotly.min.js"]
    # five pages, the index, five executed notebooks and a view of every cited evidence file
    views = [f for f in files if "evidence" in f.parts]
    assert len(files) == 11 + len(views) and len(views) >= 2
    for f in files:
        text = f.read_text(encoding="utf-8")
        for form in (text, _undone(text)):
            for name, secret in SECRETS.items():
                assert secret not in form, f"{name} secret leaked into {f.relative_to(planted_report.parent)}"
    # the evidence the secrets sat in is still shown, masked
    assert MASK in (planted_report.parent / "01_overview.html").read_text()  # the commands, masked


def test_markup_in_a_log_line_is_text(planted_report):
    for f in planted_report.parent.glob("*.html"):
        assert MARKUP not in f.read_text(encoding="utf-8"), f.name  # only ever escaped
    page = (planted_report.parent / "02_throughput_drop.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.browser
def test_markup_is_shown_not_run_in_the_browser(planted_report, browser):
    shown = {}

    def check(page, name):
        figures_rendered(page, name)
        shown[name] = MARKUP in page.inner_text("body")

    errors, dialogs = browser.open_pages(planted_report.parent, check)
    assert dialogs == [], "a <script> from the evidence ran"
    assert errors == []
    assert shown["02_throughput_drop"] and shown["index"]  # visible as text


def test_every_planted_source_reaches_the_report(tmp_path, planted_report):
    # The secrets sat in sources the kit reads: each file loads, and the pages show them masked.
    from dflash_postmortem import load_incident

    inc = load_incident(_planted_incident(tmp_path / "incident"))
    formats = {f.path: f.format for f in inc.load_report.files}
    assert {formats[p] for p in ("logs/ps.txt", "logs/apps.csv", "logs/operator.log", "logs/train.log")} == {
        "ps-snapshots", "nvidia-smi-query-csv", "shell-transcript", "training-log"}
    assert formats["wandb/run-20261130_052029-planted1/files/config.yaml"] == "wandb-config"
    assert formats["wandb/run-20261130_052029-planted1/files/output.log"] == "wandb-output-log"
    restart = (planted_report.parent / "03_failed_restart.html").read_text()
    assert f"--wandb-key {MASK} --api-key {MASK}" in html.unescape(restart)  # the ps view, masked
    index = html.unescape((planted_report.parent / "index.html").read_text())
    assert f"planted secrets {MARKUP} {MASK}" in index  # the title


def test_kernels_shared_by_two_reports_take_each_reports_own_masking(tmp_path, report_kernels):
    """One set of kernels serving a report asked not to mask (`--no-redact`) and then one that
    masks (`report A B`, the tests' shared kernels): each page runs with its own report's
    setting, not with the environment the kernel started in."""
    inc = _planted_incident(tmp_path / "incident")
    bare = build_report(inc, tmp_path / "bare", only=["01"], progress=False, redact_secrets=False, kernels=report_kernels)
    masked = build_report(inc, tmp_path / "masked", only=["01"], progress=False, kernels=report_kernels)
    executed = [(index.parent / "executed" / "01_overview.ipynb").read_text(encoding="utf-8") for index in (bare, masked)]
    assert SECRETS["hf"] in _undone(executed[0])
    assert SECRETS["hf"] not in _undone(executed[1]) and MASK in _undone(executed[1])


def test_a_masked_incident_carries_the_model_read_from_the_evidence_masked(tmp_path):
    """The model (attempts, states, ledger) is read from the evidence as written and shown
    masked: the masked incident takes it, masked, instead of building it again from masked
    frames; none of it holds a secret, and it is what the masked frames would give."""
    import dataclasses
    import warnings

    import dflash_postmortem as pm
    from dflash_postmortem.model import attempts, computed, kept
    from dflash_postmortem.model.attempts import READS
    from dflash_postmortem.present.redact import redact_incident

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(_planted_incident(tmp_path / "incident"))
    assert any(SECRETS["hf"] in str(c) for c in attempts(inc)["command"])
    kept.frames(inc)
    shown = redact_incident(inc)
    carried = computed.known(shown, "attempts", READS)
    assert carried is not None and not any(SECRETS["hf"] in str(c) for c in carried["command"])
    text = str(kept.frames(shown))
    assert not [name for name, s in SECRETS.items() if s in text]
    again = dataclasses.replace(shown)  # the masked frames, nothing carried
    assert str(kept.frames(again)) == text
    assert computed.known(redact_incident(pm.load_incident(tmp_path / "incident")), "attempts", READS) is None
