"""``torchwise tune`` on a GPU: a ResNet-style CNN on 32x32 inputs, tuned against default fp32.

    .venv/bin/python benchmarks/tune_gpu.py [--budget 300] [--confirm 5] [--rounds 3] [--peak-tflops X]

Target: tuned >= 2x the samples/s of the default fp32 configuration, end to end through the
DataLoader. It runs ``torchwise.tune`` on a CIFAR-style ResNet-18 (synthetic 3x32x32 images,
nothing downloaded, batch 128), confirms the choice by measuring default and tuned alternately
(``--rounds`` windows of ``--confirm`` seconds, median samples/s), counts the model FLOPs of one
training step with ``torch.utils.flop_counter`` and reports the model FLOPs utilisation (MFU) of
both runs against the GPU's dense peak for the precision each used (a small table of known GPUs;
``--peak-tflops`` overrides it). ``--device cpu --n 512 --width 8 --budget 10`` is a smoke run.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import TensorDataset
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _tune_common import configs, confirm, settings_text  # noqa: E402

from torchwise.utils.batch import split_batch  # noqa: E402
from torchwise.core.task import Task, accuracy  # noqa: E402
from torchwise.tune import tune  # noqa: E402

# dense tensor-core peaks in TFLOP/s: (16-bit, TF32, plain fp32); first matching name fragment wins
PEAKS: list[tuple[str, tuple[float, float, float]]] = [
    ("H200", (989.0, 494.7, 66.9)),
    ("H100 PCIe", (756.0, 378.0, 51.2)),
    ("H100", (989.0, 494.7, 66.9)),
    ("A100", (312.0, 156.0, 19.5)),
    ("L40S", (362.0, 183.0, 91.6)),
    ("L4", (121.0, 60.0, 30.3)),
    ("A10", (125.0, 62.5, 31.2)),
    ("4090", (165.2, 82.6, 82.6)),
    ("V100", (125.0, 15.7, 15.7)),
    ("T4", (65.0, 8.1, 8.1)),
]


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class ResNet32(nn.Module):
    """ResNet-18 layout for 32x32 inputs (3x3 stem, no max-pool), ``width`` channels in the stem."""

    def __init__(self, width: int = 64, classes: int = 10) -> None:
        super().__init__()
        w = [width, 2 * width, 4 * width, 8 * width]
        self.stem = nn.Sequential(nn.Conv2d(3, w[0], 3, 1, 1, bias=False), nn.BatchNorm2d(w[0]), nn.ReLU(inplace=True))
        layers, cin = [], w[0]
        for i, cout in enumerate(w):
            layers += [BasicBlock(cin, cout, 1 if i == 0 else 2), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.layers(self.stem(x)))


def resnet_task(n: int, batch_size: int, width: int) -> Task:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    torch.manual_seed(0)
    return Task(
        model=ResNet32(width),
        train_data=TensorDataset(x, y),
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4),
        metrics={"accuracy": accuracy},
        batch_size=batch_size,
        name="resnet18-32px",
    )


def flops_per_sample(task: Task, device: torch.device) -> float:
    """Model FLOPs of one training step (forward + backward) per sample, by torch's flop counter."""
    model = copy.deepcopy(task.model).to(device).train()
    inputs, targets = split_batch(task.get_example_batch())
    inputs, targets = inputs.to(device), targets.to(device)
    counter = FlopCounterMode(display=False)
    with counter:
        task.loss_fn(model(inputs), targets).backward()
    return counter.get_total_flops() / inputs.shape[0]  # per sample: independent of the batch size


def peak_tflops(device: torch.device, cfg: dict, override: float | None) -> tuple[float | None, str]:
    if override:
        return override, "given"
    if device.type != "cuda":
        return None, "unknown"
    name = torch.cuda.get_device_name(device)
    for fragment, (half, tf32, fp32) in PEAKS:
        if fragment in name:
            if cfg.get("precision") in ("bf16-mixed", "16-mixed"):
                return half, f"{name} 16-bit dense"
            if cfg.get("matmul_precision") == "high":
                return tf32, f"{name} TF32 dense"
            return fp32, f"{name} fp32"
    return None, f"{name}: not in the table (pass --peak-tflops)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=300.0)
    ap.add_argument("--confirm", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=50000, help="synthetic training images")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--peak-tflops", type=float, default=None)
    ap.add_argument("--out", default="bench-tune-gpu")
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("tune_gpu.py: no CUDA device here (use --device cpu for a smoke run)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    task = resnet_task(args.n, args.batch, args.width)
    threads = torch.get_num_threads()
    t0 = time.perf_counter()
    res = tune(task, budget_s=args.budget, device=device, out=out / "tune.json", progress=lambda m: print(f"  {m}", file=sys.stderr))
    tuner_s = time.perf_counter() - t0
    try:
        res.plot(out / "speedups.png")
    except Exception as exc:
        print(f"  (no chart: {exc})", file=sys.stderr)
    res.print()
    default, tuned = configs(res, threads, task.batch_size)
    conf = confirm(task, device, default, tuned, args.confirm, args.rounds)

    rows = []
    fps = flops_per_sample(task, device)  # per sample: the same for both configurations
    for name, cfg in (("default fp32", default), ("tuned", tuned)):
        peak, source = peak_tflops(device, cfg, args.peak_tflops)
        sps = conf["default" if name.startswith("default") else "tuned"]
        mfu = fps * sps / (peak * 1e12) if peak else None
        rows.append((name, cfg, sps, fps, mfu, source))
    print(f"\n{res.device}, torch {torch.__version__}, budget {args.budget:g} s, tuner took {tuner_s:.1f} s; chosen: {settings_text(res)}\n")
    print("| configuration | batch | samples/s | speed-up | GFLOP/sample (fwd+bwd) | MFU | peak used |")
    print("|---|---|---|---|---|---|---|")
    base = rows[0][2]
    for name, cfg, sps, fps, mfu, source in rows:
        mfu_text = f"{100 * mfu:.1f}%" if mfu is not None else "n/a"
        print(f"| {name} | {cfg['batch_size']} | {sps:,.0f} | {sps / base:.2f}x | {fps / 1e9:.2f} | {mfu_text} | {source} |")
    print(f"\ntarget >= 2x: {'met' if rows[1][2] / base >= 2 else 'NOT met'} ({rows[1][2] / base:.2f}x)")


if __name__ == "__main__":
    main()
