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
