"""Figure data: what the overview's lifetimes panel draws, on the real stall capture."""

import warnings
from pathlib import Path

import dflash_postmortem as pm
from dflash_postmortem import views
from dflash_postmortem.detect import detect
from dflash_postmortem.plots import lifetimes

STALL = Path(__file__).resolve().parents[1] / "data" / "incidents" / "h200-1gpu-stall"


def test_a_pool_of_compile_workers_is_one_bar_and_one_row():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(STALL)
    life = lifetimes(inc)
    pools = life[life["what"].str.contains("__main__.py --pickler=torch._inductor")]
    # torch's inductor compile workers of each run: 17 processes each, drawn as one bar per run
    assert pools["what"].str.startswith("17 PIDs ").all() and len(pools) == 2
    trainers = life[life["what"].str.contains("dflash_postmortem.replay.train")]
    assert [w.split()[1] for w in trainers["what"]] == ["474", "887"]
    table = views.process_view(inc, detect(inc))
    # one row per run's pool, as in the figure
    assert table["pid"].str.startswith("17 processes (").sum() == 2
    assert "474" in set(table["pid"]) and "887" in set(table["pid"])
