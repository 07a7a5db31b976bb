"""Several optimizers under torchrun: two phases (SGD on the first layer, Adam on the second),
each stepping the same loss, so N processes with batch B equal one process with batch N*B.

    python -m torch.distributed.run --standalone --nproc-per-node 2 train_ddp_phases_script.py OUT.pt BATCH
"""

from __future__ import annotations

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from torchwise.train import Trainer


def loss(model: nn.Module, batch) -> torch.Tensor:
    x, y = batch
    return nn.functional.cross_entropy(model(x), y)


def train(out: str, batch_size: int) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 3))
    g = torch.Generator().manual_seed(1)
    ds = TensorDataset(torch.randn(96, 5, generator=g), torch.randint(0, 3, (96,), generator=g))
    optimizers = {"first": lambda params, model: torch.optim.SGD(model[0].parameters(), lr=0.3, momentum=0.9),
                  "second": lambda params, model: torch.optim.Adam(model[2].parameters(), lr=1e-2)}
    trainer = Trainer(model, optimizers, step_fn={"first": loss, "second": loss}, device="cpu", seed=0, log_dir=False, progress=False)
    trainer.fit(DataLoader(ds, batch_size=batch_size, shuffle=True), epochs=2)
    if trainer.strategy.is_main:
        torch.save({"model": model.state_dict(), "world_size": trainer.strategy.world_size, "step": trainer.step}, out)
    trainer.close()


if __name__ == "__main__":
    train(sys.argv[1], int(sys.argv[2]))
