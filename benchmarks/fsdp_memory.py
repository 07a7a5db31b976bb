"""Training-state bytes per rank: FSDP2 (torchwise's FSDPStrategy) with 1, 2, 4 processes vs DDP.

    .venv/bin/python benchmarks/fsdp_memory.py [--width 1024] [--blocks 6] [--worlds 1 2 4]

Builds a model of ``--blocks`` MLP blocks (width -> 4*width -> width, residual; about 200 MB of
float32 parameters at the defaults), and for each strategy and world size launches
``torch.distributed.run`` on the CPU (gloo). Every rank sets the model up through torchwise's
strategy object (the code path the Trainer uses), takes one AdamW step, and counts the bytes of
what it holds locally: parameters (the local shard of each DTensor), gradients (measured after the
backward, before the step) and optimizer state. The table gives the per-rank total, its share of
the one-process total, and that share against the ideal 1/world. Bytes, not time: the result does
not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.relu(self.up(x)))


def build(width: int, blocks: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*(Block(width) for _ in range(blocks)))


def _local_bytes(t: torch.Tensor) -> int:
    local = t.to_local() if hasattr(t, "to_local") else t
    return local.numel() * local.element_size()


def worker(strategy_name: str, width: int, blocks: int, out: Path) -> None:
    torch.set_num_threads(1)
    from torchwise.train.fsdp import FSDPStrategy
    from torchwise.train.strategy import DDPStrategy

    device = torch.device("cpu")
    strategy = FSDPStrategy(device) if strategy_name == "fsdp" else DDPStrategy(device)
    model = build(width, blocks)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model = strategy.setup(model)
    strategy.adopt_optimizer(optimizer)
    train_model = strategy.wrap(model)
    x = torch.randn(4, width)
    train_model(x).square().mean().backward()
    params = sum(_local_bytes(p) for p in model.parameters())
    grads = sum(_local_bytes(p.grad) for p in model.parameters() if p.grad is not None)
    optimizer.step()
    state = sum(_local_bytes(v) for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    record = {"rank": strategy.rank, "params": params, "grads": grads, "optimizer": state, "peak_rss_mb": rss_mb}
    (out / f"{strategy_name}-{strategy.world_size}-{strategy.rank}.json").write_text(json.dumps(record))
    del train_model
    strategy.teardown()


def launch(strategy_name: str, world: int, args: argparse.Namespace, out: Path) -> list[dict]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(world), __file__,
           "--worker", strategy_name, "--width", str(args.width), "--blocks", str(args.blocks), "--out", str(out)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
    return [json.loads((out / f"{strategy_name}-{world}-{r}.json").read_text()) for r in range(world)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--worlds", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--worker", choices=("fsdp", "ddp"), help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.width, args.blocks, args.out)
        return
    n_params = sum(p.numel() for p in build(args.width, args.blocks).parameters())
    print(f"model: {args.blocks} blocks of width {args.width}: {n_params / 1e6:.1f} M parameters, {n_params * 4 / 2**20:.0f} MiB in float32; AdamW")
    print("| strategy | processes | params / rank | grads / rank | AdamW state / rank | total / rank | share of 1 process | ideal 1/world | share / ideal | peak RSS / rank |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("ddp", "fsdp"):
            for world in args.worlds:
                ranks = launch(name, world, args, Path(tmp))
                worst = max(ranks, key=lambda r: r["params"] + r["grads"] + r["optimizer"])
                total = worst["params"] + worst["grads"] + worst["optimizer"]
                base = base or total
                share = total / base
                mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
                rss = max(r["peak_rss_mb"] for r in ranks)
                print(f"| {name} | {world} | {mib(worst['params'])} | {mib(worst['grads'])} | {mib(worst['optimizer'])} | {mib(total)} | "
                      f"{share:.3f} | {1 / world:.3f} | {share * world:.3f} | {rss:.0f} MiB |", flush=True)


if __name__ == "__main__":
    main()
