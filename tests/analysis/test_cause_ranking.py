"""Root-cause candidates ranked by the evidence lines that back them, on the real captures."""

from dflash_postmortem import Incident
from dflash_postmortem.analysis import cause_ranking as ranking
from dflash_postmortem.detect import detect


def test_the_launch_line_backs_the_configuration_difference(bundled_incident, bundled_findings):
    assert ranking.rank_causes(bundled_incident, bundled_findings).to_dict("records") == [{
        "drop": "throughput fell from 146.8K to 74.9K tok/s (0.51 of baseline)",
        "candidate": "configuration differs from run baseline: --fast-linear-attn 0 --use-reentrant 0",
        "evidence lines": 1, "evidence": ["logs/operator.log:3"]}]


def test_each_candidate_cites_the_lines_that_say_it(seed_incident, seed_findings):
    ranked = ranking.rank_causes(seed_incident, seed_findings)
    assert [c.split(":")[0] for c in ranked["candidate"]] == [
        "configuration differs from run baseline", "fast path missing", "compile error", "thread crash",
        "optimisation inactive"]
    assert ranked["evidence"].tolist() == [["logs/operator.log:3"], ["logs/train_opt.log:5"], ["logs/train_opt.log:21"],
                                           ["logs/train_opt.log:21"], ["logs/train_opt.log:7"]]
    assert ranked["evidence lines"].is_monotonic_decreasing


def test_no_drop_no_candidates():
    assert list(ranking.rank_causes(Incident(), detect(Incident())).columns) == ranking.COLUMNS
