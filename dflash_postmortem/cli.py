"""The `dflash-postmortem` command: one entry point, one subcommand per job.

Errors the kit raises on purpose print as one line and exit non-zero; `--debug` shows the
traceback instead.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import traceback
import warnings
from pathlib import Path

from . import __version__, memory_collector
from .errors import PostmortemError, UsageError
from .present import terminal_view
from .present.redact import redact
from .recorder import add_record_arguments, run_record
from .replay.launch import add_launch_arguments, run_launch
from .replay.scenarios import add_replay_arguments, run_replay
from .store.load import load_incident
from .units import count
from .watch.command import add_watch_arguments, run_watch

# What `--help` ends with: two commands a new user runs first, and what a folder may hold.
EXAMPLES = """examples:
  dflash-postmortem inspect my-incident/            what happened, the findings, one line per file
  dflash-postmortem report my-incident/ -o out/     the HTML report (out/index.html)

an incident folder: any names, any layout, formats recognised from content, e.g.
  my-incident/
    incident.toml           optional: title, timezone, expected_tok_per_s, [roles], [detect]
    logs/operator.log       a shell transcript (`script`, a paste, bash -x) or history
    logs/train.log          the trainer's output; torchrun/Slurm/docker/kubectl/journal lines
    logs/smi.csv            nvidia-smi in any form; NVML samples (record-gpus)
    logs/ps.txt             ps or top snapshots
    wandb/                  offline wandb runs
"""


def _add_inspect(sub) -> None:
    p = sub.add_parser("inspect", help="show what was loaded and skipped, and the findings",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", type=Path, help="incident folder (or a single file)")
    p.add_argument("--timezone", help="zone for sources whose times carry none (default: incident.toml or UTC)")
    p.add_argument("--on-bad-line", choices=("raise", "warn", "skip"), default="skip")
    _add_strict(p)
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also each file's skipped lines (with line numbers), assumptions and notes, the clock "
                        "offsets, the frames, and each finding's detail with the text of the lines it cites")
    p.add_argument("--width", type=int, metavar="N",
                   help="columns to fit (default: COLUMNS, else the terminal's width, else "
                        f"{terminal_view.TERMINAL_WIDTH}; at least {terminal_view.MIN_WIDTH})")
    p.add_argument("--no-redact", action="store_true",
                   help="print secrets (tokens, keys, passwords) as they are in the evidence instead of masking them")
    _add_window(p)
    _add_online(p)
    p.set_defaults(func=run_inspect)


def _add_window(p) -> None:
    p.add_argument("--window", metavar="START,END",
                   help="only this time window (UTC unless the times say otherwise), through the Parquet store")
    p.add_argument("--hosts", metavar="H1,H2", help="only these hosts, through the Parquet store")
    p.add_argument("--gpus", metavar="0,1", help="only these GPU indices, through the Parquet store")


def _window_arguments(args) -> dict:
    """load_incident's window=, hosts=, gpus= from --window START,END --hosts a,b --gpus 0,1."""
    out = {}
    if args.window:
        parts = args.window.split(",")
        if len(parts) != 2:
            raise UsageError(f"--window takes START,END (two times), got {args.window!r}")
        out["window"] = tuple(p.strip() for p in parts)
    if args.hosts:
        out["hosts"] = [h.strip() for h in args.hosts.split(",") if h.strip()]
    if args.gpus:
        try:
            out["gpus"] = [int(g) for g in args.gpus.split(",") if g.strip()]
        except ValueError as e:
            raise UsageError(f"--gpus takes GPU indices like 0,1, got {args.gpus!r}") from e
    return out


def _terminal_width(asked: int | None) -> int:
    """--width, else COLUMNS, else the terminal's width, else (a pipe, a file) terminal_view.TERMINAL_WIDTH."""
    if asked is not None:
        return asked
    return shutil.get_terminal_size((terminal_view.TERMINAL_WIDTH, 24)).columns


def _add_online(p) -> None:
    p.add_argument("--online", action="store_true",
                   help="also query the servers incident.toml names (Prometheus); without it nothing "
                        "reaches the network and such a source is listed as needing --online")


def _add_strict(p) -> None:
    p.add_argument("--strict", action="store_true",
                   help="stop at the first file or line that cannot be read (exit 2) instead of "
                        "listing it in the load report")


def run_inspect(args) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = load_incident(args.dir, timezone=args.timezone, online=args.online,
                            on_bad_line="raise" if args.strict else args.on_bad_line, **_window_arguments(args))
    print(terminal_view.render_inspect(inc, verbose=args.verbose, debug=args.debug,
                              width=_terminal_width(args.width), redacted=not args.no_redact))
    _say_unreadable(inc.load_report)
    # nothing to tell from (an empty folder, files of no known format): a failure to a script
    return 0 if any(len(df) for df in inc.frames().values()) else 1


def _say_unreadable(report, where: str = "the load report above") -> None:
    """The last line a user sees: how many files the kit could not read, and where they are listed."""
    n = len(report.failed)
    if n:
        print(f"{count(n, 'file')} could not be read (see {where}; "
              "--strict stops at the first)", file=sys.stderr)


