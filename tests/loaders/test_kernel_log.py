"""Kernel logs about GPUs (kernel_log.py, read through transcript/process_control.py): an Xid or a GPU
off the bus keeps its number, bus, PID and process, and its time, whatever prefix the paste put
before it. The messages are real (tests/fixtures/real-world/kernel/); the prefixes are the ones each
tool writes."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.kernel_log import sniff_kernel_log
from dflash_postmortem.loaders.transcript.process_control import kernel_stamp, read_line

XID_109 = "NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"
T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


def _stamp(line: str) -> dict:
    fact = read_line(line)
    assert fact is not None and fact["kind"] == "xid" and fact["xid"] == 109 and fact["pid"] == 1797828, line
    assert fact["bus"] == "PCI:0000:cb:00" and fact["process_name"] == "pt_main_thread"
    return kernel_stamp(fact["prefix"])


@pytest.mark.parametrize("prefix, naive, offset", [
    ("> [Fri Aug 30 11:43:14 2024] ", "2024-08-30 11:43:14", None),  # dmesg --ctime quoted in markdown
    ("192.168.11.119: kern: warning: [2026-04-22T21:27:51.291660856Z]: ", "2026-04-22 21:27:51.291660", 0),  # talosctl dmesg
    ("<3>1 2024-05-01T10:00:00.123456+00:00 gpu-node kernel - - - ", "2024-05-01 10:00:00.123456", 0),  # RFC 5424
    ("2024-05-01T10:00:00+0000 gpu-node kernel: ", "2024-05-01 10:00:00", 0),  # journalctl -o short-iso
    ("kern  :warn  : [Mon Aug  5 03:54:13 2024] ", "2024-08-05 03:54:13", None),  # dmesg -x -T
])
def test_an_xid_keeps_its_wall_clock_behind_any_prefix(prefix, naive, offset):
    wall = _stamp(prefix + XID_109)["wall"]
    assert (wall.naive, wall.offset_min) == (pd.Timestamp(naive), offset)


def test_uptime_and_syslog_prefixes():
    assert _stamp("<4>[ 1843.308145] " + XID_109) == {"uptime_s": 1843.308145}
    assert _stamp("kern  :err   : [ 1843.308145] " + XID_109) == {"uptime_s": 1843.308145}
    assert _stamp("> May 15 23:09:30.123456 gpu-node kernel: " + XID_109)["syslog"] == ("May", 15, "23:09:30")
    assert _stamp("kernel: " + XID_109) == {}  # a journal line cut to its message: no time


def test_unknown_process_and_old_forms():
    f = read_line("[14370.688139] NVRM: Xid (PCI:0000:0a:00): 45, pid='<unknown>', name=<unknown>, Ch 00000008")
    assert (f["xid"], f["pid"], f["process_name"], f["detail"]) == (45, None, None, "Ch 00000008")
    f = read_line("[24128.834365] NVRM: Xid (PCI:0000:01:00): 31, Ch 00000003, engmask 00000101, intr 10000000")
    assert (f["xid"], f["pid"], f["process_name"]) == (31, None, None)
    f = read_line("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149")
    assert (f["xid"], f["bus"], f["detail"]) == (45, "PCI:0000:dc:00", "Ch 00000001 caused by previous Xid 149")
    f = read_line("kernel: NVRM: Xid (PCI:...): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 11 (...)")  # bus hidden by the reporter
    assert (f["xid"], f["bus"], f["pid"]) == (145, None, None)


@pytest.mark.parametrize("line, bus", [
    ("[   49.261458] NVRM: GPU at 0000:01:00.0 has fallen off the bus.", "0000:01:00.0"),  # drivers before 2015
    ("[Mon Dec  8 10:00:00 2025] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.", "0000:3b:00.0"),
])
def test_a_gpu_off_the_bus_without_an_xid_names_its_bus(line, bus):
    f = read_line(line)
    assert (f["kind"], f["bus"]) == ("gpu_lost", bus)
    assert read_line("[   49.261458] NVRM: GPU at PCI:0000:01:00: GPU-760d0170-b7c5-6817-9414-6cc7112645de") is None


def test_a_quoted_dmesg_paste_is_a_kernel_log_on_one_clock(tmp_path):
    text = ("> [Fri Aug 30 11:11:22 2024] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context\n"
            f"> [Fri Aug 30 11:43:14 2024] {XID_109}\n")
    (tmp_path / "dmesg.txt").write_text(text, encoding="utf-8")
    assert sniff_kernel_log(tmp_path / "dmesg.txt", text.encode()) == 0.8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    ev = inc.events
    assert ev["kind"].tolist() == ["xid"] and ev["time"].tolist() == [T("2024-08-30 11:43:14")]
    assert inc.load_report.files[0].format == "kernel-log"


@pytest.mark.parametrize("prefix, month", [
    ("kwi 15 07:56:59 testowy kernel: ", 4),  # pl_PL
    ("Mär 15 07:56:59 host kernel: ", 3),  # de_DE
    ("févr. 15 07:56:59 host kernel: ", 2),  # fr_FR
    ("abr 15 07:56:59 host kernel: ", 4),  # es_ES, pt_BR
    ("giu 15 07:56:59 host kernel: ", 6),  # it_IT
    ("out 15 07:56:59 host kernel: ", 10),  # pt_BR
    ("апр 15 07:56:59 host kernel: ", 4),  # ru_RU
    ("4月 15 07:56:59 host kernel: ", 4),  # zh_CN, ja_JP
    ("> Dez  5 07:56:59 host kernel: ", 12),
])
def test_journal_months_in_the_locales_words(prefix, month):
    from dflash_postmortem.loaders.clock_text import month_number
    stamp = _stamp(prefix + XID_109)
    assert month_number(stamp["syslog"][0]) == month and stamp["syslog"][2] == "07:56:59"
    assert "syslog" not in _stamp("foo 15 07:56:59 host kernel: " + XID_109)  # not a month: no stamp


def _load(tmp_path, text: str, config: str | None = None):
    (tmp_path / "kern.log").write_text(text, encoding="utf-8")
    if config:
        (tmp_path / "incident.toml").write_text(config, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    rep = next(f for f in inc.load_report.files if f.path.endswith("kern.log"))
    return inc, rep


def test_a_polish_journal_takes_the_incidents_year(tmp_path):
    text = "kwi 15 07:56:59 testowy kernel: " + XID_109 + "\n4月 16 01:02:03 host kernel: " + XID_109 + "\n"
    inc, rep = _load(tmp_path, text, 'date = "2026-04-20"\n')
    assert inc.events["time"].tolist() == [T("2026-04-15 07:56:59"), T("2026-04-16 01:02:03")]
    assert not any("seconds since boot" in a for a in rep.assumptions)


@pytest.mark.parametrize("prefix, says", [
    ("kwi 15 07:56:59 testowy kernel: ", "carry no year"),
    ("kernel: ", "without a stamp"),
    ("19:15:34  ", "time of day only"),
    ("[ 1843.308145] ", "seconds since boot only"),
])
def test_the_report_says_why_a_kernel_line_has_no_time(tmp_path, prefix, says):
    inc, rep = _load(tmp_path, prefix + XID_109 + "\n")
    assert inc.events["time"].isna().all() and inc.events["xid"].tolist() == [109]
    assert any(says in a for a in rep.assumptions), rep.assumptions
    assert ("seconds since boot" in " ".join(rep.assumptions)) == (says == "seconds since boot only")


def test_an_xid_wrapped_onto_indented_lines_is_one_event(tmp_path):
    text = ("19:15:34  NVRM: Xid (PCI:0000:9a:00): 31, pid=477445, name=python3, channel 0x00000002, intr 00000000.\n"
            "          MMU Fault: ENGINE GRAPHICS GPC0 UNRECOGNIZED_CLIENT faulted @ 0x182400_0030198d.\n"
            "          Fault is of type UNRECOGNIZED_FAULT UNRECOGNIZED_ACCESS_TYPE\n"
            "19:15:35  NVRM: Xid (PCI:0000:1a:00): 13, Graphics Exception: ESR 0x57e7b0=0x81e0017\n"
            "19:15:36  sched: RT throttling activated\n"
            "          not part of any Xid\n")
    inc, rep = _load(tmp_path, text)
    ev = inc.events
    assert ev["xid"].tolist() == [31, 13] and ev["ref"].tolist() == ["kern.log:1", "kern.log:4"]
    assert ev["detail"].iloc[0] == ("channel 0x00000002, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 UNRECOGNIZED_CLIENT "
                                    "faulted @ 0x182400_0030198d. Fault is of type UNRECOGNIZED_FAULT UNRECOGNIZED_ACCESS_TYPE")
    assert ev["detail"].iloc[1] == "Graphics Exception: ESR 0x57e7b0=0x81e0017"
    assert (rep.parsed, rep.n_skipped) == (4, 2)  # the sched line and the indented line after it


def test_an_xid_takes_the_uuid_the_driver_printed_for_its_bus(tmp_path):
    from dflash_postmortem.loaders.transcript.process_control import read_gpu_identity
    uuid = "GPU-fb51809b-350a-99db-67b5-e16fc6d498ab"
    assert read_gpu_identity(f"[Mon Aug  5 03:54:13 2024] NVRM: GPU at PCI:0000:3b:00: {uuid}") == {"bus": "PCI:0000:3b:00", "uuid": uuid}
    assert read_gpu_identity("NVRM: GPU Board Serial Number: 1652923017935") == {"serial": "1652923017935"}
    assert read_gpu_identity("NVRM: GPU Board Serial Number:") == {"serial": None}
    text = (f"[Mon Aug  5 03:54:13 2024] NVRM: GPU at PCI:0000:cb:00: {uuid}\n"
            "[Mon Aug  5 03:54:13 2024] NVRM: GPU Board Serial Number: 1652923017935\n"
            f"[Mon Aug  5 03:54:14 2024] {XID_109}\n"
            "[Mon Aug  5 03:54:15 2024] NVRM: GPU Board Serial Number:\n"  # names no GPU: skipped
            "[Mon Aug  5 03:54:16 2024] NVRM: Xid (PCI:0000:3d:00): 43, pid=35521, Ch 00000008\n")
    inc, rep = _load(tmp_path, text)
    ev = inc.events.set_index("xid")
    assert ev.loc[109, "uuid"] == uuid and ev.loc[109, "board_serial"] == "1652923017935"
    assert ev.loc[109, "bus"] == "PCI:0000:cb:00" and pd.isna(ev.loc[43, "uuid"])  # the bus stays as written
    assert "gpu" not in inc.events  # a bus is not a GPU index
    assert (rep.parsed, rep.n_skipped) == (4, 1)


@pytest.mark.parametrize("line", [
    # gpud's report (dmesg -T), after six Xid 45 lines
    "[Sat Oct 12 18:38:44 2024] INFO: task cache_mgr_event:620917 blocked for more than 120 seconds.",
    # syslog and journalctl forms of the same message
    "Oct 12 18:38:44 gpu-node-7 kernel: INFO: task cache_mgr_event:620917 blocked for more than 120 seconds.",
    "[1523634.119840] INFO: task cache_mgr_event:620917 blocked for more than 120 seconds.",
])
def test_a_hung_task_names_its_process(line):
    """The hung-task detector's word that a process sat in uninterruptible sleep (state D) past its
    timeout: a process stuck in the kernel (beside NVRM errors, in a driver that does not answer)."""
    fact = read_line(line)
    assert fact is not None and fact["kind"] == "hung_task"
    assert (fact["pid"], fact["process_name"]) == (620917, "cache_mgr_event")
