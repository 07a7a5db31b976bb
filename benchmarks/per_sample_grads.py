"""Per-sample gradients at batch 128 on CPU: the one-sample loop vs torch.func vmap vs the closed form.

    .venv/bin/python benchmarks/per_sample_grads.py [--batch 128] [--repeats 20] [--threads 1]

For a small MLP and two small CNNs it times (best of ``--repeats``) the loop (batch size 1,
backward each, gradients copied out), ``per_sample_grads(method="vmap")`` and
``per_sample_grads(method="fast")``, and prints times, speed-ups over the loop and the largest
absolute difference from the loop. Target: fast >= 20x the loop, equal to 1e-5. The ``step`` row
is context: one ordinary batched forward + backward (the summed gradient only), the floor that
any batched per-sample method builds on.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Callable

import torch
from torch import nn

from torchwise.utils.per_sample import per_sample_grads


def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))


def cnn_strided() -> nn.Module:
    """Down-sampling by strided convolutions (no pooling layers)."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
    )


def cnn_maxpool() -> nn.Module:
    """Down-sampling by max-pooling (torch's channels-first CPU max-pool is slow at batch 128)."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
    )


def loop(model: nn.Module, loss_fn: Callable, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    out: dict[str, list[torch.Tensor]] = {n: [] for n, _ in named}
    for i in range(x.shape[0]):
        model.zero_grad(set_to_none=True)
        loss_fn(model(x[i : i + 1]), y[i : i + 1]).backward()
        for n, p in named:
            out[n].append(p.grad.detach().clone())
    model.zero_grad(set_to_none=True)
    return {n: torch.stack(v) for n, v in out.items()}


def best_times(fns: dict[str, Callable[[], object]], repeats: int) -> tuple[dict[str, float], dict[str, object]]:
    """Best wall time of each function; rounds interleave the functions so that load from other
    processes on a shared machine hits all of them alike."""
    results = {name: fn() for name, fn in fns.items()}  # warm-up
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            results[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best, results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    loss_fn = nn.CrossEntropyLoss()
    print(f"torch {torch.__version__}, {args.threads} thread(s), batch {args.batch}, best of {args.repeats}, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'model':<12} {'method':<6} {'time ms':>9} {'vs loop':>8} {'max |diff|':>11}")
    for name, build in (("MLP", mlp), ("CNN-strided", cnn_strided), ("CNN-maxpool", cnn_maxpool)):
        model = build().eval()
        x = torch.randn(args.batch, 1, 8, 8)
        y = torch.randint(0, 10, (args.batch,))
        params = [p for p in model.parameters() if p.requires_grad]
        times, results = best_times({
            "loop": lambda: loop(model, loss_fn, x, y),
            # context, not a method: one ordinary batched forward + backward (summed gradients only)
            "step": lambda: torch.autograd.grad(loss_fn(model(x), y), params),
            "vmap": lambda: per_sample_grads(model, loss_fn, x, y, method="vmap"),
            "fast": lambda: per_sample_grads(model, loss_fn, x, y, method="fast"),
        }, args.repeats)
        ref = results["loop"]
        step = times["step"]
        print(f"{name:<12} {'step':<6} {step * 1e3:9.2f} {times['loop'] / step:7.1f}x {'(batch grad)':>11}")
        for method in ("loop", "vmap", "fast"):
            got = results[method]
            assert method == "loop" or got.method == method
            diff = max(float((got[n] - ref[n]).abs().max()) for n in ref)
            print(f"{name:<12} {method:<6} {times[method] * 1e3:9.2f} {times['loop'] / times[method]:7.1f}x {diff:11.2e}")

if __name__ == "__main__":
    main()
