"""A deterministic training run for the exact-resume test (run as a subprocess).

    python train_resume_script.py CKPT_DIR OUT.pt [--kill-at STEP] [--resume]

Dropout, Adam, a per-step scheduler, a shuffled loader and a dataset that draws noise from the
global RNG in __getitem__: every piece of state a resume must restore. ``--kill-at`` sends
SIGKILL to this process right after that optimizer step (mid-epoch, after a checkpoint).
"""

from __future__ import annotations

import os
import signal
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from torchwise.train import Trainer


class NoisyData(Dataset):
    def __init__(self, n: int = 80) -> None:
        g = torch.Generator().manual_seed(3)
        self.x = torch.randn(n, 6, generator=g)
        self.y = torch.randint(0, 3, (n,), generator=g)

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        return self.x[i] + 0.05 * torch.randn(6), self.y[i]  # global RNG: must be restored exactly


class KillAt:
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, trainer: Trainer) -> None:
        if trainer.step == self.step:
            os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    torch.set_num_threads(1)
    ckpt, out = sys.argv[1], sys.argv[2]
    kill = int(sys.argv[sys.argv.index("--kill-at") + 1]) if "--kill-at" in sys.argv else None
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.7)
    trainer = Trainer(
        model, opt, nn.CrossEntropyLoss(), seed=0, deterministic=True, device="cpu", scheduler=sched,
        checkpoint_dir=ckpt, checkpoint_every=4, log_dir=False, progress=False,
        callbacks=[KillAt(kill)] if kill else [],
    )
    trainer.fit(DataLoader(NoisyData(), batch_size=8, shuffle=True), epochs=3, resume="last" if "--resume" in sys.argv else None)
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": trainer.step}, out)


if __name__ == "__main__":
    main()
