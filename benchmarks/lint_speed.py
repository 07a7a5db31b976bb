"""Lint speed: torchwise vs TorchFix on the installed torch package's nn, optim and utils/data.

Both tools run as commands (start-up included) on the same folders, side by side in one run:

    python benchmarks/lint_speed.py                       # torchfix from PATH
    python benchmarks/lint_speed.py --torchfix /tmp/tfvenv/bin/torchfix
    TORCHFIX=/tmp/tfvenv/bin/torchfix python benchmarks/lint_speed.py --jobs-compare
    python benchmarks/lint_speed.py --against /tmp/old/src --pairs 7    # this checkout vs another

``--against SRC`` compares this checkout's lint with the torchwise found under another source
folder (e.g. ``git archive`` of an older commit): serial runs (``--jobs 1``) of the two,
interleaved in pairs so that both see the same machine load, each timed by the CPU time
(user + system) of its process; it prints every pair and the median of the per-pair ratios.
With ``--instructions`` both run once under Valgrind's callgrind instead and the ratio of
machine instructions is printed (a count that machine load does not move; a few minutes).
``--project DIR`` (repeatable) points either comparison at a project's folder instead of torch's
library (training scripts exercise the project-wide analyses more), e.g.
``--against /tmp/old/src --instructions --project /path/to/ogb --select default``.

It prints files, lines, wall seconds and lines/s for each tool and the ratio, then the findings
of both tools per TorchFix rule and the torchwise code that covers it (``SHARED``).
The torch package is located without importing it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

FOLDERS = ("nn", "optim", "utils/data")
SHARED = {  # topic -> (torchwise code, TorchFix 0.7 codes): every TorchFix rule has a torchwise code
    "removed functions": ("TW501", ("TOR001", "TOR004")),
    "require_grad typo": ("TW503", ("TOR002",)),
    "checkpoint use_reentrant": ("TW504", ("TOR003",)),
    "deprecated functions (TW220 for torch.cuda.amp)": ("TW502", ("TOR101", "TOR103")),
    "torch.load weights_only": ("TW401", ("TOR102",)),
    "non-public functions": ("TW505", ("TOR104", "TOR105")),
    "log(1 + x)": ("TW506", ("TOR106",)),
    "exp(x) - 1": ("TW507", ("TOR107",)),
    "log(sum(exp(x)))": ("TW508", ("TOR108",)),
    "torchvision pretrained=": ("TW509", ("TOR201",)),
    "transforms.v2.ToTensor": ("TW510", ("TOR202",)),
    "torchvision submodule import": ("TW511", ("TOR203",)),
    "DataLoader workers": ("TW202", ("TOR401",)),
    "zero_grad set_to_none": ("TW208", ("TOR402",)),
    "torch.library.Library in tests": ("TW514", ("TOR901",)),
}
# Small files exercising the shared rules, written to a temporary folder and checked by both
# tools, to show where their answers differ (the torch sources use few of these APIs directly).
SHARED_CASES = {
    "dl_plain.py": "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=32, shuffle=True)\n",
    "dl_alias_zero.py": "from torch.utils.data import DataLoader as DL\nloader = DL(ds, batch_size=32, num_workers=0)\n",
    "dl_module_alias.py": "import torch.utils.data as tud\nloader = tud.DataLoader(ds)\n",
    "dl_kwargs.py": "from torch.utils.data import DataLoader\nloader = DataLoader(ds, **loader_cfg)\n",
    "dl_workers_var.py": "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=args.workers)\n",
    "dl_positional.py": "from torch.utils.data import DataLoader\nloader = DataLoader(ds, 32, True, None, None, 4)\n",
    "zg_false.py": "import torch\noptimizer.zero_grad(set_to_none=False)\n",
    "zg_manual.py": "import torch\nfor p in model.parameters():\n    p.grad.zero_()\n",
    "load_plain.py": "import torch\nstate = torch.load('model.pt')\n",
    "load_false.py": "import torch\nstate = torch.load('model.pt', weights_only=False)\n",
    "load_kwargs.py": "import torch\nstate = torch.load('model.pt', **load_kw)\n",
    "load_pickle_module.py": "import dill\nimport torch\nstate = torch.load('model.pt', pickle_module=dill)\n",
    "load_alias.py": "from torch import load as tload\nstate = tload('model.pt')\n",
    "load_serialization.py": "import torch\nstate = torch.serialization.load('model.pt')\n",
}
_TF_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>TOR\d+) (?P<msg>.*)$")


def torch_root() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed in this interpreter; run with the project's .venv/bin/python")
    return Path(list(spec.submodule_search_locations)[0])


def corpus(root: Path) -> tuple[int, int]:
    files = lines = 0
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(root / folder):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                if name.endswith(".py"):
                    files += 1
                    with open(os.path.join(dirpath, name), "rb") as fh:
                        lines += fh.read().count(b"\n")
    return files, lines


def run_torchwise_on(folder: Path) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "torchwise", "lint", "--isolated", "--select", "ALL", "--format", "json", "."],
                          cwd=folder, capture_output=True, text=True)
    return json.loads(proc.stdout)


def run_torchfix_on(folder: Path, exe: str) -> list[dict]:
    proc = subprocess.run([exe, "--select", "ALL", "."], cwd=folder, capture_output=True, text=True)
    return [{"path": os.path.basename(m["path"]), "code": m["code"]}
            for m in map(_TF_LINE.match, proc.stdout.splitlines()) if m]


def run_torchwise(root: Path, jobs: int | None) -> tuple[float, list[dict], int]:
    # run from the folder above torch/ (inside it, torch/types.py would shadow the stdlib)
    cmd = [sys.executable, "-m", "torchwise", "lint", "--isolated", "--select", "ALL", "--format", "json",
           *(f"torch/{f}" for f in FOLDERS)]
    if jobs is not None:
        cmd[5:5] = ["--jobs", str(jobs)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root.parent, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"torchwise failed ({proc.returncode}): {proc.stderr.strip()[:500]}")
    return wall, json.loads(proc.stdout), proc.returncode


def run_torchfix(root: Path, exe: str) -> tuple[float, list[dict]]:
    start = time.perf_counter()
    proc = subprocess.run([exe, "--select", "ALL", *(f"torch/{f}" for f in FOLDERS)], cwd=root.parent,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    found = []
    for line in proc.stdout.splitlines():
        m = _TF_LINE.match(line)
        if m:
            found.append({"path": os.path.normpath(m["path"]), "line": int(m["line"]), "col": int(m["col"]),
                          "code": m["code"], "message": m["msg"]})
    if proc.returncode not in (0, 1) and not found:
        sys.exit(f"torchfix failed ({proc.returncode}): {proc.stderr.strip()[:500]}")
    return wall, found


def cpu_seconds_of(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    """CPU time (user + system) of one command, from the resource usage of its process."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[:500]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env(src: Path) -> dict[str, str]:
    """The environment that runs the torchwise under ``src``, with bytecode caching on."""
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _lint_cmd(select: str) -> list[str]:
    """The serial lint command both checkouts run (``select``: a --select value, or "default")."""
    chosen = [] if select == "default" else ["--select", select]
    return [sys.executable, "-m", "torchwise", "lint", "--isolated", *chosen, "--jobs", "1", "--format", "json"]


