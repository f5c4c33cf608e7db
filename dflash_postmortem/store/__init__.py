"""The Parquet store of a large incident: `ingest` converts each source once, DuckDB (one
machine) or Dask (a cluster) query it, and a window of it comes back as the canonical frames."""
