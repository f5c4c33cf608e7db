"""What each Prometheus metric means to the kit: one table from a DCGM exporter field to its
`gpus` column (the same column names the nvidia-smi family uses), the labels that say which host
and GPU a series is, the node-level metrics worth a `metrics` row, and the exporters' own
instrumentation, which is no evidence of anything.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuField:
    column: str
    unit: str
    gauge: bool = True  # a gauge can hold DCGM's 32-bit "blank" sentinel; a counter can be that large


# DCGM exporter field -> gpus column. Fields not listed keep their values as `dcgm_<field>` columns.
DCGM_FIELDS: dict[str, GpuField] = {
    "DCGM_FI_DEV_FB_USED": GpuField("memory_used_mib", "MiB"),
    "DCGM_FI_DEV_FB_FREE": GpuField("memory_free_mib", "MiB"),
    "DCGM_FI_DEV_FB_RESERVED": GpuField("memory_reserved_mib", "MiB"),
    "DCGM_FI_DEV_FB_TOTAL": GpuField("memory_total_mib", "MiB"),
    "DCGM_FI_DEV_GPU_UTIL": GpuField("util_gpu_pct", "%"),
    "DCGM_FI_DEV_MEM_COPY_UTIL": GpuField("util_mem_pct", "%"),
    "DCGM_FI_DEV_ENC_UTIL": GpuField("enc_pct", "%"),
    "DCGM_FI_DEV_DEC_UTIL": GpuField("dec_pct", "%"),
    "DCGM_FI_DEV_POWER_USAGE": GpuField("power_w", "W"),
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": GpuField("power_limit_w", "W"),
    "DCGM_FI_DEV_GPU_TEMP": GpuField("temp_c", "C"),
    "DCGM_FI_DEV_MEMORY_TEMP": GpuField("temp_mem_c", "C"),
    "DCGM_FI_DEV_SM_CLOCK": GpuField("sm_clock_mhz", "MHz"),
    "DCGM_FI_DEV_MEM_CLOCK": GpuField("mem_clock_mhz", "MHz"),
    "DCGM_FI_DEV_FAN_SPEED": GpuField("fan_pct", "%"),
    # The code of the last Xid the GPU raised (a gauge that keeps its value until the exporter
    # restarts): each new nonzero value is a `gpu_error` event.
    "DCGM_FI_DEV_XID_ERRORS": GpuField("xid", ""),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": GpuField("ecc_uncorrected_volatile", "", gauge=False),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": GpuField("ecc_corrected_volatile", "", gauge=False),
    # Why the clocks are held down now: NVML's bitmask (detect/clock_reasons.py), as nvidia-smi's
    # clocks_event_reasons.active; DCGM 3.3 renamed the field. Written as nvidia-smi writes it.
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": GpuField("clocks_event_reasons", "bitmask"),
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": GpuField("clocks_event_reasons", "bitmask"),
}
REASONS = "clocks_event_reasons"
# The exporter's own count of each clock event reason over a window (its
# `--clock-events-count-window-size`): one series per reason, named in a label. A reason counted in
# the window is a bit of the GPU's reasons where no bitmask field was scraped with it.
CLOCK_EVENT_COUNTS = {"DCGM_EXP_CLOCK_EVENTS_COUNT": "clock_event",
                      "DCGM_FI_EXP_CLOCK_THROTTLE_REASONS_COUNT": "throttle_reason"}  # its name before 3.3.5
# Those labels' values (dcgm-exporter's clock events collector) -> NVML's bits.
CLOCK_EVENT_BITS = {"gpu_idle": 0x1, "clocks_setting": 0x2, "power_cap": 0x4, "hw_slowdown": 0x8,
                    "sync_boost": 0x10, "sw_thermal": 0x20, "hw_thermal": 0x40, "hw_power_brake": 0x80,
                    "display_clocks": 0x100}
XID = "DCGM_FI_DEV_XID_ERRORS"
DCGM_PREFIX = "DCGM_"

# DCGM's "no value" sentinels (dcgm_fields.h): DCGM_INT64_BLANK and up, DCGM_FP64_BLANK and up,
# and for 32-bit fields DCGM_INT32_BLANK..INT32_MAX. The exporter prints them as numbers
# (9223372036854775794 for a memory temperature the GPU does not report).
INT64_BLANK = 9223372036854775792.0
FP64_BLANK = 140737488355328.0
INT32_BLANK = 2147483632.0
INT32_MAX = 2147483647.0


def column_of(name: str) -> str:
    """The gpus column a DCGM field's values go to."""
    if name in CLOCK_EVENT_COUNTS:
        return REASONS
    field = DCGM_FIELDS.get(name)
    return field.column if field else "dcgm_" + name.removeprefix("DCGM_FI_").lower()


# Labels that say which GPU a series is; `host` comes from the first of HOST_LABELS present, then
# from `instance` without its port.
GPU_LABEL = "gpu"
UUID_LABEL = "UUID"
HOST_LABELS = ("Hostname", "hostname", "host", "node", "nodename")
INSTANCE = "instance"
# A MIG slice is its own series on the same GPU index and UUID.
MIG_LABELS = {"GPU_I_ID": "gpu_instance_id", "GPU_I_PROFILE": "mig_profile"}
# Labels the DCGM exporter adds that describe the GPU: kept as columns of their own.
GPU_INFO_LABELS = {"modelName": "name", "pci_bus_id": "pci_bus_id", "DCGM_FI_DRIVER_VERSION": "driver_version"}
# The Xid's text (dcgm-exporter >= 3.3.6): in the event's message. Not part of the series' identity,
# since Prometheus makes a new series of every new code.
XID_LABELS = ("err_code", "err_msg")

# Node-level metrics the default HTTP query asks for (node_exporter): load, memory, processes,
# boot time (a reboot), network and disk traffic, and whether each scrape target was up.
NODE_METRICS = (
    "up",
    "node_boot_time_seconds",
    "node_load1",
    "node_load5",
    "node_load15",
    "node_memory_MemTotal_bytes",
    "node_memory_MemAvailable_bytes",
    "node_procs_running",
    "node_procs_blocked",
    "node_network_receive_bytes_total",
    "node_network_transmit_bytes_total",
    "node_disk_read_bytes_total",
    "node_disk_written_bytes_total",
)
# An exporter's and Prometheus' instrumentation of themselves: skipped, with that reason.
SELF_MONITORING = ("go_", "process_", "promhttp_", "prometheus_", "net_conntrack_", "scrape_")
SELF_MONITORING_REASON = "the exporter's own instrumentation (go_, process_, promhttp_, prometheus_, scrape_ ...)"


def role(name: str, labels: dict[str, str]) -> str:
    """What a series is to the kit: "gpu" (a DCGM per-GPU field: gpus rows), "metric" (a
    `metrics` row) or "ignored" (self-instrumentation)."""
    if name.startswith(DCGM_PREFIX) and GPU_LABEL in labels:
        return "gpu"
    if name.startswith(SELF_MONITORING):
        return "ignored"
    return "metric"


def host_of(labels: dict[str, str]) -> str | None:
    for key in HOST_LABELS:
        if labels.get(key):
            return labels[key]
    instance = labels.get(INSTANCE)
    if instance:
        # "node17:9400" and "[fe80::1]:9100" -> the host part, so that it matches other sources.
        host = instance.rsplit(":", 1)[0] if instance.count(":") == 1 or instance.startswith("[") else instance
        return host.strip("[]") or None
    return None
