"""The kernels a report's pages run in: started first, shared by the pages, shut down at the end.

A report is five short pages; what costs is starting Python kernels and importing the kit in
them. So the kernels start before anything else the report does (the parent then imports
papermill, loads the incident and draws the index while they start), one per core and two at
most, each importing what the pages need as soon as it is up; each then takes the next page
when it is free, its variables from the last page cleared and the report's settings put in its
environment first. Each kernel lives in one thread, from its start to its shutdown. Several
reports built in one block (`report A B C`) share the kernels: they start once. The bar counts
each report's pages as they end.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ..errors import PostmortemError

# Kernels a report runs its pages in: one per core, two at most (five short pages; a third
# kernel's start costs more than it saves).
MAX_KERNELS = 2
KERNEL = "dflash-postmortem-run"
# What every page's first cell imports: run in each kernel as it starts.
WARM_UP = ("import dflash_postmortem, dflash_postmortem.report.notebook, dflash_postmortem.present.figures, "
           "dflash_postmortem.present.tables, plotly.basedatatypes, IPython.display, dflash_postmortem.memory_collector\n"
           "dflash_postmortem.memory_collector.tune()")
RESET = "%reset -f"  # the first cell of every page: the last page's variables are gone


@contextlib.contextmanager
def this_python_kernel():
    """A kernelspec for the interpreter running the kit, for the length of the block: the pages
    run in the Python that has the kit installed, never in whatever `python3` a kernel list has.
    Its log level hides the kernel's start-up chatter (the TCP transport warning) from the
    user's terminal; errors still show."""
    with tempfile.TemporaryDirectory(prefix="dflash-kernel-") as root:
        spec = Path(root) / "kernels" / KERNEL
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                     "--IPKernelApp.log_level=ERROR"],
            "display_name": "Python (dflash-postmortem)", "language": "python",
        }), encoding="utf-8")
        old = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = root + (os.pathsep + old if old else "")
        try:
            yield KERNEL
        finally:
            if old is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old


class Kernels:
    """Kernels started on entering the block, given each report's pages with `run`, shut down on
    leaving it.

    `run(pages, execute, written)` hands one report's pages to the kernels and returns its
    `Batch`: `execute(km, page)` runs one page in a kernel (its KernelManager) and returns what
    `written(page, result)` turns into files, in a writer thread while the next page runs.
    Leaving the block shuts the kernels down once every page given has run.
    """

    def __init__(self, kernel_name: str, pages: int, progress: bool):
        self._name = kernel_name
        self._n = max(1, min(MAX_KERNELS, os.cpu_count() or 1, pages))
        self._todo: queue.Queue = queue.Queue()
        self._progress = progress
        self._up = 0  # kernels that started
        self._lock = threading.Lock()
        self._tried = threading.Barrier(self._n)  # every kernel's start tried

    def __enter__(self) -> Kernels:
        self._writer = ThreadPoolExecutor(max_workers=1)
        self._pool = ThreadPoolExecutor(max_workers=self._n)
        self._workers = [self._pool.submit(self._kernel) for _ in range(self._n)]
        return self

    def run(self, pages: list, execute: Callable, written: Callable, progress: bool | None = None) -> Batch:
        """Hand a report's pages to the kernels (as they become free, in order)."""
        batch = Batch(pages, execute, written, self._progress if progress is None else progress, self._writer)
        for page in pages:
            self._todo.put((batch, page))
        return batch

    def __exit__(self, *exc) -> None:
        for _ in self._workers:
            self._todo.put(None)  # each kernel shuts down after the pages given before it
        try:
            for w in self._workers:
                w.result()
        finally:
            self._pool.shutdown(wait=True)
            self._writer.shutdown(wait=True)

    def _kernel(self) -> None:
        km, why = None, None
        try:
            km = self._started()
        except Exception as e:  # told with each page it takes, below
            why = e
        with self._lock:
            self._up += km is not None
        self._tried.wait()
        if km is None and self._up:
            return  # the kernels that started take the pages
        try:
            # no kernel started at all: each page fails with why, a report never waits on them
            run = (lambda b, p: b.execute(km, p)) if km is not None else (lambda b, p: _not_started(why))
            while (item := self._todo.get()) is not None:
                batch, page = item
                batch.ran(page, lambda b=batch, p=page: run(b, p))
        finally:
            if km is not None and km.has_kernel:
                km.shutdown_kernel(now=True)


    def _started(self):
        """A kernel started and warmed up. Kernels starting at the same moment (this block's, other
        processes') may pick the same free port: the start then fails, or the kernel dies binding
        it before its first reply (`Kernel died before replying to kernel_info`); a second manager
        picks new ports."""
        from jupyter_client.manager import KernelManager

        for last in (False, True):
            km = KernelManager(kernel_name=self._name)
            try:
                km.start_kernel()
                _warm_up(km)
                return km
            except RuntimeError:
                if km.has_kernel:
                    km.shutdown_kernel(now=True)
                if last:
                    raise


