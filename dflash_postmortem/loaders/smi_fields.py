"""One table mapping nvidia-smi field names to canonical columns, units and scales.

Query CSV headers, dmon columns, `-q` labels and NVML samples all pass through here, so a unit
or a field name is handled in exactly one place (the nvitop habit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Field:
    column: str  # canonical or extra column name in the gpus / gpu_processes frame
    kind: str  # "time", "int", "float", "str"
    unit: str | None = None  # the unit nvidia-smi prints after the value, if any
    scale: float = 1.0  # multiply to reach the column's unit


# --query-gpu / --query-compute-apps names (and their aliases) -> column.
QUERY_FIELDS: dict[str, Field] = {
    "timestamp": Field("time", "time"),
    "index": Field("gpu", "int"),
    "uuid": Field("uuid", "str"),
    "gpu_uuid": Field("uuid", "str"),
    "name": Field("name", "str"),
    "gpu_name": Field("name", "str"),
    "gpu_name_short": Field("name", "str"),
    "pci.bus_id": Field("pci_bus_id", "str"),
    "gpu_bus_id": Field("pci_bus_id", "str"),
    "driver_version": Field("driver_version", "str"),
    "pstate": Field("pstate", "str"),
    "memory.used": Field("memory_used_mib", "float", "MiB"),
    "memory.total": Field("memory_total_mib", "float", "MiB"),
    "memory.free": Field("memory_free_mib", "float", "MiB"),
    "memory.reserved": Field("memory_reserved_mib", "float", "MiB"),
    "utilization.gpu": Field("util_gpu_pct", "float", "%"),
    "utilization.memory": Field("util_mem_pct", "float", "%"),
    "temperature.gpu": Field("temp_c", "float"),
    "temperature.memory": Field("temp_mem_c", "float"),
    "power.draw": Field("power_w", "float", "W"),
    "power.draw.instant": Field("power_w", "float", "W"),
    "power.draw.average": Field("power_avg_w", "float", "W"),
    "power.limit": Field("power_limit_w", "float", "W"),
    "clocks.sm": Field("sm_clock_mhz", "float", "MHz"),
    "clocks.current.sm": Field("sm_clock_mhz", "float", "MHz"),
    "clocks.mem": Field("mem_clock_mhz", "float", "MHz"),
    "clocks.current.memory": Field("mem_clock_mhz", "float", "MHz"),
    "clocks.gr": Field("gr_clock_mhz", "float", "MHz"),
    "clocks.current.graphics": Field("gr_clock_mhz", "float", "MHz"),
    "fan.speed": Field("fan_pct", "float", "%"),
    "pid": Field("pid", "int"),
    "process_name": Field("process_name", "str"),
    "used_memory": Field("used_memory_mib", "float", "MiB"),
    "used_gpu_memory": Field("used_memory_mib", "float", "MiB"),
}

# What nvidia-smi prints instead of a value it does not have: all become missing, never 0.
MISSING = {
    "", "N/A", "[N/A]", "[Not Supported]", "Not Supported", "[Unknown Error]", "-",
    "[Requested functionality has been deprecated]", "[Insufficient Permissions]", "[GPU is lost]",
    "[Not Found]", "Unknown Error",
}


def field_for(name: str) -> Field | None:
    """The table entry for a header cell such as `memory.used [MiB]` or ` utilization.gpu`."""
    key = name.strip().split(" [", 1)[0].strip().lower()
    return QUERY_FIELDS.get(key)


def parse_numbers(values: pd.Series, unit: str | None, scale: float) -> tuple[pd.Series, pd.Series]:
    """Strip a unit and parse to float. Returns (numbers, bad) where bad marks unparseable text.

    Vectorised: one pass of string operations over the whole column, not a Python loop per cell.
    """
    s = values.astype("string").str.strip()
    missing = s.isna() | s.isin(MISSING)
    if unit:
        s = s.str.removesuffix(unit).str.strip()
    nums = pd.to_numeric(s.where(~missing), errors="coerce").astype("float64")
    bad = nums.isna() & ~missing
    if scale != 1.0:
        nums = nums * scale
    return nums.where(~missing, np.nan), bad
