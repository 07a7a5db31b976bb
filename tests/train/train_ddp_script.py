"""DDP test workload: a user script for torchrun, and a Task for ``torchwise train``.

    python -m torch.distributed.run --standalone --nproc-per-node 2 train_ddp_script.py OUT.pt BATCH
    torchwise train train_ddp_script.py:task --nproc-per-node 2 --batch-size 8

No dropout or BatchNorm, so N processes with batch B each compute the same update as one
process with batch N*B (DDP averages the gradients of the per-process mean losses).
"""

from __future__ import annotations

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from torchwise.core.task import Task
from torchwise.train import Trainer


def parts(seed: int = 0) -> tuple[nn.Module, TensorDataset]:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 3))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(96, 5, generator=g)
    y = torch.randint(0, 3, (96,), generator=g)
    return model, TensorDataset(x, y)


def task() -> Task:
    model, ds = parts()
    return Task(model=model, train_data=ds, loss_fn=nn.CrossEntropyLoss(), optimizer=lambda p: torch.optim.SGD(p, lr=0.3, momentum=0.9), batch_size=16, epochs=2, name="ddp-test")


def train(out: str, batch_size: int) -> Trainer:
    torch.set_num_threads(1)
    model, ds = parts()
    opt = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    trainer = Trainer(model, opt, nn.CrossEntropyLoss(), device="cpu", seed=0, log_dir=False, progress=True, log_every=4)
    trainer.fit(DataLoader(ds, batch_size=batch_size, shuffle=True), epochs=2)
    if trainer.strategy.is_main:
        torch.save({"model": model.state_dict(), "world_size": trainer.strategy.world_size, "step": trainer.step}, out)
    trainer.close()
    return trainer


if __name__ == "__main__":
    train(sys.argv[1], int(sys.argv[2]))
