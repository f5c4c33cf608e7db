"""The public API (`import dflash_postmortem as pm`): every name it lists is what its module
defines, and importing the package or the replay trainer brings no pandas (each name is imported
when first used: the trainer and every rank torchrun starts would pay ~0.5 s of CPU for it)."""

import subprocess
import sys

import dflash_postmortem as pm


def test_every_public_name_is_its_modules_own():
    import importlib

    import dflash_postmortem.detect  # noqa: F401  the subpackage, imported: it names itself on the package

    detect = importlib.import_module("dflash_postmortem.detect").detect
    assert pm.detect is detect and callable(pm.detect)  # still the function the subpackage exports
    assert pm.attempts is importlib.import_module("dflash_postmortem.model.attempts").attempts
    assert pm.ledger is importlib.import_module("dflash_postmortem.model.ledger").ledger
    assert pm.timeline is importlib.import_module("dflash_postmortem.analysis.timeline").timeline
    assert pm.load_incident is importlib.import_module("dflash_postmortem.store.load").load_incident
    assert all(getattr(pm, name) is not None for name in pm.__all__)
    assert set(pm.__all__) <= set(dir(pm))


def test_the_package_and_the_trainer_import_without_pandas():
    code = ("import sys, dflash_postmortem, dflash_postmortem.replay.train\n"
            "print(sorted(m for m in ('pandas', 'pyarrow', 'duckdb') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
