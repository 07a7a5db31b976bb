"""``torchwise demo``: the main job, step by step, on the digits example that ships in the package.

Four steps, each announced with the command a user would type, each run in this process through
the same dispatcher (:func:`torchwise.cli.main`):

1. ``train`` the digits Task (:mod:`torchwise.examples.digits`) for a few epochs;
2. ``lint`` a plain PyTorch script on the same data with three classic mistakes
   (``digits_script.py``, copied into the demo folder so it can be opened and edited);
3. ``doctor`` that script: it runs unmodified for a few steps and the doctor names what it saw;
4. ``tune`` the Task for a few seconds and write ``tune.json``.

Everything is written under ``--dir`` (default ``runs/demo``). Needs the ``torch`` and
``examples`` extras; a missing one is named in one line before anything runs.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Callable, Sequence

from torchwise.core.errors import UsageError

Step = tuple[str, list[str], str, tuple[int, ...]]  # title, torchwise argv, what to look for, accepted exit codes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", default="runs/demo", metavar="FOLDER", help="where the demo writes its files (default runs/demo; a folder of an earlier demo is emptied first, any other non-empty folder refused)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs of the training step (default 2)")
    parser.add_argument("--budget", type=float, default=20.0, metavar="SECONDS", help="time budget of the tune step (default 20)")
    parser.add_argument("--steps", default="train,lint,doctor,tune", metavar="A,B", help="which steps to run (default all: train,lint,doctor,tune)")


def check_dependencies() -> None:
    """Raise a one-line error naming the extra when torch or scikit-learn is missing."""
    from torchwise.core.extras import available, install_line

    missing = [name for module, name in (("torch", "PyTorch"), ("sklearn", "scikit-learn")) if not available(module)]
    if missing:
        raise UsageError(f"the demo needs {' and '.join(missing)}, not installed here: {install_line('torch,examples')}")


def plan(folder: Path, *, epochs: int, budget: float) -> list[Step]:
    """The demo's steps: what each shows, the torchwise arguments, and the exit codes that are fine."""
    from torchwise.examples import DIGITS_TASK

    script = str(folder / "digits_script.py")
    return [
        ("train", ["train", DIGITS_TASK, "--epochs", str(epochs), "--seed", "0", "--log-dir", str(folder / "train"), "--no-progress"],
         "the Trainer applies the catalog's practices by default: seeded, checkpointed, metrics in CSV", (0,)),
        ("lint", ["lint", script],
         "static checks on a plain PyTorch script, before anything runs (exit 1: findings)", (0, 1)),
        ("doctor", ["doctor", "--steps", "30", "--", sys.executable, script, "--epochs", "2"],
         "the same script, unmodified, run for 30 steps with the doctor attached: causes with evidence", (0, 1)),
        ("tune", ["tune", DIGITS_TASK, "--budget", f"{budget:g}", "--knobs", "threads,channels_last,loader", "--out", str(folder / "tune.json")],
         "measured speed settings for this model on this machine, kept only when faster than the noise", (0,)),
    ]


MARK = ".torchwise-demo"  # a folder holding this file was made by the demo and may be emptied


def _fresh_folder(folder: Path) -> None:
    """Create ``folder`` empty; a folder with other content than an earlier demo's is refused."""
    if folder.exists():
        if not folder.is_dir():
            raise UsageError(f"--dir {folder} is a file; give a folder")
        if any(folder.iterdir()) and not (folder / MARK).is_file():
            raise UsageError(f"--dir {folder} holds files that torchwise demo did not write; give a new or empty folder")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / MARK).write_text("made by torchwise demo: emptied when the demo runs again\n", encoding="utf-8")


def _shown(argv: Sequence[str]) -> str:
    words = ["python" if a == sys.executable else a for a in argv]
    return "torchwise " + " ".join(words)


def run(args: argparse.Namespace, dispatch: Callable[[list[str]], int] | None = None) -> int:
    """Run the selected steps; 0 when each ended as expected, else the first unexpected status."""
    from torchwise import examples

    if args.epochs < 1 or not args.budget > 0:
        raise UsageError(f"--epochs must be >= 1 and --budget > 0, got {args.epochs} and {args.budget:g}")
    steps = plan(Path(args.dir), epochs=args.epochs, budget=args.budget)
    wanted = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = sorted(set(wanted) - {s[0] for s in steps})
    if unknown or not wanted:
        raise UsageError(f"unknown step(s) {', '.join(unknown) or '(none given)'}; expected some of train,lint,doctor,tune")
    check_dependencies()
    if dispatch is None:
        from torchwise.cli import main as dispatch
    folder = Path(args.dir)
    _fresh_folder(folder)
    shutil.copyfile(examples.PITFALLS_SCRIPT, folder / "digits_script.py")
    chosen = [s for s in steps if s[0] in wanted]
    for i, (title, argv, what, ok) in enumerate(chosen, 1):
        print(f"\n=== [{i}/{len(chosen)}] {title}: {what}\n$ {_shown(argv)}", flush=True)
        status = dispatch(argv)
        sys.stdout.flush()
        if status not in ok:
            print(f"\ntorchwise demo: step {title!r} ended with exit status {status}; stopping here", file=sys.stderr)
            return status or 1
    print(f"\nDone. Everything is in {folder}/. Next: 'torchwise train YOUR_FILE.py:task' with your own Task, "
          f"'torchwise lint YOUR_CODE/', 'torchwise doctor -- python YOUR_SCRIPT.py', 'torchwise rules'.")
    return 0
