"""A plain training script (no torchwise inside) for the watch's tests: an MLP on generated data.

    python train_long.py [--steps 400] [--fault FAULT] [--save PATH]

Faults: ``nan`` (the inputs of one batch turn to inf at step ``--at``: the loss is NaN from
there on), ``lr-collapse`` (a per-epoch StepLR stepped every batch), ``leak`` (every loss kept
with its graph in a list), ``slow-loader`` (batches take 20 ms from step ``--at`` on), ``fail``
(raises at step ``--at``), ``exit`` (``os._exit(0)`` at step ``--at``), ``untrained`` (builds
the model, never steps), ``spawn`` (trains in a worker process started with multiprocessing),
``sigterm`` (handles SIGTERM by saving ``--save`` and exiting: a long run stopped by the watch).
Several faults: ``--fault nan,sigterm``.
"""

import argparse
import os
import signal
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=400)
parser.add_argument("--fault", default="none")
parser.add_argument("--at", type=int, default=200)
parser.add_argument("--save", default="checkpoint.pt")
args = parser.parse_args()
faults = set(args.fault.split(","))

torch.manual_seed(0)
x_all = torch.randn(4096, 32)
y_all = (x_all[:, :8].sum(1) > 0).long() + 2 * (x_all[:, 8:16].sum(1) > 0).long()


class Data(Dataset):
    def __init__(self):
        self.calls = 0

    def __len__(self):
        return len(x_all)

    def __getitem__(self, i):
        return x_all[i], y_all[i]


def make_model():
    return nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 4))


def train(steps):
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5) if "lr-collapse" in faults else None
    loader = DataLoader(Data(), batch_size=32, shuffle=True)
    kept = []
    step = 0
    while step < steps:
        for xb, yb in loader:
            if "slow-loader" in faults and step >= args.at:
                time.sleep(0.02)
            if "nan" in faults and step == args.at:
                xb = xb.clone()
                xb[0, 0] = float("inf")
            if "fail" in faults and step == args.at:
                raise ValueError(f"a bad batch at step {step}")
            if "exit" in faults and step == args.at:
                os._exit(0)
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if scheduler is not None:
                scheduler.step()  # a per-epoch schedule stepped every batch
            if "leak" in faults:
                kept.append(loss * torch.ones(256, 256))  # the loss, and a graph, kept for every step
            step += 1
            if step >= steps:
                break
    return model, loss


def on_sigterm(signum, frame):
    torch.save({"step": "stopped"}, args.save)
    print(f"saved {args.save}", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    if "sigterm" in faults:
        signal.signal(signal.SIGTERM, on_sigterm)
    if "untrained" in faults:
        model = make_model()
        print("built", sum(p.numel() for p in model.parameters()), "parameters")
    elif "spawn" in faults:
        import multiprocessing as mp

        p = mp.get_context("fork").Process(target=train, args=(20,))
        p.start()
        p.join()
    else:
        model, loss = train(args.steps)
        print(f"done: loss {loss.item():.4f}")
