"""Everything a reader sees, in words, tables and figures: the sentences (sentences.py: what
happened, the headlines, the verdicts), the terminal's `inspect` and load report
(terminal_view.py), the tables (tables.py), the figures
(figures.py), the evidence views a citation opens (evidence_views.py), and the masking of
secrets in all of them (redact.py).

May import (docs/architecture.md, "Who may import whom"): the contracts, clock/, loaders/ (the encodings and terminal text an evidence view
reads its file with), model/, detect/, analysis/.
"""
