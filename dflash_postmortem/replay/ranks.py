"""The threaded trainer as one rank of a data-parallel job, when torchrun (or any launcher that sets
torch.distributed's environment) starts several copies of it.

Each rank trains its own target and drafter on its own device and logs its own step lines (the
prefix `[rankN]:` is torchrun's, with `--tee`); after every drafter step the ranks all-reduce the
loss, the one collective a data-parallel job cannot go without. So a rank that stops stops the
others: they wait in that all-reduce until the process group's timeout, then raise, and the
launcher decides what comes next (terminate the rest, restart the group).

Faults (`--inject-error`, `--inject-hang`) apply on every rank unless `--fault-rank` names one,
and only in the launcher's first attempt unless `--fault-attempt` names another
(TORCHELASTIC_RESTART_COUNT). `--inject-hang init:A` blocks a rank before it joins the process
group in attempt A: the other ranks then never get past process-group setup.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .faults import hang_at


@dataclass(frozen=True)
class Ranks:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    attempt: int = 0  # the launcher's restart count

    @classmethod
    def from_env(cls) -> Ranks:
        env = os.environ
        return cls(int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", 0)),
                   int(env.get("TORCHELASTIC_RESTART_COUNT", 0)))

    @property
    def many(self) -> bool:
        return self.world > 1

    def on_this_rank(self, cfg) -> bool:
        return cfg.fault_rank is None or cfg.fault_rank == self.rank

    def faulty(self, cfg) -> bool:
        """Whether the step faults the config asks for happen on this rank, in this attempt (-1:
        in every attempt, as a bug in the data or the code recurs on each restart)."""
        return self.on_this_rank(cfg) and cfg.fault_attempt in (-1, self.attempt)

    def device(self) -> int | None:
        """This rank's GPU: its local rank's, several ranks sharing one where there are fewer."""
        n = torch.cuda.device_count()
        return self.local_rank % n if n else None

    def join(self, cfg, log, shared_gpu: bool) -> None:
        """Join the job's process group (gloo where ranks share a GPU or there is none, NCCL
        where each has its own); hang first where `--inject-hang init:<attempt>` says so."""
        if not self.many:
            return
        hang_at(cfg.inject_hang if self.on_this_rank(cfg) else None, "init", self.attempt)
        backend = cfg.backend or ("nccl" if torch.cuda.is_available() and not shared_gpu else "gloo")
        log.info(f"Joining process group: rank {self.rank} of {self.world}, backend {backend}, "
                 f"attempt {self.attempt}")
        dist.init_process_group(backend, timeout=dt.timedelta(seconds=cfg.pg_timeout))
        log.info("Process group ready")

    def mean(self, value: float, device: torch.device, stopping: bool = False) -> tuple[float, bool]:
        """The mean of `value` over the ranks (the step's all-reduce), and whether any rank is
        stopping: the ranks stop after the same step, so that none waits in a collective for a
        rank that has left (a time limit each rank measured would end them a step apart)."""
        if not self.many:
            return value, stopping
        on = device if dist.get_backend() == "nccl" else torch.device("cpu")
        t = torch.tensor([value, float(stopping)], dtype=torch.float64, device=on)
        dist.all_reduce(t)
        total, stops = t.tolist()
        return total / self.world, stops > 0

    def leave(self) -> None:
        if self.many and dist.is_initialized():
            dist.destroy_process_group()
