"""said.error_text: the words of an error as a sentence quotes them."""

from pathlib import Path

from dflash_postmortem.said import error_text, exception_line, silence_said, waiting_in

INCIDENTS = Path(__file__).resolve().parents[1] / "data" / "incidents"

# torch's message for a checkpoint cut short (h200-1gpu-hangup's logs/train2.log), 345 characters
CUT_CHECKPOINT = (
    "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory. This is an "
    "internal miniz error. If you are seeing this error, there is a high likelihood that your checkpoint file is "
    "corrupted. This can happen if the checkpoint was not saved properly, was transferred incorrectly, or the file "
    "was modified after saving.")


def test_a_long_error_is_quoted_to_its_last_whole_sentence_that_fits():
    traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1\n" + CUT_CHECKPOINT
    assert error_text(traceback, "traceback") == CUT_CHECKPOINT  # whole, under the default 600
    said = error_text(traceback, "traceback", limit=300)
    assert len(CUT_CHECKPOINT) > 300 and said == CUT_CHECKPOINT[:CUT_CHECKPOINT.index(" This can happen")]
    assert said.endswith("your checkpoint file is corrupted.")


def test_a_long_sentence_is_cut_at_a_word_and_says_so():
    # (its first sentence, 95 characters, does not fit in 80)
    said = error_text(CUT_CHECKPOINT, limit=80)
    assert len(said) <= 80 and said == CUT_CHECKPOINT[:said.index("…")] + "…"
    assert said.endswith("zip archive: failed finding…")


def test_cuda_out_of_memory_is_quoted_without_its_advice():
    """torch's CUDA out-of-memory message (h100-1gpu-leak-oom's logs/train.log:29, 700 characters):
    what happened and the memory's numbers; not the advice and the link after them."""
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.07 GiB. GPU 0 has a total capacity of "
           "79.18 GiB of which 2.43 GiB is free. Including non-PyTorch memory, this process has 76.74 GiB memory in "
           "use. Of the allocated memory 72.77 GiB is allocated by PyTorch, and 3.23 GiB is reserved by PyTorch but "
           "unallocated. If reserved but unallocated memory is large try setting "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
           "Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")
    assert error_text(oom).endswith("3.23 GiB is reserved by PyTorch but unallocated.")


def test_a_short_error_is_whole():
    assert error_text("[E ProcessGroupNCCL.cpp:464] Watchdog caught collective operation timeout") == \
        "Watchdog caught collective operation timeout"
    assert error_text("x" * 600) == "x" * 600
    assert error_text("x" * 601).endswith("…") and len(error_text("x" * 601)) == 600  # no word to cut at


def test_a_line_cut_inside_its_last_parenthesis_is_quoted_without_the_open_fragment():
    """torchrun's failure line wrapped at a terminal's 140 columns (torchrun/accelerate-elastic-glog-
    wrapped-140-exitcode-6-local-rank-6-openr1.log: `... local_rank: 6 (pid` then `: 541332) of
    binary` on the next line); whole, its PID stays."""
    assert error_text("failed (exitcode: -6) local_rank: 6 (pid") == "failed (exitcode: -6) local_rank: 6"
    assert error_text("failed (exitcode: 1) local_rank: 0 (pid: 2181) of binary: /usr/bin/python") == \
        "failed (exitcode: 1) local_rank: 0 (pid: 2181) of binary: /usr/bin/python"


# An entry of torchelastic's ChildFailedError table as the loader gives it (its lines from
# tests/fixtures/real-world/train-log/torchrun-childfailed-table-accelerate-grpo.log, host masked
# there), and one whose traceback field only points at the docs (torch 2.x without an error file)
GRPO_ENTRY = ("[0]:\ntime      : 2025-05-21_15:43:03\nhost      : gpunode000000000000000-00000000000000-000000-000000-worker\n"
              "rank      : 0 (local_rank: 0)\nexitcode  : -9 (pid: 14750)\nerror_file: <N/A>\n"
              "traceback : Signal 9 (SIGKILL) received by PID 14750")


