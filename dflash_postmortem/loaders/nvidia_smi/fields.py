"""One table mapping nvidia-smi field names to canonical columns, units and scales.

Query CSV headers, dmon columns, `-q` labels, `-q -x` elements and NVML samples all name their
fields through `QUERY_FIELDS`, so a unit or a column name is decided in exactly one place (the
nvitop habit). The other tables below only say which query field a label of another form means.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...clock import align


@dataclass(frozen=True)
class Field:
    column: str  # canonical or extra column name in the gpus / gpu_processes frame
    kind: str  # "time", "int", "float", "str"
    unit: str | None = None  # the unit nvidia-smi prints after the value, if any
    scale: float = 1.0  # multiply to reach the column's unit


# --query-gpu / --query-compute-apps names (and their aliases) -> column.
# `power.draw` is what the default table shows as Pwr:Usage (a one-second average on R530+
# drivers); the instantaneous reading is kept apart so the two are never mixed in one column.
QUERY_FIELDS: dict[str, Field] = {
    "timestamp": Field("time", "time"),
    "index": Field("gpu", "int"),
    "uuid": Field("uuid", "str"),
    "gpu_uuid": Field("uuid", "str"),
    "name": Field("name", "str"),
    "gpu_name": Field("name", "str"),
    "gpu_name_short": Field("name", "str"),
    "serial": Field("serial", "str"),
    "gpu_serial": Field("serial", "str"),
    "pci.bus_id": Field("pci_bus_id", "str"),
    "gpu_bus_id": Field("pci_bus_id", "str"),
    "driver_version": Field("driver_version", "str"),
    "pstate": Field("pstate", "str"),
    "persistence_mode": Field("persistence_mode", "str"),
    "driver_model.current": Field("driver_model", "str"),
    "compute_mode": Field("compute_mode", "str"),
    "mig.mode.current": Field("mig_mode", "str"),
    # Memory errors since the driver loaded: an uncorrectable one crashes what used the page.
    "ecc.errors.uncorrected.volatile.total": Field("ecc_uncorrected_volatile", "float"),
    "ecc.errors.corrected.volatile.total": Field("ecc_corrected_volatile", "float"),
    "ecc.errors.uncorrected.volatile.dram": Field("ecc_uncorrected_volatile_dram", "float"),
    "ecc.errors.uncorrected.volatile.sram": Field("ecc_uncorrected_volatile_sram", "float"),
    "ecc.errors.corrected.volatile.dram": Field("ecc_corrected_volatile_dram", "float"),
    "ecc.errors.corrected.volatile.sram": Field("ecc_corrected_volatile_sram", "float"),
    "remapped_rows.pending": Field("remapped_rows_pending", "str"),
    "memory.used": Field("memory_used_mib", "float", "MiB"),
    "memory.total": Field("memory_total_mib", "float", "MiB"),
    "memory.free": Field("memory_free_mib", "float", "MiB"),
    "memory.reserved": Field("memory_reserved_mib", "float", "MiB"),
    "utilization.gpu": Field("util_gpu_pct", "float", "%"),
    "utilization.memory": Field("util_mem_pct", "float", "%"),
    "temperature.gpu": Field("temp_c", "float", "C"),
    "temperature.memory": Field("temp_mem_c", "float", "C"),
    "power.draw": Field("power_w", "float", "W"),
    "power.draw.average": Field("power_avg_w", "float", "W"),
    "power.draw.instant": Field("power_instant_w", "float", "W"),
    "power.limit": Field("power_limit_w", "float", "W"),
    "power.default_limit": Field("power_default_limit_w", "float", "W"),
    "power.max_limit": Field("power_max_limit_w", "float", "W"),
    "clocks.sm": Field("sm_clock_mhz", "float", "MHz"),
    "clocks.current.sm": Field("sm_clock_mhz", "float", "MHz"),
    "clocks.mem": Field("mem_clock_mhz", "float", "MHz"),
    "clocks.current.memory": Field("mem_clock_mhz", "float", "MHz"),
    "clocks.gr": Field("gr_clock_mhz", "float", "MHz"),
    "clocks.current.graphics": Field("gr_clock_mhz", "float", "MHz"),
    "fan.speed": Field("fan_pct", "float", "%"),
    # Why the clocks are held down now, as the bitmask nvidia-smi prints (`0x0000000000000040`:
    # HW thermal slowdown); named `throttle` before R535. Decoded by detect/clock_reasons.py.
    "clocks_event_reasons.active": Field("clocks_event_reasons", "str"),
    "clocks_throttle_reasons.active": Field("clocks_event_reasons", "str"),
    "pid": Field("pid", "int"),
    "process_name": Field("process_name", "str"),
    "used_memory": Field("used_memory_mib", "float", "MiB"),
    "used_gpu_memory": Field("used_memory_mib", "float", "MiB"),
    # --query-accounted-apps (accounting mode): what each finished or running process used.
    "gpu_utilization": Field("sm_pct", "float", "%"),
    "mem_utilization": Field("mem_pct", "float", "%"),
    "max_memory_usage": Field("max_memory_mib", "float", "MiB"),
    "is_running": Field("is_running", "str"),
    # Not query fields, but the same quantities as other forms print them.
    "type": Field("type", "str"),
    "gpu_instance_id": Field("gpu_instance_id", "int"),
    "compute_instance_id": Field("compute_instance_id", "int"),
    "sm_util": Field("sm_pct", "float", "%"),
    "mem_util": Field("mem_pct", "float", "%"),
    "enc_util": Field("enc_pct", "float", "%"),
    "dec_util": Field("dec_pct", "float", "%"),
    "jpg_util": Field("jpg_pct", "float", "%"),
    "ofa_util": Field("ofa_pct", "float", "%"),
}

# Fields that only a compute-apps query has: their presence makes a CSV a per-process one.
APPS_FIELDS = {"pid", "process_name", "used_memory", "used_gpu_memory"}

# `dmon` / `pmon` column headings -> query field. dmon's `fb` is framebuffer used in MB, which
# nvidia-smi means as MiB; `pclk` is the graphics (processor) clock.
DMON_COLUMNS: dict[str, str] = {
    "gpu": "index",
    "pwr": "power.draw",
    "gtemp": "temperature.gpu",
    "temp": "temperature.gpu",
    "mtemp": "temperature.memory",
    "sm": "utilization.gpu",
    "mem": "utilization.memory",
    "mclk": "clocks.mem",
    "pclk": "clocks.gr",
    "fb": "memory.used",
}
PMON_COLUMNS: dict[str, str] = {
    "gpu": "index",
    "pid": "pid",
    "type": "type",
    "sm": "sm_util",
    "mem": "mem_util",
    "enc": "enc_util",
    "dec": "dec_util",
    "jpg": "jpg_util",
    "ofa": "ofa_util",
    "fb": "used_memory",
    "command": "process_name",
}

# `nvidia-smi -q` labels, as "Section/Label" paths (case-insensitive) -> query field.
Q_TEXT_FIELDS: dict[str, str] = {
    "product name": "name",
    "gpu uuid": "uuid",
    "serial number": "serial",
    "pci/bus id": "pci.bus_id",
    "fan speed": "fan.speed",
    "performance state": "pstate",
    "fb memory usage/total": "memory.total",
    "fb memory usage/reserved": "memory.reserved",
    "fb memory usage/used": "memory.used",
    "fb memory usage/free": "memory.free",
    "utilization/gpu": "utilization.gpu",
    "utilization/memory": "utilization.memory",
    "temperature/gpu current temp": "temperature.gpu",
    "temperature/memory current temp": "temperature.memory",
    "gpu power readings/average power draw": "power.draw",
    "gpu power readings/instantaneous power draw": "power.draw.instant",
    "gpu power readings/current power limit": "power.limit",
    "gpu power readings/power draw": "power.draw",
    "power readings/power draw": "power.draw",
    "power readings/power limit": "power.limit",
    "ecc errors/volatile/double bit/total": "ecc.errors.uncorrected.volatile.total",
    "ecc errors/volatile/single bit/total": "ecc.errors.corrected.volatile.total",
    "ecc errors/volatile/dram uncorrectable": "ecc.errors.uncorrected.volatile.dram",
    "ecc errors/volatile/sram uncorrectable": "ecc.errors.uncorrected.volatile.sram",
    "ecc errors/volatile/dram correctable": "ecc.errors.corrected.volatile.dram",
    "ecc errors/volatile/sram correctable": "ecc.errors.corrected.volatile.sram",
    "remapped rows/pending": "remapped_rows.pending",
    "clocks/graphics": "clocks.gr",
    "clocks/sm": "clocks.sm",
    "clocks/memory": "clocks.mem",
}
# Inside a `-q` Processes block (the keys of one process).
Q_TEXT_PROCESS_FIELDS: dict[str, str] = {
    "gpu instance id": "gpu_instance_id",
    "compute instance id": "compute_instance_id",
    "process id": "pid",
    "type": "type",
    "name": "process_name",
    "used gpu memory": "used_memory",
}

# `nvidia-smi -q -x` element paths below <gpu> -> query field.
XML_FIELDS: dict[str, str] = {
    "product_name": "name",
    "uuid": "uuid",
    "serial": "serial",
    "pci/pci_bus_id": "pci.bus_id",
    "fan_speed": "fan.speed",
    "performance_state": "pstate",
    "fb_memory_usage/total": "memory.total",
    "fb_memory_usage/reserved": "memory.reserved",
    "fb_memory_usage/used": "memory.used",
    "fb_memory_usage/free": "memory.free",
    "utilization/gpu_util": "utilization.gpu",
    "utilization/memory_util": "utilization.memory",
    "temperature/gpu_temp": "temperature.gpu",
    "temperature/memory_temp": "temperature.memory",
    "gpu_power_readings/average_power_draw": "power.draw",
    "gpu_power_readings/instant_power_draw": "power.draw.instant",
    "gpu_power_readings/current_power_limit": "power.limit",
    "gpu_power_readings/power_draw": "power.draw",
    "power_readings/power_draw": "power.draw",
    "power_readings/power_limit": "power.limit",
    "ecc_errors/volatile/double_bit/total": "ecc.errors.uncorrected.volatile.total",
    "ecc_errors/volatile/single_bit/total": "ecc.errors.corrected.volatile.total",
    "ecc_errors/volatile/dram_uncorrectable": "ecc.errors.uncorrected.volatile.dram",
    "ecc_errors/volatile/sram_uncorrectable": "ecc.errors.uncorrected.volatile.sram",
    "ecc_errors/volatile/dram_correctable": "ecc.errors.corrected.volatile.dram",
    "ecc_errors/volatile/sram_correctable": "ecc.errors.corrected.volatile.sram",
    "remapped_rows/remapped_row_pending": "remapped_rows.pending",
    "clocks/graphics_clock": "clocks.gr",
    "clocks/sm_clock": "clocks.sm",
    "clocks/mem_clock": "clocks.mem",
}
XML_PROCESS_FIELDS: dict[str, str] = {
    "gpu_instance_id": "gpu_instance_id",
    "compute_instance_id": "compute_instance_id",
    "pid": "pid",
    "type": "type",
    "process_name": "process_name",
    "used_memory": "used_memory",
}

# What nvidia-smi prints instead of a value the GPU or driver does not offer: missing, never 0.
MISSING = frozenset({
    "", "N/A", "[N/A]", "[Not Supported]", "Not Supported", "-",
    "[Requested functionality has been deprecated]", "Requested functionality has been deprecated",
    "[Insufficient Permissions]", "Insufficient Permissions", "[Not Found]", "Not Found",
    "[Not Available]", "Not Available", "Not available in WDDM driver model", "[Deprecated]",
    "[No Data]", "No Data", "[Not Ready]", "Unknown",
})
# What it prints when the GPU did not answer (nvmlErrorString texts, and the table's ERR!): also
# missing, and evidence that the GPU was in trouble at that moment.
GPU_ERRORS = frozenset({
    "ERR!", "Unknown Error", "GPU is lost", "GPU requires reset", "Timeout", "Corrupted infoROM",
    "Driver Not Loaded", "Uninitialized", "Memory Error", "Interrupt Request Issue", "Invalid State",
    "GPU not found", "Error", "Reset Required",
})
LOST = "GPU is lost"

# A syntactically valid query field name, such as `clocks_event_reasons.hw_slowdown [us]`.
_FIELD_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-zA-Z0-9_]+)*( \[[^\]]+\])?$", re.IGNORECASE)


def field_key(name: str) -> str:
    """`memory.used [MiB]` -> `memory.used`."""
    return name.strip().split(" [", 1)[0].strip().lower()


def field_for(name: str) -> Field | None:
    """The table entry for a header cell such as `memory.used [MiB]` or ` utilization.gpu`."""
    return QUERY_FIELDS.get(field_key(name))


def looks_like_field(name: str) -> bool:
    """Whether a header cell could be an nvidia-smi query field, known to the table or not."""
    return bool(_FIELD_NAME.match(name.strip()))


def extra_column(name: str) -> str:
    """Column name for a field the table does not know: kept, as text, under its own name."""
    return "smi_" + re.sub(r"[^0-9a-z]+", "_", field_key(name)).strip("_")


_CTIME = re.compile(r"^[A-Z][a-z]{2} +([A-Z][a-z]{2}) +(\d{1,2}) +(\d{2}:\d{2}:\d{2}) +(\d{4})\s*$")
_CTIME_END = re.compile(r"(?:^|\s)[A-Z][a-z]{2} +([A-Z][a-z]{2}) +(\d{1,2}) +(\d{2}:\d{2}:\d{2}) +(\d{4})\s*$")


def parse_ctime(text: str):
    """`Mon Nov 30 05:24:18 2026` (the table's first line, `-q` and XML timestamps) -> naive
    datetime, or None when the text is not in that form."""
    m = _CTIME.match(text.strip())
    return _ctime(m) if m else None


def find_ctime(text: str):
    """The ctime a line ends with, whatever precedes it (a list marker, `watch`'s header)."""
    m = _CTIME_END.search(text)
    return _ctime(m) if m else None


def _ctime(m: re.Match):
    month, day, hms, year = m.groups()
    try:
        return dt.datetime.strptime(f"{year} {month} {day} {hms}", "%Y %b %d %H:%M:%S")
    except ValueError:  # "Feb 30", "25:61:00": not a time nvidia-smi wrote
        return None


def is_gpu_error(text: str | None) -> bool:
    """Whether a printed value says the GPU did not answer (`ERR!`, `[Unknown Error]`, ...)."""
    return text is not None and text.strip().strip("[]").strip() in GPU_ERRORS


_NUMBER = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)$")


def read_value(text: str | None, field: Field):
    """One printed value in the field's kind -> (value, odd): value is a float, int, str or None;
    `odd` is the printed text when it was not a value of that kind (`[N/A]`, `ERR!`, `Not
    available in WDDM driver model`, ...), else None. Never raises: what nvidia-smi prints
    instead of a number is a state of the GPU, not a broken file.
    """
    if text is None:
        return None, None
    s = text.strip()
    if field.kind not in ("float", "int"):
        if s in MISSING or is_gpu_error(s):
            return None, s if is_gpu_error(s) else None
        return s, None
    m = _NUMBER.match(s)
    if m is None or (m.group(2) and m.group(2) not in unit_spellings(field.unit)):
        return None, s
    v = float(m.group(1)) * field.scale
    if field.kind == "int":
        return (int(v), None) if v.is_integer() and abs(v) < _INT64 else (None, s)
    return v, None


_INT64 = 2.0**63


def integers(nums: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Float numbers of an int field (a GPU index, a PID) -> (Int64 values, where a number was
    not one: a fraction, or beyond int64 from a damaged line)."""
    whole = nums.notna() & (nums == nums.round()) & (nums.abs() < _INT64)
    return nums.where(whole).astype("Int64"), nums.notna() & ~whole


def unit_spellings(unit: str | None) -> tuple[str, ...]:
    # Old tables and dmon print MiB as "MB"; the table glues the unit to the number ("38C").
    return {"MiB": ("MiB", "MB"), "C": ("C", "°C")}.get(unit, (unit,)) if unit else ()


def put(row: dict, field: Field, text: str | None) -> None:
    """Set `field`'s column of a snapshot row from the printed text; text that is not a value is
    kept, by column, under row["_odd"] (the row's `state`)."""
    value, odd = read_value(text, field)
    row[field.column] = value
    if odd is not None:
        row.setdefault("_odd", {})[field.column] = odd


def state_text(odd: dict[str, str]) -> str | None:
    """The `state` column's text: each field that was not a value and what was printed."""
    return "; ".join(f"{k}={v}" for k, v in odd.items()) or None


def parse_numbers(values: pd.Series, unit: str | None, scale: float) -> tuple[pd.Series, pd.Series]:
    """Strip a unit and parse to float. Returns (numbers, odd): `odd` is the printed text where a
    value was not a number (missing markers included), <NA> elsewhere.

    Vectorised: one pass of string operations over the whole column, not a Python loop per cell.
    """
    s = values.astype("string").str.strip()
    t = s
    for u in unit_spellings(unit):
        t = t.str.removesuffix(u)
    nums = pd.Series(_floats(t.str.strip()), index=s.index)
    odd = s.where(nums.isna() & s.notna())
    if scale != 1.0:
        nums = nums * scale
    return nums, odd


# A decimal number as nvidia-smi and its tools print one ("87012", "-3", "78.84", "1.5e-3"): text
# that Arrow's cast and pandas' to_numeric both read, to the same (correctly rounded) float.
_DECIMAL = r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$"


_MISSING_TEXTS = pa.array(sorted(MISSING), pa.large_string())


def _floats(text: pd.Series) -> np.ndarray:
    """`pd.to_numeric(text, errors="coerce")` as float64 values: the decimal numbers read by
    Arrow's cast in one pass (to_numeric's own loop was 0.4 s a million values, twelve columns
    of a day of dmon most of its load), what else there is (`inf`, `0x10`) by pandas."""
    arr = pa.array(text.array)
    present = pc.is_valid(arr).to_numpy(zero_copy_only=False)
    # Digits alone ("87012"), nvidia-smi's commonest number, found 10x faster than by the regex,
    # which reads only the rest.
    number = pc.fill_null(pc.ascii_is_decimal(arr), False).to_numpy(zero_copy_only=False)
    other = present & ~number
    if other.any():
        rest = arr.filter(pa.array(other))
        decimal = pc.fill_null(pc.match_substring_regex(rest, _DECIMAL), False).to_numpy(zero_copy_only=False)
        # (a marker of no value, dmon's `-` on every line of a column it cannot fill, is no
        # number to pandas either)
        marker = pc.fill_null(pc.is_in(rest, value_set=_MISSING_TEXTS), False).to_numpy(zero_copy_only=False)
        at = np.flatnonzero(other)
        number[at[decimal]] = True
        other[at[decimal | marker]] = False
    nums = pc.cast(pc.if_else(pa.array(number), arr, pa.scalar(None, arr.type)), pa.float64()).to_numpy(zero_copy_only=False)
    if other.any():
        nums[other] = pd.to_numeric(text[other], errors="coerce").astype("float64").to_numpy()
    return nums


def is_marker(texts: pd.Series) -> pd.Series:
    """Where a column holds what nvidia-smi prints instead of a value ([N/A], ERR!, ...): a
    sample whose every field is one is still a sample; other text (a header, prose) is not."""
    s = texts.astype("string").str.strip()
    return (s.isin(MISSING) | s.str.strip("[]").str.strip().isin(GPU_ERRORS)).fillna(False).astype(bool)


def join_states(odd: dict[str, pd.Series], index) -> pd.Series:
    """Per-column odd texts -> one `state` text per row (<NA> where every field was a value)."""
    state = pd.Series(pd.NA, index=index, dtype="string")
    for col, texts in odd.items():
        part = (col + "=" + texts.astype("string"))
        both = state.notna() & part.notna()
        state = state.fillna(part).mask(both, state + "; " + part)
    return state


def snapshot_frame(rows: list[dict], ctx, rep) -> pd.DataFrame:
    """Rows read from a snapshot form (table, -q, XML, -L) -> a frame with UTC times, host,
    source and `state` (what was printed instead of a value); an empty list gives an empty frame."""
    for r in rows:
        r["state"] = state_text(r.pop("_odd", {}))
        for k in [k for k in r if k.startswith("_")]:
            del r[k]  # a loader's bookkeeping (which line of a block was read), not a column
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["time"] = align.localize(pd.to_datetime(df["time"]), ctx.timezone)
    for f in QUERY_FIELDS.values():
        # A column the source left missing in every row is still a number column.
        if f.kind == "float" and f.column in df.columns:
            df[f.column] = df[f.column].astype("float64")
    if "line" in df.columns:
        df["line"] = df["line"].astype("Int64")
    df["state"] = df["state"].astype("string")
    df["host"] = ctx.host
    df["source"] = rep.path
    return df

