"""What a reader knows an error means beyond its words: the fault behind it (a GPU's hardware, the
machine's memory, a container's limits, another process) and so where to look. Each entry is a
fault every tool that reports it shares, whatever its words (nvidia-smi, NVML under Slurm or a
device plugin, CUDA under PyTorch): the story says it after the line it quotes."""

from __future__ import annotations

import re

# An Xid the kernel's NVRM line or DCGM reports, by its number: `NVRM: Xid (PCI:0000:61:00): 45, ...`,
# `Xid 79 on GPU 3`
_XID = r"\bXid (?:\(PCI:[0-9a-f:.]+\):? )?(?:{})\b"

# (what the line says, what it means: a clause, after "It means"); the first that matches is said.
# The Xids' as NVIDIA's Xid catalog gives them.
MEANINGS: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p, re.I), m) for p, m in (
    (_XID.format("79"), "the GPU fell off its PCIe bus: a fault of the GPU, its power or its slot, which takes a reboot"),
    (_XID.format("48|94|95"),
     "a GPU's memory had an error it could not correct (ECC): a fault of that GPU's hardware, not of the training "
     "code (94: contained to the application it hit; 48, 95: the GPU needs a reset)"),
    (_XID.format("63|64|92"), "a GPU's memory reported ECC errors it remapped, or failed to (64): its hardware wearing"),
    (_XID.format("119|120"),
     "the GPU's firmware (GSP) did not answer its driver in time: a driver or firmware fault, which takes a GPU "
     "reset or a reboot"),
    (_XID.format("61|62"), "a micro-controller inside the GPU stopped: a driver or firmware fault that takes a GPU reset"),
    (_XID.format("74"), "an NVLink between GPUs failed: a fault of the link or of a GPU at either end"),
    (_XID.format("45"),
     "the driver stopped the GPU work of a process that was ending (killed, or after an earlier error): the error "
     "or the kill before it is the cause"),
    (_XID.format("13|31|43"),
     "a GPU program faulted (an illegal memory access or instruction, a page fault): most often the application's "
     "or its libraries' bug, the driver's where many programs hit it"),
    (r"uncorrectable ECC error",
     "a GPU's memory had an error it could not correct: a fault of that GPU's hardware, not of the training code"),
    (r"GPU is lost|fallen off the bus|device handle for GPU.*Unknown Error",
     "the GPU no longer answers (off its PCIe bus, or its driver lost it): a fault of the GPU or its driver, "
     "which takes a reset or a reboot"),
    (r"\bIllegal instruction\b",
     "the CPU met an instruction it does not have: most often a build for newer CPUs (AVX, AVX-512) run on an older "
     "machine"),
    (r"blocked for more than \d+ seconds",
     "a process waited inside the kernel (state D, which no signal ends) that long: on a driver or a device that "
     "does not answer (after an Xid, a wedged GPU driver), or a disk or network file system"),
    (r"all CUDA-capable devices are busy or unavailable",
     "the GPU was held by another process (a GPU in exclusive-process mode) or not visible to this one"),
    # (SIGBUS, exit code -7 in torchrun's table: a write to a shared-memory page /dev/shm could not back)
    (r"insufficient shared memory|unable to write to file </torch_|\bBus error\b|Caught signal 7\b|\(SIGBUS\)"
     r"|/dev/shm/\S+.*No space left on device",
     "shared memory (/dev/shm) ran out, as a container's 64 MB does unless it is started with a larger "
     "`--shm-size` or `--ipc=host`"),
    (r"killed due to memory pressure",
     "Ray's memory monitor killed it as the node's own memory (RAM) ran out, not a GPU's"),
    (r"by allocator cpu|std::bad_alloc|(?<![\w.])MemoryError\b|Cannot allocate memory",
     "the machine's own memory (RAM) ran out, not a GPU's"),
    (r"Address already in use|\bport\b[^\n]{0,40}?\bis already in use",
     "another process held the port: a run still alive on the same host, or a second launch with the same port (or, "
     "for a port of the ephemeral range, 32768 and up on Linux, any program's outgoing connection)"),
    (r"store based barrier",
     "not every rank reached the process group's start in time (its `worker_count` came of its `world_size`): the "
     "missing ranks' nodes or launcher failed or were slow, and their own logs say why"),
    (r"waiting for remainder of ranks",
     "some ranks stopped submitting the collectives the others wait in (the stalled ranks it lists): one died, hung "
     "or took another path"),
    (r"Lock file exists in build directory",
     "a torch extension's build lock was left by a build that was killed while it compiled: every later build waits "
     "on it for ever until the lock file is deleted"),
    (r"ncclRemoteError|remote process exited|Connection reset by peer",
     "a peer rank or its network connection went away first: the other ranks' and nodes' own logs say why"),
))


# What nvidia-smi's own failures mean, by the name its reader gives them (loaders/nvidia_smi/gpu_errors.py):
# where the words are a wrapper's, not nvidia-smi's.
SMI_MEANINGS = {"timed_out": "nvidia-smi never answered: a driver or a GPU that hung"}


def meaning(text: str, smi_error: str | None = None) -> str | None:
    """What the error `text` means, where it is a fault `MEANINGS` knows (or nvidia-smi's
    failure `smi_error` one `SMI_MEANINGS` knows)."""
    return SMI_MEANINGS.get(smi_error) or next((m for p, m in MEANINGS if p.search(text)), None)
