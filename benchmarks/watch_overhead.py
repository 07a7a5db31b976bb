"""What ``torchwise watch`` adds to a training step: the same unmodified scripts alone and watched.

    python benchmarks/watch_overhead.py                    # the three cases, 5 interleaved repeats
    python benchmarks/watch_overhead.py --case digits-cnn --repeats 9
    python benchmarks/watch_overhead.py --callgrind        # instructions per step instead (needs valgrind)

Cases (tutorial-style scripts of the test suite, run as a user would): ``digits-mlp`` and
``digits-cnn`` (tests/doctor/scripts/train_digits.py: an MLP, and a CNN with BatchNorm, on
scikit-learn's digits, Adam) and ``char-lm`` (tests/doctor/scripts/train_lm.py: a 2-layer transformer character
model). Each repeat runs the script alone and under ``torchwise watch``
with the default (automatic) sampling, one after the other, the order alternating between
repeats. A ``sitecustomize`` placed on ``PYTHONPATH`` for both registers a global optimizer
step hook that records the process's CPU time and the wall time at every step; the steps after
the first ``--skip`` (the start and the watch's dense first window, a one-off cost) give the
steady-state time per step, and all steps the whole-run time. Reported: per case, the median
over repeats of watched/alone (CPU time: what the watch itself costs, robust when other jobs
share the machine; wall time too), the sampling interval the watch chose and its own estimate.

``--inprocess``: the same models (the scripts' MLP, CNN and transformer LM) trained in this
process, in rounds of three blocks of about ``--seconds`` CPU seconds each: alone, watched with
sampling switched off (what the per-step hooks cost) and watched with the default sampling, the
order rotating between rounds. Each watched block gets a fresh watch that has already run its
start, its dense first window and 1.5 blocks' worth of steps (so the automatic interval has
settled, as in the long runs the watch is for) before the block's clock starts. Reported: the
ratio of the CPU time summed over all rounds (sampled steps are rare, so a block holds a few;
the sum prices them at their real frequency) and the median and range of the per-round ratios.
No process start-up, so the blocks are seconds apart and the ratio is far steadier on a busy machine.

``--callgrind``: each script alone and watched (with the interval the timing runs chose, fixed
with ``--every`` so the count is deterministic) for a short and a long run under Valgrind's
callgrind; instructions per step = (long - short) / (extra steps), so start-up cancels out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "doctor" / "scripts"
CASES = {  # name -> (script, args for a long run, args for a short run (callgrind), steps long, steps short)
    "digits-mlp": ("train_digits.py", ["--model", "mlp", "--epochs", "20"], ["--model", "mlp", "--epochs", "2"], 1140, 114),
    "digits-cnn": ("train_digits.py", ["--model", "cnn", "--epochs", "8"], ["--model", "cnn", "--epochs", "2"], 456, 114),
    "char-lm": ("train_lm.py", ["--steps", "1500"], ["--steps", "150"], 1500, 150),
}
TIMER = '''
import atexit, json, os, time
_out = os.environ.get("TW_STEP_TIMER")
if _out:
    _marks = []
    def _hook(optimizer, args, kwargs):
        _marks.append((time.process_time(), time.perf_counter()))
    import torch.optim.optimizer as _o
    _o.register_optimizer_step_post_hook(_hook)
    atexit.register(lambda: _marks and open(_out, "w").write(json.dumps(_marks)))  # (not the watch's own parent)
'''


def timed_run(case: str, watched: bool, folder: Path, tag: str, every: int | None = None, steps_args: list[str] | None = None) -> dict:
    script, args, _, _, _ = CASES[case]
    marks = folder / f"{tag}.json"
    env = dict(os.environ, TW_STEP_TIMER=str(marks), OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(folder), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, str(SCRIPTS / script), *(steps_args or args)]
    log = folder / f"{tag}.jsonl"
    if watched:
        command = [sys.executable, "-m", "torchwise", "watch", "--log", str(log), *(["--every", str(every)] if every else []),
                   "--stall", "0", "--", *command]
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=folder)
    return {"marks": json.loads(marks.read_text()), "log": log if watched else None}


def per_step(marks: list, skip: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per step over the steps after ``skip``."""
    a, b = marks[skip], marks[-1]
    n = len(marks) - 1 - skip
    return (b[0] - a[0]) / n, (b[1] - a[1]) / n


