"""A real one-node Slurm on loopback for the tests: Debian's `munge`, `slurmctld`, `slurmd` and, for
`sacct`, `slurmdbd` over a MariaDB of its own, each started in the foreground from a temporary
folder (its own munge key and socket, its own ports, `SLURM_CONF` pointing at its own slurm.conf)
and stopped by its process id. Nothing outside that folder is used or changed.

`OneNodeSlurm.start()` raises `Unavailable` with the reason when it cannot run here (not root,
binaries missing, a daemon that will not start); the tests skip with that reason. `make slurm`
installs the packages where root and apt-get exist.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from support.servers import free_port, stop

CLUSTER = "dflash"
NODE = "dflashnode"
DAEMONS = ("munged", "slurmctld", "slurmd")
ACCOUNTING = ("slurmdbd", "mariadbd", "mariadb-install-db", "mariadb")
CLIENTS = ("sbatch", "scontrol", "scancel", "sinfo", "sacct", "sacctmgr")


class Unavailable(Exception):
    """This machine cannot run the one-node Slurm; the message says why."""


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")


def _said(e: BaseException) -> str:
    """What a failed command said (its stderr), or the exception."""
    text = getattr(e, "stderr", None) or getattr(e, "stdout", None) or str(e)
    return text.strip()[-600:] if isinstance(text, str) else str(e)


class OneNodeSlurm:
    def __init__(self, root: Path):
        self.root = root
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.accounting = False
        self.env = dict(os.environ, SLURM_CONF=str(root / "slurm.conf"))

    # -- commands ---------------------------------------------------------------------------------
    def run(self, *args: str, timeout: float = 30) -> str:
        done = subprocess.run([_which(args[0]) or args[0], *args[1:]], env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def wait_for(self, what: str, ready, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if ready():
                    return
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise Unavailable(f"{name} exited ({proc.returncode}): {self.log_tail(name)}")
            if time.monotonic() > deadline:
                raise Unavailable(f"{what} not ready after {timeout_s:.0f} s: {self.log_tail()}")
            time.sleep(0.5)

    def log_tail(self, name: str | None = None) -> str:
        logs = [self.root / f"{name}.log", self.root / f"{name}.out"] if name else sorted(
            [*self.root.glob("*.log"), *self.root.glob("*.out")])
        return " | ".join(f"{p.name}: {p.read_text(errors='replace')[-600:]}" for p in logs if p.exists())

    # -- start and stop -----------------------------------------------------------------------------
    def start(self) -> OneNodeSlurm:
        if os.geteuid() != 0:
            raise Unavailable("the one-node Slurm runs its daemons as root; this is not root")
        missing = [b for b in (*DAEMONS, *CLIENTS) if _which(b) is None]
        if missing:
            raise Unavailable(f"not installed: {', '.join(missing)} (Debian: apt-get install slurmctld slurmd "
                              "slurm-client munge; `make slurm`)")
        self.accounting = all(_which(b) for b in ACCOUNTING)
        self.no_accounting = None if self.accounting else f"not installed: one of {', '.join(ACCOUNTING)}"
        try:
            self._munge()
            if self.accounting:
                try:
                    self._database()
                except (Unavailable, RuntimeError, subprocess.CalledProcessError) as e:  # sacct is one part of it
                    self.accounting, self.no_accounting = False, f"MariaDB did not start: {_said(e)}"
                    for name, proc in [p for p in self.procs if p[0] == "mariadbd"]:
                        stop(proc)
                        self.procs.remove((name, proc))
            self._config()
            if self.accounting:
                self._daemon("slurmdbd", "slurmdbd", "-D")
                self.wait_for("slurmdbd", lambda: self.run("sacctmgr", "-n", "list", "cluster") is not None, 60)
                self.run("sacctmgr", "-i", "add", "cluster", CLUSTER)
            self._daemon("slurmctld", "slurmctld", "-D", "-i")
            self._daemon("slurmd", "slurmd", "-D", "-N", NODE)
            self.wait_for("the node", lambda: self.run("sinfo", "-h", "-o", "%T").strip() == "idle", 60)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            stop(proc)
        self.procs.clear()

    def _daemon(self, name: str, *argv: str) -> None:
        log = open(self.root / f"{name}.out", "wb")  # noqa: SIM115 - open while the daemon runs
        self.procs.append((name, subprocess.Popen([_which(argv[0]), *argv[1:]], env=self.env, stdout=log,
                                                  stderr=subprocess.STDOUT)))

    def _munge(self) -> None:
        d = self.root / "munge"
        d.mkdir(mode=0o700)
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self._daemon("munged", "munged", "--foreground", "--force", f"--key-file={key}", f"--socket={d / 'munge.sock'}",
                     f"--pid-file={d / 'munged.pid'}", f"--log-file={self.root / 'munged.log'}",
                     f"--seed-file={d / 'munged.seed'}")
        self.wait_for("munged", lambda: (d / "munge.sock").exists(), 20)

    def _database(self) -> None:
        data, self.db_port = self.root / "db", free_port()
        data.mkdir()
        subprocess.run([_which("mariadb-install-db"), f"--datadir={data}", "--user=root",
                        "--auth-root-authentication-method=normal", "--skip-test-db"],
                       capture_output=True, check=True, timeout=120, text=True)
        sock = self.root / "db.sock"
        self._daemon("mariadbd", "mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={sock}",
                     f"--port={self.db_port}", "--bind-address=127.0.0.1", "--user=root",
                     f"--log-error={self.root / 'mariadbd.log'}", f"--pid-file={self.root / 'mariadbd.pid'}")
        sql = ["mariadb", f"--socket={sock}", "-uroot", "-e"]
        self.wait_for("mariadbd", lambda: self.run(*sql, "SELECT 1") is not None, 60)
        self.run(*sql, "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';")

    def _config(self) -> None:
        r, munge = self.root, self.root / "munge" / "munge.sock"
        for d in ("state", "spool", "out"):
            (r / d).mkdir()
        accounting = (
            f"AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=127.0.0.1\n"
            f"AccountingStoragePort={(dbd_port := free_port())}\nAccountingStoragePass={munge}\n"
            if self.accounting else "AccountingStorageType=accounting_storage/none\n"
        )
        (r / "slurm.conf").write_text(
            f"ClusterName={CLUSTER}\nSlurmctldHost={socket.gethostname()}(127.0.0.1)\n"
            f"SlurmUser=root\nSlurmdUser=root\nSlurmctldPort={free_port()}\nSlurmdPort={free_port()}\n"
            f"AuthType=auth/munge\nAuthInfo=socket={munge}\nCredType=cred/munge\n"
            f"StateSaveLocation={r / 'state'}\nSlurmdSpoolDir={r / 'spool'}\n"
            f"SlurmctldPidFile={r / 'slurmctld.pid'}\nSlurmdPidFile={r / 'slurmd.pid'}\n"
            f"SlurmctldLogFile={r / 'slurmctld.log'}\nSlurmdLogFile={r / 'slurmd.log'}\n"
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nSchedulerType=sched/builtin\n"
            f"JobCompType=jobcomp/filetxt\nJobCompLoc={r / 'jobcomp.txt'}\n{accounting}"
            "MpiDefault=none\nMailProg=/bin/true\nReturnToService=2\nMinJobAge=600\nOverTimeLimit=0\n"
            "KillWait=5\nInactiveLimit=0\n"
            f"NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={socket.gethostname()} CPUs=2 State=UNKNOWN\n"
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
        )
        if self.accounting:
            dbd = r / "slurmdbd.conf"  # beside slurm.conf, where slurmdbd looks for it
            dbd.write_text(
                f"AuthType=auth/munge\nAuthInfo=socket={munge}\nDbdHost=localhost\nDbdAddr=127.0.0.1\n"
                f"DbdPort={dbd_port}\nSlurmUser=root\nLogFile={r / 'slurmdbd.log'}\nPidFile={r / 'slurmdbd.pid'}\n"
                f"StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\nStoragePort={self.db_port}\n"
                "StorageUser=slurm\nStoragePass=slurm\nStorageLoc=slurm_acct_db\n"
            )
            dbd.chmod(0o600)
