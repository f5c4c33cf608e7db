"""An operator at a real interactive terminal: `bash -i` in a pseudo-terminal, recorded by
`script` (util-linux) the way people keep a session log.

Unlike the kit's own transcript (`[ISO time] $ command`), nothing here carries a timestamp except
what the operator asks for: a `date` now and then. The log holds the prompt, the echoed command,
its output, and what only an interactive shell prints: job-control lines (`[1]+  Killed ...`),
`kill` errors with their `bash: kill:` prefix, `nohup: ignoring input`. Carriage returns and
the terminal's escape sequences stay in it, as in any `script` log.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import threading
import time
from pathlib import Path

from ..errors import PostmortemError

# A prompt as Debian's default bashrc draws it for root; the host part is fixed so that no real
# machine name reaches a capture.
PS1 = r"\u@gpu-node:\w\$ "
_PROMPT_END = re.compile(rb"@gpu-node:[^\r\n]*[#$] $")


class InteractiveShell:
    """Types commands into a live `bash -i`, one at a time, waiting for the prompt after each."""

    def __init__(self, root: Path, log: Path, env: dict[str, str], history: Path | None = None):
        """`history`: where bash keeps the operator's history, with the time of each command
        (HISTTIMEFORMAT) and each command appended as it is typed, as people set it up so that
        history survives a lost session; None keeps none."""
        self.log = log
        env = dict(env, TERM="xterm", HISTFILE="/dev/null")
        # The prompt comes from an rc file, as a user's ~/.bashrc sets it (bash ignores a PS1
        # handed down in the environment when it starts interactive).
        self.rcfile = log.parent / ".operator_bashrc"
        keep = (f"HISTFILE='{history}'\nHISTTIMEFORMAT='%F %T '\nshopt -s histappend\nPROMPT_COMMAND='history -a'\n"
                if history is not None else "unset PROMPT_COMMAND\n")
        self.rcfile.write_text(f"PS1='{PS1}'\n{keep}")
        argv = ["bash", "--noprofile", "--rcfile", str(self.rcfile), "-i"]
        if shutil.which("script"):
            # -f: flush after each write, so a session cut short still leaves its log.
            argv = ["script", "-q", "-f", "-c", " ".join(argv), str(log)]
        self.recorder = None if argv[0] == "script" else open(log, "ab")
        pid, fd = pty.fork()
        if pid == 0:  # the child: the operator's terminal
            os.chdir(root)
            os.execvpe(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        self._reader: threading.Thread | None = None
        self._tail = b""
        self._read_until_prompt(30)

    def _chunk(self) -> bytes | None:
        """What the terminal showed in the next 0.2 s (kept in the log where no `script` keeps
        it); None once it is closed."""
        if not select.select([self.fd], [], [], 0.2)[0]:
            return b""
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            return None
        if self.recorder:
            self.recorder.write(chunk)
            self.recorder.flush()
        return chunk

    def _read_until_prompt(self, timeout: float) -> bytes:
        seen, deadline = b"", time.monotonic() + timeout
        while time.monotonic() < deadline and (chunk := self._chunk()) is not None:
            seen += chunk
            if _PROMPT_END.search(seen):
                return seen
        raise PostmortemError(f"replay: the operator's shell gave no prompt within {timeout:g}s; last output: {seen[-200:]!r}")

    def start(self, cmd: str) -> None:
        """Type `cmd` and Enter, and go on while it runs in the foreground: what it prints is read
        meanwhile (a terminal nobody reads would block it once the pty's buffer is full)."""
        os.write(self.fd, cmd.encode() + b"\r")
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while not self._stop.is_set() and (chunk := self._chunk()) is not None:
            self._tail = (self._tail + chunk)[-4096:]

    def wait_prompt(self, timeout: float = 600) -> str:
        """Wait for the prompt after a command `start` typed (it ended, or was stopped)."""
        if self._reader is not None:
            self._stop.set()
            self._reader.join()
            self._reader = None
        seen, self._tail = self._tail, b""
        if _PROMPT_END.search(seen):
            return seen.decode("utf-8", "replace")
        return (seen + self._read_until_prompt(timeout)).decode("utf-8", "replace")

    def suspend(self) -> str:
        """Ctrl-Z: the terminal stops the foreground job (SIGTSTP to its process group) and bash
        prints `[1]+  Stopped ...`; returns what the terminal showed until the prompt."""
        os.write(self.fd, b"\x1a")
        return self.wait_prompt(30)

    def run(self, cmd: str, timeout: float = 600) -> str:
        """Type `cmd` and Enter; return what the terminal showed until the next prompt."""
        os.write(self.fd, cmd.encode() + b"\r")
        return self._read_until_prompt(timeout).decode("utf-8", "replace")

    def hang_up(self, wait: float = 10) -> None:
        """The connection drops (an SSH session lost, a laptop closed): the shell, the session
        leader of its terminal, gets SIGHUP from the kernel and, as it exits, sends SIGHUP to every
        job it started that was not `nohup`ed or disowned. `script` in between would hand bash an
        end of input instead (its jobs would live on), so the hangup goes to bash itself."""
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        shell = int(children.read_text().split()[0]) if self.recorder is None else self.pid
        os.kill(shell, signal.SIGHUP)
        self._wait_for_exit(wait)  # `script` writes the end of its log once bash is gone
        self._release()

    def _wait_for_exit(self, wait: float) -> None:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and not os.waitpid(self.pid, os.WNOHANG)[0]:
            if self._chunk() is None:
                break

    def close(self) -> None:
        try:
            os.write(self.fd, b"exit\r")
            self._wait_for_exit(10)
        finally:
            self._release()

    def _release(self) -> None:
        os.close(self.fd)
        if self.recorder:
            self.recorder.close()
        self.rcfile.unlink(missing_ok=True)
