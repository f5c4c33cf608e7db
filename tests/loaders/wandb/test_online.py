"""A run on a wandb server, read through a recorded API double (never a server)."""

from __future__ import annotations

import dflash_postmortem as pm


class FakeRun:
    """A recorded API double (NOT a server): the shape of wandb.apis.public.Run that
    load_wandb_run uses, with three history rows."""

    id, name, project, entity, state = "zz9", "online-run", "dflash", "team", "crashed"
    config = {"target_gpu": 0}
    summary = {"train/tok_per_s": 12400.0}
    metadata = {"host": "node7", "program": "train.py", "args": ["--x", "1"]}
    created_at = "2026-11-30T05:00:00Z"
    rows = [{"_step": i, "_timestamp": 1796016000.0 + i, "tok/s": v, "note": "text"}
            for i, v in enumerate((21500.0, 21400.0, 12400.0))]

    def __init__(self):
        self.calls = []

    def scan_history(self, keys=None, page_size=1000, min_step=0, max_step=None, use_cache=True):
        self.calls.append("scan_history")
        return iter(self.rows)

    def beta_scan_history(self, **kw):
        raise AssertionError("a deprecated alias in this SDK: scan_history is the full path")

    def history(self, samples=500, pandas=True, **kw):
        self.calls.append("history")
        return self.rows[::2]


class FakeApi:
    def __init__(self):
        self.run_obj = FakeRun()

    def run(self, path):
        assert path == "team/dflash/zz9"
        return self.run_obj


def test_online_api_reads_full_history_from_a_recorded_double():
    api = FakeApi()
    inc = pm.load_wandb_run("team/dflash/zz9", api=api, online=True)
    assert api.run_obj.calls == ["scan_history"]
    tok = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]
    assert tok["value"].tolist() == [21500.0, 21400.0, 12400.0] and tok["key"].eq("tok/s").all()
    info = inc.runs["online-run"]
    assert (info.host, info.id, info.exit_record) == ("node7", "zz9", None)
    rep = inc.load_report.files[0]
    assert rep.read == 3 and rep.balanced and not any(n.startswith("sampled") for n in rep.notes)


def test_online_api_sampled_only_when_asked():
    api = FakeApi()
    inc = pm.load_wandb_run("https://wandb.ai/team/dflash/runs/zz9", api=api, sampled=True, online=True)
    assert api.run_obj.calls == ["history"]
    assert any(n.startswith("sampled") for n in inc.load_report.files[0].notes)
    assert len(inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]) == 2
