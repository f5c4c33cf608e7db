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
        self._read_until_prompt(30)

    def _read_until_prompt(self, timeout: float) -> bytes:
        seen, deadline = b"", time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if self.recorder:
                self.recorder.write(chunk)
                self.recorder.flush()
            seen += chunk
            if _PROMPT_END.search(seen):
                return seen
        raise PostmortemError(f"replay: the operator's shell gave no prompt within {timeout:g}s; last output: {seen[-200:]!r}")

    def run(self, cmd: str, timeout: float = 600) -> str:
        """Type `cmd` and Enter; return what the terminal showed until the next prompt."""
        os.write(self.fd, cmd.encode() + b"\r")
        return self._read_until_prompt(timeout).decode("utf-8", "replace")

    def close(self) -> None:
        try:
            os.write(self.fd, b"exit\r")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                done, _ = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    break
                select.select([self.fd], [], [], 0.2)
                try:
                    chunk = os.read(self.fd, 65536)
                    if self.recorder:
                        self.recorder.write(chunk)
                except OSError:
                    break
        finally:
            os.close(self.fd)
            if self.recorder:
                self.recorder.close()
            self.rcfile.unlink(missing_ok=True)
