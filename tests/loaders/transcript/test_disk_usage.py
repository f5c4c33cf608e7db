"""`df` in a session's output: the full file systems it shows, as `disk_full` events.

fixtures/df_full.log is a real transcript (the kit's own form, `replay.scenarios.Transcript`) of GNU
coreutils 9.1's df in six forms, recorded on a development machine over two tmpfs volumes made full
for it: `full` (1 MiB of zeros in a 1 MiB volume) and `inodes` (eight files in a volume of eight
inodes), beside the machine's root file system at 33 %."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem.loaders.transcript.disk_usage import disk_full_events
from dflash_postmortem.loaders.transcript.session import Command

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_every_form_of_df_shows_the_full_volumes_and_not_the_others(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "operator.log").write_bytes((FIXTURES / "df_full.log").read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    full = inc.events[inc.events["kind"] == "disk_full"]
    # -h; plain (1K-blocks: `full` at 100 %, `inodes` at 0 %: one); -i; -hT (and `/` at 33 %: one); -P; --output
    assert full["ref"].tolist() == ["logs/operator.log:3", "logs/operator.log:6", "logs/operator.log:10",
                                    "logs/operator.log:13", "logs/operator.log:17", "logs/operator.log:20"]
    assert full["path"].tolist() == ["/tmp/dfrec/full"] * 2 + ["/tmp/dfrec/inodes"] + ["/tmp/dfrec/full"] * 3
    assert full["message"].iloc[0] == "tmpfs mounted on /tmp/dfrec/full: 100% of its space used (1.0M of 1.0M, 0 available)"
    assert full["message"].iloc[2] == "tmpfs mounted on /tmp/dfrec/inodes: 100% of its inodes used (8 of 8, 0 available)"
    assert full["message"].iloc[4] == "tmpfs mounted on /tmp/dfrec/full: 100% of its space used (1024 of 1024, 0 available)"
    assert full["time"].iloc[0] == pd.Timestamp("2026-12-05 05:19:09.217", tz="UTC")


def _rows(*lines: str) -> list[dict]:
    c = Command(line=1, text="df -hT", time=pd.Timestamp("2026-12-05", tz="UTC"),
                output=[(n, s) for n, s in enumerate(lines, start=2)])
    return disk_full_events(c, lambda n: f"t.log:{n}")


def test_images_always_at_100_percent_and_file_systems_of_no_size_are_not_full():
    """Ubuntu's df lists each snap as a squashfs on a loop device, always at 100 %; a CD is the
    same; Linux's pseudo file systems have no size. A loop device that is a writable disk (a
    Codespace's /workspaces) fills as any other."""
    said = _rows("Filesystem     Type      Size  Used Avail Use% Mounted on",
                 "/dev/loop0     squashfs   64M   64M     0 100% /snap/core20/2105",
                 "/dev/loop3     iso9660   4.0G  4.0G     0 100% /media/cdrom",
                 "/dev/loop4     ext4       32G   30G     0 100% /workspaces",
                 "proc           proc         0     0     0    - /proc",
                 "/dev/nvme0n1p2 ext4      916G  870G  100M 100% /",
                 "/dev/nvme1n1   xfs       3.5T  3.2T  290G  92% /data")
    assert [(r["message"], r["ref"], r["path"]) for r in said] == [
        ("/dev/loop4 mounted on /workspaces: 100% of its space used (30G of 32G, 0 available)", "t.log:5", "/workspaces"),
        ("/dev/nvme0n1p2 mounted on /: 100% of its space used (870G of 916G, 100M available)", "t.log:7", "/")]
    assert said[0]["kind"] == "disk_full" and said[0]["time"] == pd.Timestamp("2026-12-05", tz="UTC")


def test_a_device_name_df_put_on_a_line_of_its_own_and_a_mount_point_with_blanks():
    """Older df breaks a long device name onto a line of its own (the row's numbers, on the next
    line, are what is cited); a mount point may hold blanks. After the table, other output is no
    row of it."""
    said = _rows("Filesystem            Size  Used Avail Use% Mounted on",
                 "/dev/mapper/vg_data-lv_checkpoints_for_the_sweep",
                 "                      2.0T  2.0T     0 100% /mnt/scratch space",
                 "total 12",
                 "-rw-r--r-- 1 root root 0 Dec  5 05:13 step_200.pt")
    assert [(r["message"], r["ref"], r["path"]) for r in said] == [
        ("/dev/mapper/vg_data-lv_checkpoints_for_the_sweep mounted on /mnt/scratch space: 100% of its space used "
         "(2.0T of 2.0T, 0 available)", "t.log:4", "/mnt/scratch space")]
