"""Per-step overhead of the torchwise Trainer against a hand-written loop, Lightning and Accelerate.

The Trainer runs twice: with ``loss_fn`` (the default step) and with a ``step_fn`` doing the same
thing (the custom-step path that multi-input and several-optimizer tasks take).

    python benchmarks/overhead.py                 # MLP and CNN cases, 5 repeats
    python benchmarks/overhead.py --steps 1000 --repeats 9 --case mlp

Each framework trains the same model from the same initial weights on the same in-memory
shuffled DataLoader (tensors in memory indexed a whole batch at a time through ``__getitems__``,
so loading costs little and the frameworks' own per-step work shows), with one torch thread.
The time of the whole ``fit`` call is measured (objects are built beforehand) as CPU time of this
process (what the frameworks themselves cost, robust when other jobs share the machine) and as
wall-clock time.

A shared machine's speed drifts by several percent over a minute, so each repeat runs every
framework once (the order reversing from one repeat to the next) and the ratio reported is the
median over the repeats of the hand loop's time divided by the framework's, each taken from runs
seconds apart; the rates shown are the best repeat of each. Lightning and Accelerate are skipped
cleanly when not installed (``pip install lightning accelerate`` with ``-c constraints.txt``, or
``make bench``).
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import platform
import statistics
import time
import warnings
from typing import Callable

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
    )


CASES = {
    # name: (model factory, input shape per sample, batch size, default steps)
    "mlp": (mlp, (32,), 64, 3000),
    "cnn": (cnn, (3, 16, 16), 32, 500),
}


class InMemory(TensorDataset):
    """A TensorDataset that hands the DataLoader a whole batch per fetch (``__getitems__``)."""

    def __getitems__(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.as_tensor(indices)
        return self.tensors[0][idx], self.tensors[1][idx]


def _as_is(batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    return batch


def make_loader(shape: tuple[int, ...], batch: int, steps_per_epoch: int, seed: int = 0) -> DataLoader:
    """A plain shuffled DataLoader over in-memory tensors; one indexing per batch, no per-sample collate."""
    g = torch.Generator().manual_seed(seed)
    n = batch * steps_per_epoch
    ds = InMemory(torch.randn(n, *shape, generator=g), torch.randint(0, 10, (n,), generator=g))
    # in-process loading on purpose: the data is in memory and worker IPC would dominate a tiny step
    return DataLoader(ds, batch_size=batch, shuffle=True, collate_fn=_as_is, generator=torch.Generator().manual_seed(seed))  # noqa: TW202


# ---------------------------------------------------------------------------------- runners
# Each runner builds everything, then returns a zero-argument function that trains `epochs`
# epochs; only that function is timed.

def hand(model: nn.Module, loader: DataLoader, epochs: int) -> Callable[[], None]:
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def run() -> None:
        for _ in range(epochs):
            for x, y in loader:
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()

    return run


def torchwise_trainer(model: nn.Module, loader: DataLoader, epochs: int) -> Callable[[], None]:
    from torchwise.train import Trainer

    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    trainer = Trainer(model, opt, nn.CrossEntropyLoss(), device="cpu", progress=False, log_dir=False)
    return lambda: trainer.fit(loader, epochs=epochs)


def torchwise_step_fn(model: nn.Module, loader: DataLoader, epochs: int) -> Callable[[], None]:
    """The Trainer with a custom step (the path of multi-input and multi-task models)."""
    from torchwise.train import Trainer

    loss_fn = nn.CrossEntropyLoss()

    def step(m: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = batch
        return loss_fn(m(x), y)

    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    trainer = Trainer(model, opt, step_fn=step, device="cpu", progress=False, log_dir=False)
    return lambda: trainer.fit(loader, epochs=epochs)


def lightning(model: nn.Module, loader: DataLoader, epochs: int) -> Callable[[], None]:
    import lightning as L

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.loss_fn = nn.CrossEntropyLoss()

        def training_step(self, batch, batch_idx):  # noqa: ANN001
            x, y = batch
            return self.loss_fn(self.model(x), y)

        def configure_optimizers(self):  # noqa: ANN201
            return torch.optim.SGD(self.parameters(), lr=0.01)

    trainer = L.Trainer(
        accelerator="cpu", devices=1, max_epochs=epochs, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
    )
    module = Module()
    return lambda: trainer.fit(module, loader)


def accelerate(model: nn.Module, loader: DataLoader, epochs: int) -> Callable[[], None]:
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model, opt, prepared = accelerator.prepare(model, opt, loader)
    loss_fn = nn.CrossEntropyLoss()

    def run() -> None:
        for _ in range(epochs):
            for x, y in prepared:
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x), y)
                accelerator.backward(loss)
                opt.step()

    return run


RUNNERS: dict[str, tuple[Callable[..., Callable[[], None]], str | None]] = {
    "hand-written loop": (hand, None),
    "torchwise Trainer": (torchwise_trainer, None),
    "Trainer, step_fn": (torchwise_step_fn, None),
    "Lightning": (lightning, "lightning"),
    "Accelerate": (accelerate, "accelerate"),
}


def available(module: str | None) -> bool:
    if module is None:
        return True
    try:
        __import__(module)
        return True
    except Exception:
        return False


def bench_case(case: str, steps: int, repeats: int, epochs: int) -> list[tuple[str, float | None, float | None, float | None, float | None, str]]:
    """Per runner: best steps per CPU-second and per wall-second, and the median over the repeats of
    the hand loop's time divided by the runner's (each repeat runs every framework once, in an order
    that reverses from one repeat to the next, so a ratio compares runs made seconds apart)."""
    factory, shape, batch, _ = CASES[case]
    per_epoch = max(1, steps // epochs)
    loader = make_loader(shape, batch, per_epoch)
    torch.manual_seed(0)
    initial = factory()
    cpu_times: dict[str, list[float]] = {}  # CPU seconds of each fit (robust on a shared machine)
    wall_times: dict[str, list[float]] = {}
    notes: dict[str, str] = {}
    names = [n for n, (_, mod) in RUNNERS.items() if available(mod)]
    for name, (_, mod) in RUNNERS.items():
        if name not in names:
            notes[name] = f"skipped: {mod} not installed"
    for k in range(repeats):
        for name in (names if k % 2 == 0 else names[::-1]):
            torch.set_num_threads(1)
            build, _ = RUNNERS[name]
            run = build(copy.deepcopy(initial), loader, epochs)
            wall, cpu = time.perf_counter(), time.process_time()
            run()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            cpu_times.setdefault(name, []).append(cpu)
            wall_times.setdefault(name, []).append(wall)
    total = per_epoch * epochs
    hand_cpu, hand_wall = cpu_times[names[0]], wall_times[names[0]]
    rows = []
    for name in RUNNERS:
        if name not in cpu_times:
            rows.append((name, None, None, None, None, notes.get(name, "")))
            continue
        cpu_ratio = statistics.median(h / t for h, t in zip(hand_cpu, cpu_times[name]))
        wall_ratio = statistics.median(h / t for h, t in zip(hand_wall, wall_times[name]))
        rows.append((name, total / min(cpu_times[name]), cpu_ratio, total / min(wall_times[name]), wall_ratio, ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=[*CASES, "all"], default="all")
    parser.add_argument("--steps", type=int, help="optimizer steps per run (default: 3000 MLP, 500 CNN)")
    parser.add_argument("--epochs", type=int, default=5, help="the steps are split into this many epochs (default 5)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats (default 5): best rates, median ratios")
    args = parser.parse_args()

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    if available("lightning"):
        import lightning  # noqa: F401  (imported first: it sets its loggers' levels on import)
    for noisy in ("lightning", "lightning.pytorch", "lightning.fabric", "pytorch_lightning"):
        logging.getLogger(noisy).setLevel(logging.ERROR)

    print(f"torch {torch.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs, 1 thread, "
          f"{args.repeats} interleaved repeats: best rate, median of the per-repeat ratios to the hand loop")
    for case in (CASES if args.case == "all" else [args.case]):
        _, shape, batch, default_steps = CASES[case]
        steps = args.steps or default_steps
        rows = bench_case(case, steps, args.repeats, args.epochs)
        print(f"\n{case}: batch {batch}, input {shape}, {steps} steps in {args.epochs} epochs, SGD")
        print(f"  {'':20} {'steps/CPU-s':>12} {'ratio':>7}   {'steps/s (wall)':>15} {'ratio':>7}")
        for name, rate, ratio, wall, wall_ratio, note in rows:
            if rate is None:
                print(f"  {name:20} {'-':>12} {'-':>7}   {'-':>15} {'-':>7}  {note}")
            else:
                print(f"  {name:20} {rate:12.0f} {ratio:6.2f}x   {wall:15.0f} {wall_ratio:6.2f}x")

if __name__ == "__main__":
    main()
