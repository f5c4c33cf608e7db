"""The incident's one clock: sources' times put on UTC (align.py: zones, dates for times of day,
offsets from incident.toml), each host's clock against the others' (host_skew.py), and which
host a row came from (hosts.py).

May import (docs/architecture.md, "Who may import whom"): the contracts (the package's top-level modules other than cli and recorder).
"""
