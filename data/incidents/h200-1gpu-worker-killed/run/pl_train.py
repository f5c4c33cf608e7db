import argparse, torch, lightning as L
from lightning.pytorch.callbacks import TQDMProgressBar
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--minutes", type=float, default=4.0)
p.add_argument("--cpu", action="store_true")
a = p.parse_args()
SEQ, WIDTH, LAYERS, VOCAB = (32, 32, 2, 512) if a.cpu else (1024, 1024, 8, 32000)


class Tokens(Dataset):
    def __init__(self, n=1 << 20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.randint(0, VOCAB, (SEQ + 1,), generator=torch.Generator().manual_seed(i))


class LM(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, 16 if not a.cpu else 2, 4 * WIDTH, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, LAYERS)
        self.head = nn.Linear(WIDTH, VOCAB)

    def training_step(self, batch, i):
        x, y = batch[:, :-1], batch[:, 1:]
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
        loss = nn.functional.cross_entropy(self.head(self.body(self.emb(x), mask=mask, is_causal=True)).flatten(0, 1),
                                           y.flatten())
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=3e-4)


trainer = L.Trainer(accelerator="cpu" if a.cpu else "gpu", devices=1, precision="32" if a.cpu else "bf16-mixed",
                    max_time={"minutes": a.minutes}, max_epochs=-1, logger=False, enable_checkpointing=False,
                    # the tqdm bar, every 20 steps (Lightning picks rich's bar where rich is
                    # installed, which writes nothing to a file until the end)
                    callbacks=[TQDMProgressBar(refresh_rate=20)])
trainer.fit(LM(), DataLoader(Tokens(), batch_size=2 if a.cpu else 16, num_workers=2))
