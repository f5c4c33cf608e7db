"""Loading an incident (load.py, the one entry point) and the Parquet store of a large one:
`ingest` converts each source once, DuckDB (one machine) or Dask (a cluster) query it, a window
of it comes back as the canonical frames, and the fleet detectors run as SQL over it.

May import: the contracts, clock/, loaders/, model/, detect/ (docs/architecture.md, "Who may
import whom").
"""
