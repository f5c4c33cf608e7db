"""Progress bars (tqdm's and the like) in a training log: each bar's states as it is redrawn, the
step a training bar is at, its elapsed time (the clock of a log that prints none) and rate, and a
bar that leaps from 0 at once (a resume from a checkpoint)."""

from __future__ import annotations

from ...schema import BAR_ELAPSED_S
from . import patterns as lp
from .rows import Rows

# A bar's leap from 0 at 0 s is a resume when it is more than this many seconds of the pace after it.
LEAP_PACES = 5
_int = lp.integer


# A training step (forward, backward, an optimizer's update) takes a millisecond at the least: a bar
# counting faster than this counts something else (samples, vectors, files read: hedwig's
# `3000001/3000001 [03:33, 14061.26it/s]` of word vectors loaded before its training began)
_STEPS_PER_S_AT_MOST = 1000.0


def _too_fast(g: dict) -> bool:
    """Whether a bar's rate is more iterations a second than training steps can be."""
    try:
        rate = float(g["rate"])
    except (TypeError, ValueError):
        return False
    return str(g["unit"]).endswith("/s") and rate > _STEPS_PER_S_AT_MOST


def _again(prev: dict | None, n: int | None, last_s: float | None, elapsed: float | None) -> bool:
    """A bar drawn again from its start under the same description and total (Hugging Face's
    evaluation bar at each evaluation): its count or its seconds went back."""
    if prev is None:
        return True
    went_back = n is not None and prev["_n"] is not None and n < prev["_n"]
    return went_back or (elapsed is not None and last_s is not None and elapsed < last_s)