def test_a_failure_tables_entry_is_told_by_its_traceback_field_else_its_exit_code():
    assert error_text(GRPO_ENTRY, "exit") == "Signal 9 (SIGKILL) received by PID 14750"
    docs = GRPO_ENTRY.replace("traceback : Signal 9 (SIGKILL) received by PID 14750",
                              "traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    assert error_text(docs, "exit") == "exitcode -9 (pid: 14750)"
    assert error_text("[0]:", "exit") == "[0]:"  # an entry with no field: its own words


def _traceback(path: Path, first: int, last: int) -> str:
    """Lines `first` to `last` of a file, as the loader keeps a traceback (a rank's `[rankN]: ` left out)."""
    lines = path.read_text(encoding="utf-8").splitlines()[first - 1:last]
    return "\n".join(ln.removeprefix("[rank1]: ") for ln in lines)


def test_an_nccl_error_is_quoted_with_the_last_error_it_names():
    """h100-1gpu-accelerate-gpus's logs/hf_train.log:1-34, rank 1's traceback: NCCL's message goes
    on after the exception line to `Last error:` and what failed; the quote is the exception and
    that, the general meaning between them left out."""
    tb = _traceback(INCIDENTS / "h100-1gpu-accelerate-gpus" / "logs" / "hf_train.log", 1, 34)
    assert error_text(tb, "traceback") == (
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, "
        "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.9 … Last error: "
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60")
    assert exception_line(tb, "traceback").startswith("torch.distributed.DistBackendError: NCCL error in:")
    # a traceback whose header the file does not hold, as the loader keeps it (from its first frame)
    headless = "\n".join(tb.splitlines()[1:])
    assert exception_line(headless, "traceback") == exception_line(tb, "traceback")
    assert exception_line(tb, "error") == "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60"


def test_a_cuda_errors_advice_after_it_is_not_quoted():
    """h200-1gpu-crash-loop's logs/loop.log:4-33: `CUDA error: invalid device ordinal`, its message
    going on (`GPU device may be out of range, ...`) and CUDA's advice; the quote is the exception line."""
    tb = _traceback(INCIDENTS / "h200-1gpu-crash-loop" / "logs" / "loop.log", 4, 33)
    assert tb.splitlines()[-1] == "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
    assert error_text(tb, "traceback") == "torch.AcceleratorError: CUDA error: invalid device ordinal"


def test_an_exception_whose_words_go_on_below_its_line_is_quoted_with_the_first_of_them():
    """torch's `load_state_dict` (h100-1gpu-resume-mismatch): the exception's line ends in a colon,
    each refused tensor is a line below it. A traceback whose exception says it all is as before."""
    tb = ("Traceback (most recent call last):\n  File \"train.py\", line 102, in <module>\n"
          "RuntimeError: Error(s) in loading state_dict for GPT:\n"
          "\tsize mismatch for wte.weight: copying a param with shape torch.Size([32768, 768]) from checkpoint.\n"
          "\tsize mismatch for wpe.weight: copying a param with shape torch.Size([1024, 768]) from checkpoint.\n")
    assert error_text(tb, "traceback") == ("RuntimeError: Error(s) in loading state_dict for GPT: size mismatch for "
                                           "wte.weight: copying a param with shape torch.Size([32768, 768]) from "
                                           "checkpoint. (more lines follow)")
    # (h100-1gpu-resume-mismatch's second resume: its first such line lists every missing key, too
    # long to quote whole; it is not quoted cut)
    keys = ", ".join(f'"h.8.w{k}"' for k in range(80))
    long_tb = ("Traceback (most recent call last):\n  File \"train.py\", line 102, in <module>\n"
               "RuntimeError: Error(s) in loading state_dict for GPT:\n\tMissing key(s) in state_dict: " + keys + ".\n")
    assert error_text(long_tb, "traceback") == "RuntimeError: Error(s) in loading state_dict for GPT: (more lines follow)"
    one = "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\nValueError: bad value: 3\n"
    assert error_text(one, "traceback") == "ValueError: bad value: 3"


def test_a_silence_a_line_says_is_read_in_seconds():
    """A stall watchdog's word on how long a log or a run had been silent, in its own unit; a
    timeout's length or an unrelated count is no silence."""
    assert silence_said("2026-12-06 17:55:02 watchdog: train.log not written for 64s (limit 60s), sending SIGTERM") == 64.0
    assert silence_said("WARNING no progress for 5 minutes, restarting") == 300.0
    assert silence_said("no output in the last 90 seconds") == 90.0
    assert silence_said("Watchdog caught collective operation timeout: ran for 600035 milliseconds") is None
    assert silence_said("saved 3 checkpoints in 12s") is None


def test_where_a_ctrl_c_found_a_thread_is_its_innermost_wait():
    """Detectron.pytorch #140's main loop stopped in `next(dataiterator)` after two days without a
    step; a put on a queue stopped at its lock is the queue's wait, the lock alone a lock's; one
    computing (in backward) is no wait; a traceback cut before its end says nothing of where it was."""
    loader = ('Traceback (most recent call last):\n  File "tools/train_net_step.py", line 415, in main\n'
              '    input_data = next(dataiterator)\nKeyboardInterrupt')
    assert waiting_in(loader) == "waiting in its data loader (`input_data = next(dataiterator)`, tools/train_net_step.py:415)"
    lock = ('  File "/home/x/anaconda3/lib/python3.6/multiprocessing/queues.py", line 346, in put\n    with self._wlock:\n'
            '  File "/home/x/anaconda3/lib/python3.6/multiprocessing/synchronize.py", line 96, in __enter__\n'
            '    return self._semlock.__enter__()\nKeyboardInterrupt:')
    assert waiting_in(lock) == "waiting on a queue (`with self._wlock:`, multiprocessing/queues.py:346)"
    assert waiting_in(lock.split("\n", 2)[2]) == "waiting on a lock (`return self._semlock.__enter__()`, multiprocessing/synchronize.py:96)"
    computing = ('Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n    loss.backward()\n'
                 '  File "/usr/lib/python3/site-packages/torch/_tensor.py", line 487, in backward\n'
                 '    torch.autograd.backward(\nKeyboardInterrupt')
    assert waiting_in(computing) is None  # (computing, not waiting: its frame tells a reader nothing)
    assert waiting_in(loader.replace("KeyboardInterrupt", "[traceback cut off: the file ends here]")) is None
    assert waiting_in("KeyboardInterrupt") is None


def test_nccls_own_prefix_is_no_part_of_its_words():
    """NCCL's `host:pid:tid [gpu] file.cc:88 NCCL WARN ` (a time in brackets before it where a
    runner stamped its lines, pytorch/ci-infra #490): the warning's words are what follows."""
    warn = ("[2026-04-22 21:34:20] ci-runner-0:202016:202235 [0] misc/shmutils.cc:88 NCCL WARN Error: failed to extend "
            "/dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device (28)")
    assert error_text(warn) == ("Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on "
                                "device (28)")
    assert error_text("gpu-a100-3:3778851:3779883 [4] ibvwrap.c:130 NCCL WARN Call to ibv_create_qp failed") == \
        "Call to ibv_create_qp failed"


def test_fairseqs_logger_fields_are_no_part_of_its_words():
    """fairseq's and metaseq's `%(asctime)s | %(levelname)s | %(name)s | %(message)s` (fairseq #2867)."""
    assert error_text("2020-11-06 22:55:35 | WARNING | fairseq.trainer | OOM: Ran out of memory with exception: CUDA "
                      "out of memory.") == "OOM: Ran out of memory with exception: CUDA out of memory."