def _add_report(sub) -> None:
    p = sub.add_parser("report", help="run the notebooks and write an HTML report", epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", type=Path, nargs="+", help="incident folder (or a single file); several build one report "
                   "each, in one set of kernels")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="output folder (default: reports/<incident>; with several incidents, <out>/<incident>)")
    p.add_argument("--only", action="append", default=None, metavar="NOTEBOOK",
                   help="run only this notebook (name or number, e.g. 01 or overview); repeatable")
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="notebook parameter, passed through to papermill; repeatable")
    p.add_argument("--show-code", action="store_true", help="keep code cells in the HTML")
    p.add_argument("--static", action="store_true", help="also export figures as PNG (needs kaleido and Chromium)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_strict(p)
    _add_online(p)
    p.set_defaults(func=run_report)


def run_report(args) -> int:
    # Start-up time: plotly, papermill and nbconvert load only for the command that writes pages.
    from .report.build import build_report, loading_cache, notebooks, parse_params
    from .report.kernels import shared_kernels
    from .report.notebook import load_cached

    for d in args.dir:
        if not d.exists():
            raise PostmortemError(f"{d}: no such incident folder or file")
    many = len(args.dir) > 1
    params = parse_params(args.param)
    pages = len(notebooks(args.only)) * len(args.dir)
    with loading_cache(), shared_kernels(pages, progress=not args.no_progress) as kernels:
        for d in args.dir:
            name = d.resolve().name if d.is_dir() else d.resolve().stem
            out = (args.out or Path("reports")) / name if many or args.out is None else args.out
            # build_report loads the incident once, while its kernels start (--strict stops there,
            # before a page runs); the load report comes back from the cache it filled.
            index = build_report(
                d, out, only=args.only, params=params, show_code=args.show_code,
                progress=not args.no_progress, static=args.static, on_bad_line="raise" if args.strict else "skip",
                online=args.online, kernels=kernels,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                inc, _ = load_cached(str(d.resolve()), str(params.get("timezone", "")), online=args.online)
            print(f"report written: {index}" + ("" if d.is_dir() else f" (one file read as the incident: {d.name})"))
            _say_unreadable(inc.load_report, "the load report on the overview page")
    return 0


def _add_store_arguments(p) -> None:
    """The folder and where its store goes and is computed: ingest's and fleet's."""
    p.add_argument("dir", type=Path, help="incident folder")
    p.add_argument("--store", help="where the store goes: a folder or an fsspec URL (default: DIR/.dflash-store)")
    p.add_argument("--scheduler", help="dask scheduler address: work on that cluster (default: $DFLASH_SCHEDULER)")
    p.add_argument("--workers", type=int, default=None, help="processes converting files side by side (default: one per CPU)")


def _add_ingest(sub) -> None:
    p = sub.add_parser("ingest", help="convert an incident folder into its Parquet store (only what changed)")
    _add_store_arguments(p)
    p.add_argument("--timezone", help="zone for sources whose times carry none (default: incident.toml or UTC)")
    p.set_defaults(func=run_ingest)


def run_ingest(args) -> int:
    from .store.ingest import ingest  # start-up time: DuckDB loads only for the store's commands

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        done = ingest(args.dir, args.store, scheduler=args.scheduler, workers=args.workers, timezone=args.timezone)
    print(done.summary())
    return 0


def _add_fleet(sub) -> None:
    p = sub.add_parser("fleet", help="a large incident: fleet-wide findings over its store, then each incident window")
    _add_store_arguments(p)
    p.set_defaults(func=run_fleet)


def run_fleet(args) -> int:
    from .store.fleet import investigate  # start-up time: for this command only

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = investigate(args.dir, args.store, scheduler=args.scheduler or os.environ.get("DFLASH_SCHEDULER"),
                            workers=args.workers)
    print("\n".join(redact(line) for line in found.lines()))
    return 0


def _add_record(sub) -> None:
    p = sub.add_parser("record-gpus", help="sample GPUs and their processes through NVML into a folder")
    add_record_arguments(p)
    p.set_defaults(func=run_record)


def _add_replay(sub) -> None:
    p = sub.add_parser("replay", help="replay an incident scenario with the reference training loop")
    add_replay_arguments(p)
    p.set_defaults(func=run_replay)


def _add_launch(sub) -> None:
    p = sub.add_parser("launch", help="start a command detached and verify that it really started")
    add_launch_arguments(p)
    p.set_defaults(func=run_launch)


def _add_watch(sub) -> None:
    p = sub.add_parser("watch", help="follow an incident folder live and announce each change (a start that "
                                     "does not start, a stall, a drop)")
    add_watch_arguments(p)
    p.set_defaults(func=run_watch)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dflash-postmortem",
        description="Reconstruct, measure and report incidents in multi-GPU training runs.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_inspect(sub)
    _add_report(sub)
    _add_ingest(sub)
    _add_fleet(sub)
    _add_record(sub)
    _add_replay(sub)
    _add_launch(sub)
    _add_watch(sub)
    for p in sub.choices.values():
        # `--debug` is also accepted after the command, where users tend to type it.
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    memory_collector.tune()
    try:
        return int(args.func(args) or 0)
    except PostmortemError as e:
        if args.debug:
            traceback.print_exc()
        print(f"dflash-postmortem {args.command}: error: {_one_line(e, args)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"dflash-postmortem {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - a bug in the kit: one line, the traceback on request
        if args.debug:
            traceback.print_exc()
        print(f"dflash-postmortem {args.command}: internal error: {type(e).__name__}: {_one_line(e, args)} "
              "(run with --debug for the traceback, and please report it)", file=sys.stderr)
        return 1


def _one_line(e: BaseException, args) -> str:
    # An error can quote the line it stopped at: masked like everything else unless --no-redact.
    text = " ".join(str(e).split())
    text = text if getattr(args, "no_redact", False) else redact(text)
    return text if len(text) <= 400 else text[:397] + "..."


if __name__ == "__main__":
    sys.exit(main())
