"""Fit a small MLP to a synthetic regression task (a fixed random teacher plus noise, 2048
training samples), with early stopping on the validation loss."""
import argparse
import datetime as dt

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
p.add_argument("--steps", type=int, default=3000)
p.add_argument("--batch", type=int, default=1048576)
p.add_argument("--lr", type=float, default=1.5e-4)
p.add_argument("--patience", type=int, default=5)
p.add_argument("--eval-every", type=int, default=100)
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()


class EarlyStopping:
    """Early stops the training if validation loss doesn't improve after a given patience."""

    def __init__(self, patience=7, verbose=False, delta=0, path="checkpoint.pt", trace_func=print):
        self.patience = patience
        self.verbose = verbose
        self.counter = 0
        self.best_score = None
        self.early_stop = False
        self.val_loss_min = np.inf
        self.delta = delta
        self.path = path
        self.trace_func = trace_func

    def __call__(self, val_loss, model):
        score = -val_loss
        if self.best_score is None:
            self.best_score = score
            self.save_checkpoint(val_loss, model)
        elif score < self.best_score + self.delta:
            self.counter += 1
            self.trace_func(f"EarlyStopping counter: {self.counter} out of {self.patience}")
            if self.counter >= self.patience:
                self.early_stop = True
        else:
            self.best_score = score
            self.save_checkpoint(val_loss, model)
            self.counter = 0

    def save_checkpoint(self, val_loss, model):
        """Saves model when validation loss decreases."""
        if self.verbose:
            self.trace_func(f"Validation loss decreased ({self.val_loss_min:.6f} --> {val_loss:.6f}).  Saving model ...")
        torch.save(model.state_dict(), self.path)
        self.val_loss_min = val_loss


def now():
    return dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")


torch.manual_seed(a.seed)
dev = torch.device(a.device)

# synthetic data: y = teacher(x) + noise, 2048 samples to train on, 4096 to validate on
DIM, N_TRAIN, N_VAL, NOISE = 8, 2048, 4096, 0.5
g = torch.Generator().manual_seed(1234)
w1, w2 = torch.randn(DIM, 64, generator=g) / DIM ** 0.5, torch.randn(64, 1, generator=g) / 2


def teacher(x):
    return torch.tanh(x @ w1) @ w2


x_train = torch.randn(N_TRAIN, DIM, generator=g)
y_train = teacher(x_train) + NOISE * torch.randn(N_TRAIN, 1, generator=g)
x_val = torch.randn(N_VAL, DIM, generator=g)
y_val = teacher(x_val) + NOISE * torch.randn(N_VAL, 1, generator=g)
x_train, y_train, x_val, y_val = (t.to(dev) for t in (x_train, y_train, x_val, y_val))

model = nn.Sequential(nn.Linear(DIM, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                      nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=a.lr)
loss_fn = nn.MSELoss()
early_stopping = EarlyStopping(patience=a.patience, verbose=True)

for step in tqdm(range(1, a.steps + 1), total=a.steps):
    model.train()
    idx = torch.randint(0, N_TRAIN, (a.batch,), device=dev)
    loss = loss_fn(model(x_train[idx]), y_train[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"{now()} step {step} loss {loss.item():.4f} lr {a.lr:g}", flush=True)
    if step % a.eval_every == 0:
        model.eval()
        with torch.no_grad():
            val_loss = loss_fn(model(x_val), y_val).item()
        early_stopping(val_loss, model)
        if early_stopping.early_stop:
            print("Early stopping", flush=True)
            break

# load the last checkpoint with the best model
model.load_state_dict(torch.load("checkpoint.pt"))
torch.save(model.state_dict(), "model_final.pt")
