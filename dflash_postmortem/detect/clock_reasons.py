"""Why a GPU's clocks are held down: the bitmask nvidia-smi prints as `clocks_event_reasons.active`
(`clocks_throttle_reasons.active` before R535) and NVML returns, read as the names NVML gives its
bits (nvml.h, `nvmlClocksEventReason*`)."""

from __future__ import annotations

import pandas as pd

REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def reason_names(mask) -> list[str]:
    """The names of the bits set in `mask` (an int, or None: nothing known), lowest bit first;
    a bit NVML does not name is given as its hex value."""
    if pd.isna(mask):
        return []
    mask = int(mask)
    named = [name for bit, name in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    return named + ([hex(rest)] if rest else [])
