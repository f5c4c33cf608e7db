"""The notebooks' glue (dflash_postmortem.report.notebook): tables as a reader wants them, secrets masked
before anything is shown, the cache shared by the report's kernels and JupyterLab."""

import html
import re

import pandas as pd
import pyarrow.parquet as pq

from dflash_postmortem.present.redact import MASK
from dflash_postmortem.report import cache as report_cache
from dflash_postmortem.report import notebook
from dflash_postmortem.report.notebook import REDACT_ENV, cell_text, frame_html


def test_a_table_has_no_index_wrapped_text_and_no_math(bundled_dir, monkeypatch):
    monkeypatch.chdir(bundled_dir.parent)  # the kernel's folder: links are relative to it
    df = pd.DataFrame({"time": pd.to_datetime(["2026-11-30 05:22:57.687"], utc=True),
                       "command": ["$ kill -TERM $(cat /tmp/capture2/run/regressed.pid)"],
                       "evidence": ["logs/operator.log:5, logs/gone.log:1"], "tokens": [8966020.0]})
    page = frame_html(df, bundled_dir)
    assert "<th>time</th><th>command</th>" in page and "<th></th>" not in page  # no 0..N index
    assert 'class="pm-table tex2jax_ignore mathjax_ignore"' in page  # MathJax leaves `$` alone
    assert "<td>05:22:57</td>" in page  # to the second
    assert "<td>$ kill -TERM $(cat /tmp/capture2/run/regressed.pid)</td>" in page  # whole, never cut
    assert "<td>8,966,020</td>" in page
    # the ref to a file of the incident opens it in JupyterLab; a ref to no file stays text
    name = bundled_dir.name
    assert re.search(rf'<a class="pm-ref" data-ref="logs/operator.log:5" href="{name}/logs/operator.log">', page)
    assert "logs/gone.log:1</td>" in page


def test_a_named_index_is_a_column_and_times_of_several_days_carry_the_date():
    df = pd.DataFrame({"t": pd.to_datetime(["2026-11-30 23:59:59", "2026-12-01 00:00:01"], utc=True)},
                             index=pd.Index([1, 2], name="rank"))
    page = frame_html(df)
    assert "<th>rank</th><th>t</th>" in page
    assert "<td>2026-11-30 23:59:59</td>" in page and "<td>2026-12-01 00:00:01</td>" in page


def test_a_long_cell_is_cut_with_an_ellipsis_and_whole_on_hover():
    """One rule for every table: past CELL_CHARS a cell ends in an ellipsis and its `title` holds
    the whole text (escaped, masked); a shorter cell is shown as it is."""
    whole = ("nohup python3 -m dflash.train --run-name regressed --use-reentrant 0 --draft-layer-ckpt 1 "
             "--lm-head-opt 0 --seconds 80 --hf-token hf_AbCdEfGhIjKlMnOpQrStUvWxYz "
             "> /workspace/logs/train_regressed_with_a_long_name.log 2>&1 < /dev/null &")
    assert len(whole) > notebook.CELL_CHARS
    page = frame_html(pd.DataFrame({"command": [whole, "ls -l logs/"]}))
    cut = re.search(r'<td><span title="([^"]*)">([^<]*)</span></td>', page)
    assert cut is not None, page
    title, shown = cut.group(1), cut.group(2)
    assert shown.endswith("…") and len(html.unescape(shown)) == notebook.CELL_CHARS
    assert title.startswith("nohup python3 -m dflash.train") and title.endswith("&lt; /dev/null &amp;")
    assert f"--hf-token {MASK}" in title and "hf_AbCd" not in page
    assert "<td>ls -l logs/</td>" in page


def test_cells_read_as_numbers_the_evidence_supports():
    assert cell_text(0.51234) == "0.512" and cell_text(146843.7) == "146,844" and cell_text(float("nan")) == ""
    assert cell_text(["a:1", "b:2"]) == "a:1, b:2" and cell_text(pd.NA) == "" and cell_text(7) == "7"


def test_secrets_are_masked_unless_the_report_says_not_to(monkeypatch):
    df = pd.DataFrame({"command": ["python train.py --hf-token hf_AbCdEfGhIjKlMnOpQrStUvWxYz"]})
    assert f"--hf-token {MASK}" in frame_html(df) and "hf_AbCd" not in frame_html(df)
    monkeypatch.setenv(REDACT_ENV, "0")
    assert "hf_AbCdEfGhIjKlMnOpQrStUvWxYz" in frame_html(df)


def test_load_masks_what_the_cache_keeps_whole(tmp_path, monkeypatch, bundled_dir):
    import shutil

    monkeypatch.setenv(report_cache.CACHE_ENV, str(tmp_path / "cache"))
    inc_dir = tmp_path / "incident"
    shutil.copytree(bundled_dir, inc_dir)
    with (inc_dir / "logs" / "operator.log").open("a") as fh:
        fh.write("[2026-11-30T05:25:11.000Z] $ export WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567\n")
    shown, _ = notebook.load(str(inc_dir))
    raw, _ = notebook.load_cached(str(inc_dir))
    key = "0123456789abcdef0123456789abcdef01234567"
    assert not shown.events["message"].str.contains(key, regex=False).any()
    assert shown.events["message"].str.contains(f"WANDB_API_KEY={MASK}", regex=False).any()
    assert raw.events["message"].str.contains(key, regex=False).any()  # the cache keeps the evidence as read
    # ... and the masked copy every page shows, which holds no secret
    masked = sorted((tmp_path / "cache").glob("*-masked"))
    assert len(masked) == 1 and len(list((tmp_path / "cache").iterdir())) == 2
    whole = masked[0].with_name(masked[0].name.replace("-masked", ""))

    def holds_key(entry) -> bool:
        return any(key in str(pq.read_table(p).to_pylist()) for p in entry.glob("*.parquet")) or \
            key.encode() in (entry / "incident.json").read_bytes()

    assert not holds_key(masked[0]) and holds_key(whole)
    again, _ = notebook.load(str(inc_dir))  # read back, not masked again
    assert again.events["message"].tolist() == shown.events["message"].tolist()


def test_a_run_config_of_booleans_reads_back_from_the_cache(tmp_path, monkeypatch, repo_dir):
    """A wandb run's config holds booleans (`use_reentrant: false`): the cache must read them back,
    or every page of a report loads the incident from the evidence again."""
    monkeypatch.setenv(report_cache.CACHE_ENV, str(tmp_path / "cache"))
    folder = str(repo_dir / "data" / "incidents" / "h200-1gpu-stall")
    first, found = notebook.load_cached(folder)
    again, found_again = notebook.load_cached(folder)
    assert not [n for n in again.load_report.notes if "not trusted" in n]
    assert again.runs["stalled"].config["use_reentrant"] is True  # the kit's trainer: `--use-reentrant 1`
    assert again.runs["stalled"].config == first.runs["stalled"].config
    assert found_again["id"].tolist() == found["id"].tolist()


def test_a_flag_reads_as_a_word_and_a_quoted_command_in_code_style():
    import numpy as np

    from dflash_postmortem.report.notebook import cell_text, frame_html

    assert (cell_text(True), cell_text(np.bool_(False)), cell_text(1), cell_text(0.5)) == ("yes", "no", "1", "0.5")
    table = frame_html(pd.DataFrame({"bookkeeping": [True, False], "said": ["stuck after `Loading target`", "x"]}))
    assert "<td>yes</td>" in table and "<td>no</td>" in table and "True" not in table
    assert "stuck after <code>Loading target</code>" in table and "`" not in table
