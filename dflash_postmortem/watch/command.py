"""`dflash-postmortem watch DIR`: the command line of the live watch (live.py), its outputs
(sinks.py) and, with `--sample-gpus`, the NVML recorder writing into the folder it watches."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from ..errors import PostmortemError, UsageError
from ..loaders.folder import WATCH_LOG
from ..recorder import record_gpus
from .live import Watch, follow
from .memory import lean_memory
from .pacing import Pacer
from .sinks import Exec, Metrics, Sinks, Terminal, Webhook

EXAMPLES = """examples:
  dflash-postmortem watch runs/today/                        status line and one line per change
  dflash-postmortem watch runs/today/ --once                 the state now, then exit (cron, scripts)
  dflash-postmortem watch runs/today/ --webhook https://hooks.slack.com/services/...
  dflash-postmortem watch runs/today/ --metrics-port 9464 --sample-gpus
"""


def add_watch_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog, p.formatter_class = EXAMPLES, argparse.RawDescriptionHelpFormatter
    p.add_argument("dir", type=Path, help="the incident folder to follow (it may still be empty)")
    p.add_argument("--once", action="store_true", help="print what the folder shows now, then exit")
    p.add_argument("--poll", type=float, default=2.0, metavar="S",
                   help="seconds between looks when no file event comes (default 2)")
    p.add_argument("--cpu-share", type=float, default=0.02, metavar="F",
                   help="the share of one core the watch may spend reading files that only grow steadily "
                        "(default 0.02; a new, waking or quiet file is read at once; 1: as often as a whole core allows)")
    p.add_argument("--timezone", help="zone for sources whose times carry none (default: incident.toml or UTC)")
    p.add_argument("--webhook", metavar="URL", help="POST each announcement as JSON (`text` field: Slack-compatible)")
    p.add_argument("--webhook-format", choices=("text", "discord", "json"), default="text")
    p.add_argument("--exec", dest="exec_command", metavar="CMD",
                   help="run CMD for each announcement (DFLASH_KIND, DFLASH_TEXT, ... in its environment, "
                        "the announcement as JSON on its standard input)")
    p.add_argument("--metrics-port", type=int, metavar="PORT",
                   help="serve Prometheus metrics (each job's state, pace and goodput) on 127.0.0.1:PORT")
    p.add_argument("--sample-gpus", action="store_true",
                   help="also sample this machine's GPUs through NVML into DIR/gpus/ (needs an NVIDIA driver)")
    p.add_argument("--sample-interval", type=float, default=1.0, metavar="S")
    p.add_argument("--width", type=int, metavar="N", help="columns to fit (default: the terminal's)")


def run_watch(args) -> int:
    folder: Path = args.dir
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder (watch follows an incident folder)")
    if not 0 < args.cpu_share <= 1:
        raise UsageError(f"--cpu-share {args.cpu_share:g}: expected a share of one core, over 0 and at most 1")
    lean_memory()  # a look's memory given back (--once too: its one look is the whole folder at once)
    # the one look of --once reads the folder as it is; a followed folder is read as paced
    watch = Watch(folder, timezone=args.timezone, pacer=None if args.once else Pacer(share=args.cpu_share))
    terminal = Terminal(sys.stdout, width=args.width)
    if args.once:
        for a in watch.look():
            terminal.announce(a)
        terminal.status(watch.status())
        terminal.close()
        return 0
    sinks = Sinks([terminal])
    if args.webhook:
        sinks.append(Webhook(args.webhook, format=args.webhook_format))
    if args.exec_command:
        sinks.append(Exec(args.exec_command))
    if args.metrics_port is not None:
        sinks.append(Metrics(args.metrics_port))
    stop, failed = threading.Event(), []
    if args.sample_gpus:
        threading.Thread(target=_sample, args=(folder / "gpus", args.sample_interval, stop, failed), daemon=True).start()
    try:
        with open(folder / WATCH_LOG, "a", encoding="utf-8") as log:
            follow(watch, sinks, poll_s=args.poll, stop=stop, log=log)
    except KeyboardInterrupt:
        stop.set()
    finally:
        sinks.close()
    if failed:
        raise failed[0]
    return 0


def _sample(out: Path, interval: float, stop: threading.Event, failed: list) -> None:
    """The recorder, beside the watch; a machine with no driver ends the watch with its error."""
    try:
        record_gpus(out, interval)
    except PostmortemError as e:
        failed.append(e)
        stop.set()