def watch_facts(log: Path) -> dict:
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    end = next((e for e in events if e["event"] == "end"), {})
    measured = ((end.get("report") or {}).get("measured") or {})
    return {"every": measured.get("every"), "estimate": measured.get("overhead_estimate"), "samples": measured.get("samples"),
            "findings": len((end.get("report") or {}).get("findings") or [])}


def timing(cases: list[str], repeats: int, skip: int) -> None:
    print(f"# torchwise watch overhead, {time.strftime('%Y-%m-%d %H:%M')}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, Python {platform.python_version()}")
    print("| case | steps | alone ms/step (CPU) | watched / alone, CPU, steady | wall, steady | CPU, whole run | every | samples | watch's estimate |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="tw-watch-bench-") as tmp:
        folder = Path(tmp)
        (folder / "sitecustomize.py").write_text(TIMER)
        for case in cases:
            cpu, wall, whole, alone_ms, facts = [], [], [], [], {}
            for r in range(repeats):
                order = (False, True) if r % 2 == 0 else (True, False)
                runs = {w: timed_run(case, w, folder, f"{case}-{r}-{int(w)}") for w in order}
                a, w = runs[False]["marks"], runs[True]["marks"]
                (ac, aw), (wc, ww) = per_step(a, skip), per_step(w, skip)
                cpu.append(wc / ac)
                wall.append(ww / aw)
                whole.append(per_step(w, 0)[0] / per_step(a, 0)[0])
                alone_ms.append(ac * 1e3)
                facts = watch_facts(runs[True]["log"])
            print(f"| {case} | {len(a)} | {statistics.median(alone_ms):.3g} | {statistics.median(cpu):.3f}x | {statistics.median(wall):.3f}x "
                  f"| {statistics.median(whole):.3f}x | {facts.get('every')} | {facts.get('samples')} | {facts.get('estimate')} |", flush=True)


def callgrind(cases: list[str], every: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind")
    print(f"# instructions per step under callgrind (every {every}), {time.strftime('%Y-%m-%d %H:%M')}")
    print("| case | alone | watched | watched / alone |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="tw-watch-ir-") as tmp:
        folder = Path(tmp)
        for case in cases:
            script, long_args, short_args, n_long, n_short = CASES[case]
            counts = {}
            for watched in (False, True):
                for args in (short_args, long_args):
                    inner = [sys.executable, str(SCRIPTS / script), *args]
                    if watched:
                        inner = [sys.executable, "-m", "torchwise", "watch", "--log", str(folder / "e.jsonl"), "--every", str(every),
                                 "--stall", "0", "--", *inner]
                    out = folder / f"cg.{case}.{int(watched)}.{len(args)}.{args[-1]}"
                    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0", PYTHONPATH=str(ROOT / "src"))
                    cmd = ["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={out}.%p", *inner]
                    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=folder)
                    total = 0
                    for f in folder.glob(f"{out.name}.*"):
                        m = re.search(r"^summary:\s*(\d+)", f.read_text(errors="replace"), re.M) or re.search(r"^totals:\s*(\d+)", f.read_text(errors="replace"), re.M)
                        total += int(m.group(1)) if m else 0
                    counts[(watched, args is long_args)] = total
            alone = (counts[(False, True)] - counts[(False, False)]) / (n_long - n_short)
            watched_ir = (counts[(True, True)] - counts[(True, False)]) / (n_long - n_short)
            print(f"| {case} | {alone:,.0f} | {watched_ir:,.0f} | {watched_ir / alone:.3f}x |", flush=True)


def _inprocess_case(case: str):
    """(model, optimizer, next_batch, loss) for a case, built like its script."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.manual_seed(0)
    if case.startswith("digits"):
        from sklearn.datasets import load_digits

        d = load_digits()
        x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
        y = torch.tensor(d.target)
        if case == "digits-mlp":
            model = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
        else:
            model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                  nn.Linear(32 * 2 * 2, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 10))
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True, drop_last=True)
        state = {"it": iter(loader)}

        def batch():
            try:
                return next(state["it"])
            except StopIteration:
                state["it"] = iter(loader)
                return next(state["it"])
        return model, torch.optim.Adam(model.parameters(), lr=1e-3), batch, F.cross_entropy
    data = torch.randint(0, 30, (8000,))
    layer = nn.TransformerEncoderLayer(48, 4, 192, dropout=0.1, batch_first=True)
    model = nn.Sequential(nn.Embedding(30, 48), nn.TransformerEncoder(layer, 2), nn.Linear(48, 30))

    def batch():
        starts = torch.randint(0, len(data) - 33, (16,))
        return torch.stack([data[s:s + 32] for s in starts]), torch.stack([data[s + 1:s + 33] for s in starts])
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3), batch, lambda out, y: F.cross_entropy(out.reshape(-1, 30), y.reshape(-1))


def inprocess(cases: list[str], repeats: int, seconds: float) -> None:
    """Rounds of three blocks in one process: alone, watched with sampling off (the per-step hooks
    only) and watched by default, the order rotating between rounds; each watched block gets a
    watch that has already run its start, its dense first window and enough steps for the
    automatic interval to settle (the steady state of a long run)."""
    import torch

    from torchwise.watch.options import WatchOptions
    from torchwise.watch.session import Session

    torch.set_num_threads(1)
    print(f"# in-process, {repeats} rounds of 3 blocks of about {seconds:g} s each (order rotating), "
          f"{time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f}")
    print("| case | alone ms/step (CPU) | hooks only / alone | watched / alone | watched, median of rounds (min-max) | every | samples per block |")
    print("|---|---|---|---|---|---|---|")
    for case in cases:
        model, opt, batch, loss_fn = _inprocess_case(case)

        def steps(n: int) -> float:
            t0 = time.thread_time()
            for _ in range(n):
                x, y = batch()
                loss = loss_fn(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            return time.thread_time() - t0

        per = steps(100) / 100
        n = max(100, int(seconds / per))
        settle = max(200, 3 * n // 2)
        totals = {"alone": 0.0, "hooks": 0.0, "watched": 0.0}
        ratios, facts = [], []
        for r in range(repeats):
            kinds = ["alone", "hooks", "watched"]
            kinds = kinds[r % 3:] + kinds[:r % 3]
            spent = {}
            for kind in kinds:
                session = None
                if kind != "alone":
                    every = 10**9 if kind == "hooks" else None
                    session = Session(WatchOptions(alerts=False, stall=0, every=every), subject=case).attach()
                    steps(settle)  # start, dense first window, the interval settling: outside the clock
                    before = session.samples
                spent[kind] = steps(n)
                if session is not None:
                    if kind == "watched":
                        facts.append((session.every, session.samples - before))
                    session.close()
            for k, v in spent.items():
                totals[k] += v
            ratios.append(spent["watched"] / spent["alone"])
        alone = totals["alone"] / (repeats * n)
        print(f"| {case} | {alone * 1e3:.3g} | {totals['hooks'] / totals['alone']:.3f}x | {totals['watched'] / totals['alone']:.3f}x | "
              f"{statistics.median(ratios):.3f}x ({min(ratios):.3f}-{max(ratios):.3f}) | {facts[-1][0]} | "
              f"{statistics.median(f[1] for f in facts):g} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip", type=int, default=60, help="steps left out of the steady state (start, dense first window)")
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--every", type=int, default=100, help="with --callgrind: the fixed sampling interval")
    parser.add_argument("--inprocess", action="store_true")
    parser.add_argument("--seconds", type=float, default=2.0, help="with --inprocess: CPU seconds per block")
    args = parser.parse_args()
    cases = args.case or list(CASES)
    if args.inprocess:
        inprocess(cases, args.repeats, args.seconds)
    elif args.callgrind:
        callgrind(cases, args.every)
    else:
        timing(cases, args.repeats, args.skip)


if __name__ == "__main__":
    main()