def compare_against(cwd: Path, other_src: Path, pairs: int, select: str = "ALL",
                    targets: tuple[str, ...] = tuple(f"torch/{f}" for f in FOLDERS)) -> None:
    """Interleaved serial runs of this checkout's lint and another source tree's; median ratio."""
    import statistics

    here = Path(__file__).resolve().parents[1] / "src"
    cmd = [*_lint_cmd(select), *targets]
    ratios = []
    print(f"CPU seconds, --jobs 1, this checkout ({here}) vs {other_src}:")
    for i in range(max(1, pairs)):
        times = {}
        order = (("this", here), ("other", other_src)) if i % 2 == 0 else (("other", other_src), ("this", here))
        for label, src in order:
            times[label] = cpu_seconds_of(cmd, cwd, _env(src))
        ratios.append(times["this"] / times["other"])
        print(f"  pair {i + 1}: this {times['this']:.2f} s, other {times['other']:.2f} s, ratio {ratios[-1]:.3f}")
    print(f"median ratio this/other: {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")


def instructions_of(cmd: list[str], cwd: Path, env: dict[str, str]) -> int:
    """Machine instructions one command executes (callgrind's "Collected" count)."""
    import re as _re

    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                          cwd=cwd, env=env, capture_output=True, text=True)
    found = _re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
    if found is None:
        sys.exit(f"callgrind gave no count ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return int(found.group(1))


def compare_instructions(cwd: Path, other_src: Path, select: str = "ALL",
                         targets: tuple[str, ...] = tuple(f"torch/{f}" for f in FOLDERS)) -> None:
    """This checkout's lint vs another source tree's, in instructions (both runs in parallel)."""
    from concurrent.futures import ThreadPoolExecutor

    if shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind on the PATH")
    here = Path(__file__).resolve().parents[1] / "src"
    cmd = [*_lint_cmd(select), *targets]
    for src in (here, other_src):  # one plain run each first, so that both import cached bytecode, as installs do
        subprocess.run(cmd, cwd=cwd, env=_env(src), capture_output=True)
    with ThreadPoolExecutor(2) as pool:
        jobs = {label: pool.submit(instructions_of, cmd, cwd, _env(src))
                for label, src in (("this", here), ("other", other_src))}
        counts = {label: job.result() for label, job in jobs.items()}
    print(f"instructions, --jobs 1: this checkout {counts['this']:,}, {other_src} {counts['other']:,}; "
          f"ratio this/other {counts['this'] / counts['other']:.3f}")


def compare_cases(exe: str) -> None:
    import tempfile

    print("\nshared rules on small cases (which tool flags which file):")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, text in SHARED_CASES.items():
            (folder / name).write_text(text)
        tw = run_torchwise_on(folder)
        tf = run_torchfix_on(folder, exe)
    wanted_tw = {c for c, _ in SHARED.values()}
    wanted_tf = {c for _, codes in SHARED.values() for c in codes}
    print(f"  {'case':24s} {'torchwise':12s} {'TorchFix':12s}")
    for name in SHARED_CASES:
        a = ",".join(sorted({f["code"] for f in tw if os.path.basename(f["path"]) == name and f["code"] in wanted_tw})) or "-"
        b = ",".join(sorted({f["code"] for f in tf if f["path"] == name and f["code"] in wanted_tf})) or "-"
        print(f"  {name:24s} {a:12s} {b:12s}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torchfix", default=os.environ.get("TORCHFIX", "torchfix"),
                        help="the torchfix executable (default: $TORCHFIX or torchfix on PATH)")
    parser.add_argument("--repeat", type=int, default=3, help="torchwise runs; the best wall time is reported (default 3)")
    parser.add_argument("--jobs-compare", action="store_true", help="also time torchwise with --jobs 1 (serial)")
    parser.add_argument("--skip-torchfix", action="store_true", help="time torchwise only")
    parser.add_argument("--cases-only", action="store_true", help="only compare the tools on the small shared-rule cases")
    parser.add_argument("--against", type=Path, default=None, metavar="SRC",
                        help="compare with the torchwise under this source folder instead (CPU time, interleaved)")
    parser.add_argument("--pairs", type=int, default=5, help="interleaved pairs for --against (default 5)")
    parser.add_argument("--instructions", action="store_true", help="with --against: count instructions (callgrind)")
    parser.add_argument("--project", type=Path, action="append", default=[], metavar="DIR",
                        help="with --against: lint this folder instead of torch's nn/optim/utils.data (repeatable: "
                             "one comparison per folder)")
    parser.add_argument("--select", default="ALL", help='with --against: the rules (default ALL; "default": lint\'s defaults)')
    args = parser.parse_args(argv)
    if args.against is not None:
        compare = compare_instructions if args.instructions else compare_against
        extra = () if args.instructions else (args.pairs,)
        if not args.project:
            compare(torch_root().parent, args.against.resolve(), *extra, select=args.select)
        for folder in args.project:
            if not folder.is_dir():
                sys.exit(f"--project {folder}: not a folder")
            print(f"{folder.resolve()}:")
            compare(folder.resolve(), args.against.resolve(), *extra, select=args.select, targets=(".",))  # run inside it
        return 0

    exe = None
    if not args.skip_torchfix:
        exe = shutil.which(args.torchfix) or (args.torchfix if os.path.exists(args.torchfix) else None)
        if exe is None:
            print(f"torchfix not found ({args.torchfix!r}); pass --torchfix PATH or set TORCHFIX, or --skip-torchfix")
            return 2
    if args.cases_only:
        if exe is None:
            print("--cases-only needs torchfix")
            return 2
        compare_cases(exe)
        return 0

    root = torch_root()
    files, lines = corpus(root)
    print(f"corpus: {root} / {', '.join(FOLDERS)}: {files} files, {lines:,} lines")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs visible\n")

    tw_times = []
    tw_found: list[dict] = []
    for _ in range(max(1, args.repeat)):
        wall, tw_found, _ = run_torchwise(root, None)
        tw_times.append(wall)
    tw_wall = min(tw_times)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = [("torchwise lint (default --jobs)", tw_wall, len(tw_found))]
    if args.jobs_compare:
        cpus = os.cpu_count() or 1
        for jobs, label in ((1, "--jobs 1 (serial)"), (cpus, f"--jobs {cpus} (process pool)")):
            t = min(run_torchwise(root, jobs)[0] for _ in range(max(1, args.repeat)))
            rows.append((f"torchwise lint {label}", t, len(tw_found)))

    tf_found: list[dict] = []
    tf_wall = None
    if exe is not None:
        tf_wall, tf_found = run_torchfix(root, exe)
        rows.append(("TorchFix --select ALL", tf_wall, len(tf_found)))

    print(f"{'tool':40s} {'files':>6s} {'lines':>8s} {'wall s':>8s} {'lines/s':>10s} {'findings':>9s}")
    for name, wall, n in rows:
        print(f"{name:40s} {files:6d} {lines:8d} {wall:8.2f} {lines / wall:10,.0f} {n:9d}")
    print(f"(torchwise default runs: {', '.join(f'{t:.2f}' for t in tw_times)} s; 1-minute load average "
          f"before them: {load:.2f} on {os.cpu_count()} CPUs)")
    if tf_wall is not None:
        print(f"\nspeed ratio (torchwise lines/s / TorchFix lines/s): {tf_wall / tw_wall:.1f}x  (target >= 30x)")

    print("\nfindings on the shared rules:")
    for topic, (tw_code, tf_codes) in SHARED.items():
        tw = sorted({(f["path"], f["line"]) for f in tw_found if f["code"] == tw_code})
        tf = sorted({(f["path"], f["line"]) for f in tf_found if f["code"] in tf_codes})
        print(f"  {topic}: torchwise {tw_code} {len(tw)}, TorchFix {'/'.join(tf_codes)} {len(tf)}")
        both = set(tw) & set(tf)
        for path, line in sorted(set(tw) | set(tf)):
            who = "both" if (path, line) in both else ("torchwise only" if (path, line) in set(tw) else "TorchFix only")
            print(f"    {path}:{line}  [{who}]")
    if exe is not None:
        compare_cases(exe)
    return 0


if __name__ == "__main__":
    sys.exit(main())
