"""Train a GPT-2-shaped causal LM from scratch (random weights, random tokens) with the Hugging Face
Trainer: python train_hf.py --output_dir DIR --max_steps N [any TrainingArguments flag]"""
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, HfArgumentParser, Trainer, TrainingArguments

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
CPU = args.use_cpu
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

Trainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=Tokens()).train(
    resume_from_checkpoint=args.resume_from_checkpoint)