class Bars:
    """The bars of one log as the pass meets them."""

    def __init__(self):
        self.states: dict[tuple, dict] = {}  # (description, total, rank) -> its latest state
        self.step: dict = {}  # rank -> the step of the latest training bar (for HF dicts)
        self.leaps: dict[tuple, dict] = {}  # bar -> the resumed event its leap from 0 would be (see _leap)
        self.redraws = 0
        self.outer: dict = {}  # rank -> the key of its training bar while it is unfinished
        self.inner: set[tuple] = set()  # bars drawn inside it (an evaluation's, a prediction's)
        # bar -> (the line it began on, its elapsed seconds there, its elapsed seconds last drawn)
        self.began: dict[tuple, tuple] = {}
        self.first_epoch: int | None = None  # how the log's bars count epochs: from 0 or from 1

    def _in_run(self, desc: str, n: int | None, total: int | None) -> int | None:
        """The step in the run of a training bar's count `n`: a bar that names its epoch
        (`lp.BAR_EPOCH`) counts its batches from 0 each epoch, so its step is the batches of the
        epochs before it and its count (epoch 4 of `300` batches at `107/300`: step 1007, counting
        from 1 as `Epoch 4/6` does). Epochs count from 0 where the log shows an epoch 0 or names
        no number of epochs (Lightning's `Epoch 0:`), else from 1. Its count for other bars."""
        m = lp.BAR_EPOCH.search(desc)
        if m is None or n is None or not total:
            return n
        k = int(m["epoch"])
        if k == 0 or m["epochs"] is None:
            self.first_epoch = 0
        elif self.first_epoch is None:
            self.first_epoch = 1
        return max(k - self.first_epoch, 0) * total + n

    def _inner(self, key: tuple, prev: dict | None, rank, n: int | None, total: int | None) -> bool:
        """A bar that begins while this rank's training bar is unfinished is a task inside it, not
        training: Hugging Face's Trainer draws its evaluation's bar (`0/1500`) below the training
        bar (`100/300`), which then goes on. The training bar is the first to count a step of a
        known total; it is done when its count reaches that total."""
        if key in self.inner:
            return True
        outer = self.outer.get(rank)
        if outer is not None and outer != key and prev is None:
            self.inner.add(key)
            return True
        if outer is None or outer == key:
            # a bar holds the others inside it once it has counted a step of a known total (a
            # placeholder `Training: 0/?` is no training bar yet; a bar with no total never ends)
            if n is None or total is None or n >= total:
                self.outer.pop(rank, None)
            elif n > 0:
                self.outer[rank] = key
        return False

    def read(self, bars: list[lp.Bar], record: str, lineno: int, rows: Rows, rank, run, stamp) -> int:
        """The bars drawn in one record: each bar's state (its last one becomes a `progress` event at
        the end of the file), and for a training bar its step's elapsed time, rate and postfix values,
        and a resume where it leaps from 0."""
        since = 0  # where the text before this bar starts: after the previous bar
        for b in bars:
            g = b.fields
            desc = b.desc.strip().rstrip(":").strip()
            context = record[max(since, b.start - 80):b.bar_start]  # a description cut at `(` starts earlier
            since = b.end
            key = (desc, g["total"], rank)
            prev = self.states.get(key)
            n = _int(g["n"])
            shown = record[b.bar_start:b.end].strip()
            # (its count and total: a bar whose last state is short of its total did not finish)
            state = dict(stamp=stamp, line=lineno, run=run, kind="progress",
                         message=f"{desc + ': ' if desc else ''}{shown}", rank=rank, pattern="tqdm", lines=1,
                         bar_n=n, bar_total=_int(g["total"]))
            new_step = prev is None or prev["_n"] != n
            state["_n"] = n
            self.states[key] = state
            elapsed = lp.bar_seconds(g["elapsed"])
            began = self.began.get(key)
            begins = began is None or _again(prev, n, began[2], elapsed)
            if begins:
                if prev is not None and "bar_elapsed_s" in prev:
                    # the run of a bar beside training that ended here (an evaluation, before the
                    # next): its last state is an event of its own, as the last run's is at the end
                    rows.event(**{k: v for k, v in prev.items() if k != "_n"})
                began = (lineno, elapsed, elapsed)  # the bar (drawn again from its start) begins here
            self.began[key] = began = (began[0], began[1], elapsed)
            if prev is not None:
                self.redraws += 1
            if lp.NOT_TRAINING_BAR.search(context) or _too_fast(g) or self._inner(key, prev, rank, n, _int(g["total"])):
                # a bar beside training (an evaluation's, a prediction's) counts its own seconds
                # from its own first drawing: where it began and how long it had run say when
                # its last state was drawn in a log that prints no time (clock/untimed.py), and
                # that the process was at work all along (model/states.py: no stall)
                if elapsed is not None and began[1] is not None:
                    state.update(bar_elapsed_s=elapsed, began_line=began[0], began_s=began[1])
                continue
            step = self._in_run(desc, n, _int(g["total"]))
            self.step[rank] = step
            self._leap(key, prev, n, _int(g["total"]), elapsed, rows,
                       dict(stamp=stamp, line=lineno, run=run, kind="resumed", rank=rank, pattern="tqdm",
                            # a count it leaps to from 0 is its first step done, the checkpoint
                            # holding the steps before it (Hugging Face's `0/400`, then `201/400`
                            # after `checkpoint-200`); a bar first drawn above 0 starts at the
                            # checkpoint's own count (tqdm's `initial`)
                            message=f"{desc + ': ' if desc else ''}the training bar is at step {n} of {g['total']} "
                                    f"0 s after it began: resumed (at step {n - 1 if n and prev is not None else n})",
                            lines=1))
            # (a bar over epochs, `2/2 [07:43<00:00, 231.64s/epoch]`, counts no steps: its seconds time none)
            if n is not None and new_step and elapsed is not None and not lp.NOT_ITERATION_UNIT.search(g["unit"]):
                if begins and elapsed > 1 and step > n:
                    # an epoch's bar whose drawing at its start the log lacks (one state of it
                    # kept, `994/994 [03:58<...]`): it began at 0 s at the steps of the epochs
                    # before it, where its own seconds count from (model/own_timings.py, the clock
                    # of a log with no time: clock/untimed.py)
                    rows.metric(stamp=stamp, line=lineno, run=run, step=step - n, metric=BAR_ELAPSED_S,
                                value=0.0, rank=rank, pattern="tqdm")
                rows.metric(stamp=stamp, line=lineno, run=run, step=step, metric=BAR_ELAPSED_S,
                            value=elapsed, rank=rank, pattern="tqdm")
            if n is None or not new_step or g["rate"] == "?" or lp.NOT_ITERATION_UNIT.search(g["unit"]):
                continue
            rate = float(g["rate"]) if g["rate"].count(".") <= 1 else float("nan")
            per_s = rate if g["unit"].endswith("/s") else (1.0 / rate if rate else float("nan"))
            rows.metric(stamp=stamp, line=lineno, run=run, step=step, metric="train/it_per_s",
                        value=per_s, rank=rank, pattern="tqdm")
            given = dict(kv.strip().partition("=")[::2] for kv in g["postfix"].split(","))
            read = set()
            for k in lp.BAR_POSTFIX:  # (in its order: one key a metric)
                metric = lp.BAR_POSTFIX[k]
                if given.get(k) and metric not in read:
                    read.add(metric)
                    rows.metric(stamp=stamp, line=lineno, run=run, step=step,
                                metric=metric, value=lp.number(given[k]), rank=rank, pattern="tqdm")
        return 1

    def _leap(self, key: tuple, prev: dict | None, n: int | None, total: int | None, elapsed: float | None,
              rows: Rows, event: dict) -> None:
        """A training bar that starts above 0, or leaps there before a second has passed, goes on
        from a checkpoint (Hugging Face's Trainer counts the steps a checkpoint holds at once:
        `0/400`, then `201/400 [00:00<...]`). A fast trainer's first update looks the same, so the
        leap is told a resume only once the bar's next second shows a pace that could not have
        done it: the leap more than LEAP_PACES seconds of the steps that follow. A bar done at
        once (`196/196`) is a short bar, not a resume."""
        leap = self.leaps.get(key)
        if leap is not None and n is not None and elapsed and elapsed >= 1:
            del self.leaps[key]
            if leap["_n"] > LEAP_PACES * (n - leap["_n"]) / elapsed:
                leap.pop("_n")
                rows.event(**leap)
        elif (prev is None or prev["_n"] == 0) and n and elapsed == 0 and (total is None or n < total):
            self.leaps[key] = {**event, "_n": n}
