"""What the pages compute from the findings: the throughput levels a reader weighs
(throughput_levels.py), the root-cause candidates ranked by their evidence (cause_ranking.py),
which source to read where several saw the same thing (source_choice.py), replay runs against
their baseline (replay_ab.py), and the ordered timeline with its impact (timeline.py).

May import (docs/architecture.md, "Who may import whom"): the contracts, model/, detect/.
"""
