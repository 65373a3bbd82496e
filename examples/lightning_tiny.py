#!/usr/bin/env python
"""Tiny PyTorch Lightning run with CSVLogger: random-init Llama on the synthetic progression task.

Writes <out>/lightning_logs/version_0/{metrics.csv,hparams.yaml}; console output goes to stdout/stderr.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_tiny as tt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/trainwatch_runs/lightning_tiny")
    ap.add_argument("--max-steps", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()

    import lightning as L
    from lightning.pytorch.loggers import CSVLogger

    torch.set_num_threads(2)
    L.seed_everything(a.seed)
    args = argparse.Namespace(seed=a.seed, failure="none", max_steps=a.max_steps, batch_size=16, seq_len=32,
                              eval_size=64, hidden=64, layers=2, bad_step=0)
    train_ids, val_ids = tt.make_data(args)

    class Lit(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.save_hyperparameters({"lr": 3e-3, "warmup": 15, "max_steps": a.max_steps, "hidden": 64})
            self.model = tt.build_model(args)

        def training_step(self, batch, i):
            x = batch[0]
            loss = self.model(input_ids=x, labels=x).loss
            self.log("train_loss", loss, prog_bar=True)
            self.log("lr", self.optimizers().param_groups[0]["lr"])
            return loss

        def validation_step(self, batch, i):
            x = batch[0]
            self.log("val_loss", self.model(input_ids=x, labels=x).loss, prog_bar=True)

        def configure_optimizers(self):
            opt = torch.optim.AdamW(self.parameters(), lr=3e-3, weight_decay=0.01)
            sched = torch.optim.lr_scheduler.LambdaLR(
                opt, lambda s: min(1.0, (s + 1) / 15) * max(0.0, 1 - s / a.max_steps))
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_ids), batch_size=16, shuffle=True)
    vdl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(val_ids), batch_size=16)
    trainer = L.Trainer(max_steps=a.max_steps, accelerator="cpu", devices=1, log_every_n_steps=5,
                        val_check_interval=25, logger=CSVLogger(a.out), enable_checkpointing=False,
                        gradient_clip_val=1.0)
    trainer.fit(Lit(), dl, vdl)


if __name__ == "__main__":
    main()
