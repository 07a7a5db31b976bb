"""Per-step overhead of the Trainer in machine instructions (Valgrind's callgrind), not in seconds.

Timing ratios on a shared machine move by a few percent from run to run; instruction counts do
not. This runs the hand-written loop and the Trainer of ``overhead.py`` (same model, loader and
initial weights) under ``valgrind --tool=callgrind`` twice each, for a short and a long epoch,
and reports the instructions of one step as the difference divided by the extra steps, so that
start-up (imports, building the objects) cancels out.

    python benchmarks/overhead_ir.py                 # MLP case, 10 and 210 steps
    python benchmarks/overhead_ir.py --case cnn --short 5 --long 45

Needs ``valgrind`` on the PATH (skipped with a message otherwise); one run takes a few minutes
(runs in parallel, as many as there are CPUs).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ("hand-written loop", "torchwise Trainer", "Trainer, step_fn")


def child(case: str, variant: str, steps: int) -> None:
    """Train one epoch of ``steps`` batches with one of overhead.py's runners (run under callgrind)."""
    import copy

    import torch

    sys.path.insert(0, str(HERE))
    import overhead as ob

    torch.set_num_threads(1)
    factory, shape, batch, _ = ob.CASES[case]
    torch.manual_seed(0)
    initial = factory()
    build, _ = ob.RUNNERS[variant]
    build(copy.deepcopy(initial), ob.make_loader(shape, batch, 3), 1)()  # first calls (lazy imports) outside the difference
    build(copy.deepcopy(initial), ob.make_loader(shape, batch, steps), 1)()


def instructions(case: str, variant: str, steps: int, folder: str, tries: int = 3) -> int:
    """Instructions of one child run; a run that dies (on a shared machine, the kernel's OOM killer
    may pick it) is run again, up to ``tries`` times: the count of a completed run does not depend on load."""
    out = os.path.join(folder, f"cg.{VARIANTS.index(variant)}.{steps}")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__, "--child", case, variant, str(steps)]
    for attempt in range(tries):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        found = re.search(r"Collected : (\d+)", proc.stderr)
        if proc.returncode == 0 and found:
            return int(found.group(1))
        print(f"callgrind run {attempt + 1} of {tries} failed for {variant} ({steps} steps, exit {proc.returncode}): "
              f"{proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
    raise SystemExit(f"callgrind run failed {tries} times for {variant} ({steps} steps)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", default="mlp", choices=["mlp", "cnn"])
    parser.add_argument("--short", type=int, default=10, help="steps of the short run")
    parser.add_argument("--long", type=int, default=210, help="steps of the long run")
    parser.add_argument("--child", nargs=3, metavar=("CASE", "VARIANT", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return
    if shutil.which("valgrind") is None:
        print("valgrind not found: install it (apt install valgrind) to count instructions")
        return
    jobs = [(v, s) for v in VARIANTS for s in (args.short, args.long)]
    with tempfile.TemporaryDirectory() as folder, ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: instructions(args.case, job[0], job[1], folder), jobs)))
    per_step = {v: (counts[(v, args.long)] - counts[(v, args.short)]) / (args.long - args.short) for v in VARIANTS}
    hand = per_step[VARIANTS[0]]
    print(f"{args.case}: instructions per training step (callgrind, {args.long} - {args.short} steps)")
    print(f"  {'':22}{'instructions':>14}  {'ratio':>6}  {'overhead':>9}")
    for v in VARIANTS:
        print(f"  {v:22}{per_step[v]:14,.0f}  {hand / per_step[v]:5.3f}x  {100 * (per_step[v] / hand - 1):+8.1f}%")


if __name__ == "__main__":
    main()
