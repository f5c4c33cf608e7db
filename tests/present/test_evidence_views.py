"""Evidence refs found in text, the cited lines read in the file's own encoding, and the report's
file views: line-numbered, masked, escaped, windowed for a long file."""

import html
import re

from dflash_postmortem.present.evidence_views import (
    VIEWS,
    WINDOW,
    Ref,
    cited_line,
    link_refs,
    parse_ref,
    view_href,
    write_file_views,
)
from dflash_postmortem.present.redact import MASK


def test_refs_parse_and_link_only_files_that_exist(bundled_dir):
    assert parse_ref("logs/operator.log:9") == Ref("logs/operator.log", 9)
    assert parse_ref("no ref here") is None
    text = html.escape("05:22:17 kill failed, see logs/operator.log:9 and logs/gone.log:3 <b>")
    linked = link_refs(text, bundled_dir, view_href)
    # the real file's ref is a link to its view; a time and a missing file stay text
    assert linked.count("<a ") == 1
    assert '<a class="pm-ref" data-ref="logs/operator.log:9" href="evidence/logs/operator.log.html#L9">' in linked
    assert "05:22:17" in linked and "logs/gone.log:3" in linked and "&lt;b&gt;" in linked


def test_the_cited_line_is_the_files_line_in_its_own_encoding(tmp_path, bundled_dir):
    lines = (bundled_dir / "logs" / "operator.log").read_text().split("\n")
    assert cited_line(bundled_dir, "logs/operator.log:9") == lines[8]
    # a PowerShell redirect: UTF-16 with a byte order mark, CRLF; and a secret on the line
    (tmp_path / "ps.txt").write_bytes("first\r\nexport HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWx\r\n".encode("utf-16"))
    assert cited_line(tmp_path, "ps.txt:1") == "first"
    assert cited_line(tmp_path, "ps.txt:2") == f"export HF_TOKEN={MASK}"
    assert cited_line(tmp_path, "ps.txt:2", redacted=False) == "export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWx"
    assert cited_line(tmp_path, "ps.txt:9") is None and cited_line(tmp_path, "gone.txt:1") is None


def test_a_view_numbers_every_line_marks_the_cited_ones_and_escapes(tmp_path):
    src = tmp_path / "incident"
    (src / "logs").mkdir(parents=True)
    (src / "logs" / "t.log").write_text("ok\n<script>alert(1)</script>\n--password hunter2-x\n\x1b[31mred\x1b[0m\n")
    out = tmp_path / "report"
    written = write_file_views(src, [Ref("logs/t.log", 2), Ref("logs/t.log", 3)], out)
    page = written["logs/t.log"].read_text()
    assert written["logs/t.log"] == out / VIEWS / "logs" / "t.log.html"
    assert re.findall(r'<tr id="L(\d+)"( class="cited")?>', page) == [("1", ""), ("2", ' class="cited"'), ("3", ' class="cited"'),
                                                                       ("4", ""), ("5", "")]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert f"--password {MASK}" in page and "hunter2" not in page
    assert ">red<" in page and "\x1b" not in page  # terminal colours removed
    assert 'href="../../index.html"' in page  # back to the report from two folders down


def test_a_long_file_shows_windows_around_the_cited_lines(tmp_path):
    (tmp_path / "big.log").write_text("".join(f"line {i}\n" for i in range(1, 20001)))
    page = write_file_views(tmp_path, [Ref("big.log", 10000), Ref("big.log", 3)], tmp_path / "out")["big.log"].read_text()
    shown = [int(n) for n in re.findall(r'<tr id="L(\d+)"', page)]
    assert shown == [*range(1, 3 + WINDOW + 1), *range(10000 - WINDOW, 10000 + WINDOW + 1)]
    assert f"lines {3 + WINDOW + 1:,}–{10000 - WINDOW - 1:,} not shown" in page
    assert "line 10000<" in page


def test_a_binary_file_lists_its_cited_records(tmp_path):
    (tmp_path / "run.wandb").write_bytes(bytes(range(256)) * 8)
    page = write_file_views(tmp_path, [Ref("run.wandb", 12)], tmp_path / "out")["run.wandb"].read_text()
    assert re.findall(r'<tr id="L(\d+)" class="cited">', page) == ["12"] and "record 12" in page
