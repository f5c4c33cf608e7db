import argparse, threading, torch, transformers
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--max-steps", type=int, default=400)
p.add_argument("--oom-at-step", type=int, default=0)
p.add_argument("--resume", action="store_true")
p.add_argument("--cpu", action="store_true")
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--eval-size", type=int, default=0)
p.add_argument("--leak-mib", type=int, default=0)
p.add_argument("--hang-at-save", type=int, default=0)
a = p.parse_args()
transformers.utils.logging.set_verbosity_info()
transformers.utils.logging.enable_explicit_format()
CPU = a.cpu
SEQ = 64 if CPU else 1024


class Tokens(Dataset):
    def __init__(self, n=1 << 20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 50257, (SEQ,), generator=g)
        return {"input_ids": ids, "labels": ids}


cfg = GPT2Config(vocab_size=50257, n_positions=SEQ, n_embd=64 if CPU else 768, n_layer=2 if CPU else 12,
                 n_head=2 if CPU else 12)


class Spike(TrainerCallback):
    # a batch far longer than the rest: the allocator is asked for more than the GPU has
    def on_step_end(self, args, state, control, **kw):
        if a.oom_at_step and state.global_step == a.oom_at_step:
            torch.empty(1 << 40, dtype=torch.uint8, device="cuda" if torch.cuda.is_available() else "meta")
            if not torch.cuda.is_available():
                raise torch.OutOfMemoryError("CUDA out of memory (a dry run on the CPU)")


class Leak(TrainerCallback):
    # a step's tensors kept by mistake (a list of losses with their graphs would do the same)
    kept = []

    def on_step_end(self, args, state, control, **kw):
        if a.leak_mib:
            self.kept.append(torch.empty(a.leak_mib << 20, dtype=torch.uint8,
                                         device="cuda" if torch.cuda.is_available() else "cpu"))
            if not torch.cuda.is_available() and len(self.kept) * a.leak_mib > 64:
                raise torch.OutOfMemoryError("CUDA out of memory (a dry run on the CPU)")


class HangAtSave(TrainerCallback):
    # a save-time hook that never returns
    def on_save(self, args, state, control, **kw):
        if a.hang_at_save and state.global_step == a.hang_at_save:
            threading.Event().wait()


model = GPT2LMHeadModel(cfg)
args = TrainingArguments(output_dir=a.out, max_steps=a.max_steps, per_device_train_batch_size=4 if a.cpu else 16,
                         logging_steps=10, save_steps=100, save_total_limit=3, report_to="none", log_level="info",
                         bf16=not a.cpu, use_cpu=a.cpu,
                         dataloader_num_workers=0, learning_rate=3e-4, warmup_steps=20, seed=0,
                         eval_strategy="steps" if a.eval_every else "no", eval_steps=a.eval_every or None,
                         per_device_eval_batch_size=4 if a.cpu else 32)
Trainer(model=model, args=args, train_dataset=Tokens(), eval_dataset=Tokens(a.eval_size) if a.eval_every else None,
        callbacks=[Spike(), Leak(), HangAtSave()]).train(resume_from_checkpoint=True if a.resume else None)
