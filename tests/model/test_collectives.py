"""A collective's number in its group counts the collectives its ranks had met in before it: one
numbered in the hundreds or more shows an attempt that trained, though no line shows a step."""

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.model import attempts

START = "2024-05-07 15:51:09,140 - root - INFO - Starting training step on epoch 3\n"
WATCHDOG = ("[E ProcessGroupNCCL.cpp:457] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
            "OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) ran for 1800946 milliseconds "
            "before timing out.\n")


@pytest.mark.parametrize("seq, trained, kind", [(1132079, True, "training_died"), (7, False, "failed_restart")])
def test_a_collective_numbered_in_the_hundreds_shows_the_attempt_trained(tmp_path, seq, trained, kind):
    """ALLREDUCE #1132079 (ai2cm/ace #348's ranks after `Starting training step on epoch 3`): a
    death while training; #7 could be start-up's own (DDP's parameter check and broadcasts): a
    start that never came up."""
    (tmp_path / "train.log").write_text(START + WATCHDOG.format(seq=seq))
    inc = pm.load_incident(tmp_path)
    a = attempts(inc)
    assert len(a) == 1 and pd.notna(a["first_step"].iloc[0]) is trained
    found = pm.detect(inc)
    assert found["kind"].tolist() == [kind]
    assert f"{found['start'].iloc[0]:%H:%M:%S}" == "15:51:09"
