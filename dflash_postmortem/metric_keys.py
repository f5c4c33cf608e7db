"""The metric keys more than one part of the kit names: the loaders write them, the detectors and
plots read them (schema.py gives them too), the replay trainer logs its wandb run under them.
Nothing imported: the trainer and every rank torchrun starts read them without pandas."""

TOK_PER_S = "train/tok_per_s"
# Throughput as trainers name it in their metric files and runs (wandb, TensorBoard, MLflow,
# Lightning's CSV: the key as the loader keeps it) -> TOK_PER_S.
THROUGHPUT_ALIASES = frozenset({
    "tok/s", "tok_per_s", "tokens_per_s", "tokens/s", "train/tok_s", "train/tok/s",
    "train/tokens_per_s", "train/tokens_per_sec", "train/tok_per_sec", "throughput/tok_per_s",
    "perf/tok_per_s", "tokens_per_second", "train/tokens_per_second",
})
# Steps per second from a step counter: the model's pace where no source logs tokens
# (model/pace.py); no loader writes it.
STEPS_PER_S = "train/steps_per_s"
# Seconds since a progress bar began, as the bar shows them (tqdm's `[00:33<00:17, ...]`): a log
# with no timestamps carries its own relative clock in them (clock/align.date_untimed_logs).
BAR_ELAPSED_S = "train/bar_elapsed_s"
LOSS = "train/loss"
