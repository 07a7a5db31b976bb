"""FSDP test workload: a tiny model of repeated residual blocks, trained by the Trainer.

    python -m torch.distributed.run --standalone --nproc-per-node 2 train_fsdp_script.py OUT.pt [options]
    torchwise train train_fsdp_script.py:task --strategy fsdp --nproc-per-node 2

No dropout or BatchNorm: N processes with batch B each make the same update as one with N*B.
``--kill-at STEP --kill-rank R`` kills rank R (SIGKILL, as a crash would) after that optimizer
step in the first attempt only, so a torchrun restart runs through; ``--kill-rank -1`` kills the
workers whose environment has TW_KILL_HERE=1 (one "node" of a two-launch run);
TW_KILL_SIGNAL=SIGSTOP freezes the worker instead (a peer that hangs rather than dies).
``--oom-at STEP --oom-rank R`` makes rank R run out of memory (a ``torch.OutOfMemoryError`` raised
in the forward of the second block, as an allocation failure would) during that step, in the
first attempt only.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from torchwise.core.task import Task
from torchwise.train import Trainer


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(width, width * 2), nn.Linear(width * 2, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.tanh(self.fc1(x)))


class Net(nn.Module):
    def __init__(self, width: int = 12) -> None:
        super().__init__()
        self.stem = nn.Linear(5, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(3))
        self.head = nn.Linear(width, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def parts(seed: int = 0) -> tuple[nn.Module, TensorDataset]:
    torch.manual_seed(seed)
    model = Net()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(96, 5, generator=g)
    y = torch.randint(0, 3, (96,), generator=g)
    return model, TensorDataset(x, y)


def optimizer(params) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=0.01, weight_decay=0.01)


def task() -> Task:
    model, ds = parts()
    return Task(model=model, train_data=ds, loss_fn=nn.CrossEntropyLoss(), optimizer=optimizer, batch_size=16, epochs=2, name="fsdp-test")


# Sends SIGCONT to a stopped worker once no other child of its torchrun agent is alive (it runs in its
# own session: torchrun's closing signal goes to the worker's process group): the test has
# then seen what the survivors do about a frozen peer, and torchrun need not wait out its 30 s grace.
WAKER = """
import os, signal, sys, time
me, agent = int(sys.argv[1]), int(sys.argv[2])
if not os.path.isdir("/proc"):
    sys.exit(0)  # (no /proc to watch the peers in: torchrun's grace period ends the stopped worker)
def others():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            state, parent = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue
        if int(pid) != me and int(parent) == agent and state != "Z":
            yield pid
deadline = time.monotonic() + 300
while any(others()) and time.monotonic() < deadline:
    time.sleep(0.2)
os.kill(me, signal.SIGCONT)
"""


class KillAt:
    def __init__(self, step: int, rank: int) -> None:
        self.step, self.rank = step, rank

    def on_step_end(self, trainer: Trainer) -> None:
        first_attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) == 0
        chosen = trainer.strategy.rank == self.rank if self.rank >= 0 else os.environ.get("TW_KILL_HERE") == "1"
        if first_attempt and trainer.step == self.step and chosen:
            how = getattr(signal, os.environ.get("TW_KILL_SIGNAL", "SIGKILL"))
            if how == signal.SIGSTOP:  # a frozen peer; woken once its peers have ended (torchrun would wait 30 s for it)
                subprocess.Popen([sys.executable, "-c", WAKER, str(os.getpid()), str(os.getppid())], start_new_session=True)
            os.kill(os.getpid(), how)


class OOMAt:
    """Raise an out-of-memory error in the middle of the forward (after the first block's all-gather)."""

    def __init__(self, step: int, rank: int) -> None:
        self.step, self.rank = step, rank

    def on_fit_start(self, trainer: Trainer) -> None:
        def hook(module: nn.Module, args: object) -> None:
            first_attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) == 0
            if first_attempt and trainer.step + 1 == self.step and trainer.strategy.rank == self.rank:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated)")

        trainer.model.blocks[1].register_forward_pre_hook(hook)


def train(out: str | None, batch_size: int, *, strategy: str = "fsdp", accumulate: int = 1, epochs: int = 2, max_steps: int | None = None,
          checkpoint_dir: str | None = None, checkpoint_every: int | None = None, resume: str | None = None, kill_at: int | None = None,
          kill_rank: int = 1, clip: float | None = None, activation_checkpointing: bool = False, oom_at: int | None = None, oom_rank: int = 1) -> Trainer:
    torch.set_num_threads(1)
    model, ds = parts()
    callbacks = [KillAt(kill_at, kill_rank)] if kill_at else []
    callbacks += [OOMAt(oom_at, oom_rank)] if oom_at else []
    trainer = Trainer(model, optimizer(model.parameters()), nn.CrossEntropyLoss(), device="cpu", seed=0, log_dir=False, progress=False,
                      strategy=strategy, accumulate=accumulate, checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every,
                      callbacks=callbacks, clip_grad_norm=clip, activation_checkpointing=activation_checkpointing)
    trainer.fit(DataLoader(ds, batch_size=batch_size, shuffle=True), epochs=epochs, max_steps=max_steps, resume=resume)
    full = trainer.strategy.full_state_dict(trainer.model)
    splits = trainer.strategy.gather_object(trainer.oom.splits)  # every rank's split count
    if out and trainer.strategy.is_main:
        torch.save({"model": full, "world_size": trainer.strategy.world_size, "step": trainer.step, "oom_splits": splits}, out)
    trainer.close()
    return trainer


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--strategy", default="fsdp")
    p.add_argument("--accumulate", type=int, default=1)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--max-steps", type=int)
    p.add_argument("--checkpoint-dir")
    p.add_argument("--checkpoint-every", type=int)
    p.add_argument("--resume")
    p.add_argument("--kill-at", type=int)
    p.add_argument("--kill-rank", type=int, default=1)
    p.add_argument("--clip", type=float)
    p.add_argument("--activation-checkpointing", action="store_true")
    p.add_argument("--oom-at", type=int)
    p.add_argument("--oom-rank", type=int, default=1)
    a = p.parse_args()
    train(a.out, a.batch, strategy=a.strategy, accumulate=a.accumulate, epochs=a.epochs, max_steps=a.max_steps, checkpoint_dir=a.checkpoint_dir,
          checkpoint_every=a.checkpoint_every, resume=a.resume, kill_at=a.kill_at, kill_rank=a.kill_rank, clip=a.clip,
          activation_checkpointing=a.activation_checkpointing, oom_at=a.oom_at, oom_rank=a.oom_rank)


if __name__ == "__main__":
    main()
