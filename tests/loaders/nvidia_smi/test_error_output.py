"""A capture holding only nvidia-smi's error output."""

from __future__ import annotations

from support.captures import only_report, write

import dflash_postmortem as pm


def test_quoted_paste_of_an_error(tmp_path, fixtures_dir):
    """A '> ' quoted reply that quotes the error keeps its event and bus id."""
    text = (fixtures_dir / "smi-error/device-handle-unknown-error-nospace.txt").read_text().splitlines()
    p = write(tmp_path, "reply.md", ["> I get this after the job died:", ">", *[f"> {ln}" for ln in text]])
    inc = pm.load_nvidia_smi(p)
    only_report(inc)
    (ev,) = inc.events.itertuples()
    assert ev.smi_error == "device_handle" and ev.pci_bus_id == "0000:07:00.0" and ev.ref.endswith("reply.md:3")