def _not_started(why: Exception):
    raise PostmortemError(f"no kernel could start for the pages: {type(why).__name__}: {why}") from why


class Batch:
    """One report's pages in the shared kernels: each page's result once run and written."""

    def __init__(self, pages: list, execute: Callable, written: Callable, progress: bool, writer: ThreadPoolExecutor):
        from tqdm import tqdm  # start-up time: the bar loads only for a report

        self.execute, self._write, self._writer = execute, written, writer
        self._lock = threading.Lock()
        self._results: dict = {}
        self._written: list[Future] = []
        self._left = len(pages)
        self._done = threading.Event()
        if not pages:
            self._done.set()
        self._bar = tqdm(total=len(pages), desc="report", unit="page", disable=not progress)

    def ran(self, page, run: Callable) -> None:
        """Run one page (in the calling kernel's thread) and hand it to the writer; a page that
        raises ends nothing else, its error is raised from `results`."""
        future: Future = Future()
        try:
            result = run()
        except BaseException as e:  # raised again from results(), in the report's thread
            future.set_exception(e)
            result = None
        with self._lock:
            self._results[page] = result
            self._written.append(future if future.done() else self._writer.submit(self._write, page, result))
            self._bar.set_postfix_str(getattr(page, "stem", str(page)))
            self._bar.update(1)
            self._left -= 1
            if self._left == 0:
                self._done.set()

    def results(self) -> dict:
        """Each page's result, once every page has run and been written."""
        self._done.wait()
        try:
            for w in self._written:
                w.result()
        finally:
            self._bar.close()
        return self._results


@contextlib.contextmanager
def shared_kernels(pages: int = 5, progress: bool = True):
    """Kernels for several reports built in a row (`build_report(..., kernels=k)`): started
    once, in this interpreter, for every report built inside the block."""
    with this_python_kernel() as kernel, Kernels(kernel, pages, progress) as kernels:
        yield kernels


def _warm_up(km) -> None:
    """Wait for the kernel and import what the pages need in it, before its first page."""
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        kc.execute_interactive(WARM_UP, silent=True, store_history=False, timeout=300,
                               output_hook=lambda msg: None)
    finally:
        kc.stop_channels()


def execute_page(nbformat, km, nb, env: dict[str, str] | None = None) -> str | None:
    """Run one parameterized notebook in the report's kernel (started again if a page killed
    it), its variables from the last page cleared and `env` (the report's settings: a kernel may
    serve several reports) put in its environment first; the error that ended it, or None. A
    cell that fails ends the page, which still gets written; a kernel that fails to start is
    tried once more."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, DeadKernelError

    nb.cells.insert(0, nbformat.v4.new_code_cell(RESET + (f"\nimport os\nos.environ.update({env!r})" if env else "")))
    error = None
    try:
        for attempt in range(2):
            if not km.has_kernel or not km.is_alive():
                try:
                    km.start_kernel()
                except RuntimeError:
                    if attempt:
                        raise
                    continue
            # No `resources.path`: the kernel keeps the report's working folder for every page.
            client = NotebookClient(nb, km=km, timeout=None, kernel_name=km.kernel_name)
            try:
                client.execute()
            except CellExecutionError as e:
                first = str(e.evalue).strip().splitlines()[0] if str(e.evalue).strip() else ""
                error = f"{e.ename}: {first[:200]}"
            except DeadKernelError as e:
                error = f"the kernel died: {e}"
                km.shutdown_kernel(now=True)
            finally:
                # the client nbclient opened on a kernel it does not own stays open: its sockets
                # would be closed only by the garbage collector, at some later moment
                if client.kc is not None:
                    client.kc.stop_channels()
            break
    finally:
        del nb.cells[0]
    return error
