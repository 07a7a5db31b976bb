"""``torchwise tune`` on CPU: tuned against default for the digits task and a small CNN.

    .venv/bin/python benchmarks/tune_cpu.py [--budget 120] [--confirm 3] [--rounds 3] [--out DIR]

For each task it runs ``torchwise.tune`` with ``--budget`` seconds (the wall time printed is the
tuner's own time, everything included), then confirms the choice independently: the default
configuration (fp32, torch's threads, no workers) and the tuned one are measured end to end
through the real DataLoader and the training step, alternated ``--rounds`` times for
``--confirm`` seconds each, median samples/s. Prints a Markdown table; writes each tune.json and
speed-up chart to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from _tune_common import configs, confirm, settings_text  # noqa: E402

from torchwise.core.task import Task, accuracy  # noqa: E402
from torchwise.tune import tune  # noqa: E402


def small_cnn_task(n: int = 4096, batch_size: int = 64) -> Task:
    """A small CNN on synthetic 3x32x32 images, 10 classes (CIFAR-sized, nothing downloaded)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    torch.manual_seed(0)

    def block(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True), nn.MaxPool2d(2))

    model = nn.Sequential(block(3, 32), block(32, 64), block(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
    return Task(
        model=model,
        train_data=TensorDataset(x, y),
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
        metrics={"accuracy": accuracy},
        batch_size=batch_size,
        name="small-cnn",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=120.0)
    ap.add_argument("--confirm", type=float, default=3.0, help="seconds per confirmation window")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench-tune-cpu")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from digits import task as digits_task

    device = torch.device("cpu")
    rows = []
    for make in (digits_task, small_cnn_task):
        task = make()
        threads = torch.get_num_threads()
        t0 = time.perf_counter()
        res = tune(task, budget_s=args.budget, device="cpu", out=out / f"tune-{task.name}.json", plot=None, progress=lambda m: print(f"  [{task.name}] {m}", file=sys.stderr))
        tuner_s = time.perf_counter() - t0
        try:
            res.plot(out / f"speedups-{task.name}.png")
        except Exception as exc:  # matplotlib missing: the table is what matters
            print(f"  (no chart: {exc})", file=sys.stderr)
        default, tuned = configs(res, threads, task.batch_size)
        conf = confirm(task, device, default, tuned, args.confirm, args.rounds)
        skipped_time = [s.setting for s in res.skipped if s.kind == "no time"]
        rows.append((task.name, tuner_s, settings_text(res), res.speedup, conf["default"], conf["tuned"], skipped_time))
        torch.set_num_threads(threads)

    print(f"\ntorch {torch.__version__}, {os.cpu_count()} CPUs visible, {torch.get_num_threads()} torch threads, budget {args.budget:g} s\n")
    print("| task | tuner time (s) | chosen | tuner's speed-up | default samples/s | tuned samples/s | confirmed speed-up | skipped for time |")
    print("|---|---|---|---|---|---|---|---|")
    for name, tuner_s, chosen, est, d, t, skipped in rows:
        print(f"| {name} | {tuner_s:.1f} | {chosen} | {est:.2f}x | {d:,.0f} | {t:,.0f} | {t / d:.2f}x | {', '.join(skipped) or '-'} |")


if __name__ == "__main__":
    main()
