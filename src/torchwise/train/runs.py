"""Run folders: one folder per run, never two runs mixed in one, and a run id on every metrics row.

**Layout.** By default each run gets ``runs/NAME/version_N`` (``NAME``: the task's name, else
``trainer``; ``N``: one more than the highest existing version, from 0), holding ``metrics.csv``,
``tensorboard/`` and, from the command line, ``checkpoints/``. A path with ``{version}`` in it
(``log_dir="runs/exp/{version}"``) asks for this numbering anywhere; the log and checkpoint
folders share one number. Numbered folders rather than timestamps: short, in order with ``ls``,
unambiguous across clocks and time zones, and the convention of TensorBoard/Lightning users.
The number is claimed by creating the folder (two runs starting together get two numbers); under
several processes rank 0 chooses it and tells the others.

**Resuming.** ``resume="last"`` (``--resume last``) with a numbered layout continues the newest
version when its checkpoint folder holds a checkpoint (the newest checkpoint of *that* folder is
resumed, never one of another run); otherwise it starts fresh in a new version, and says so.

**An explicit folder** (``--log-dir runs/demo``) is used as it is. If it already holds another
run -- a ``metrics.csv`` with rows, or checkpoints in the checkpoint folder -- and the run is not
resuming (nor a group torchrun restarted: its folders hold the job's earlier attempt), it is
refused with one line (continue it with ``--resume last``, or choose another
folder): appending would interleave two runs' metrics, and the rolling ``step-N.pt`` pruning
would delete one run's checkpoints in favour of the other's.

**Run id.** Each run has an id (``YYYYmmdd-HHMMSS-xxxx``), written in the last column of every
``metrics.csv`` row and in every checkpoint; a resumed run keeps the id of the checkpoint it
resumes (the same run, continued), so rows from before and after a resume share it.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from pathlib import Path
from typing import Any

from torchwise.core.errors import UsageError
from torchwise.train import checkpoints as ckpt
from torchwise.train.lock import FolderLocks, lock_folders

VERSION = "{version}"
_VERSION_DIR = re.compile(r"^version_(\d+)$")


def restarted() -> bool:
    """Whether torchrun restarted this process's group (the folders hold this job's earlier attempt)."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0


def new_run_id() -> str:
    """A fresh run id: the start time and 4 random hex digits (sortable, unique in practice)."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def is_numbered(path: Path | None) -> bool:
    """Whether ``path`` asks for a numbered run folder (holds ``{version}``)."""
    return path is not None and VERSION in str(path)


def _split(path: Path) -> tuple[Path, Path]:
    """``(parent, rest)`` around the ``{version}`` component of ``path``."""
    parts = path.parts
    if VERSION not in parts:
        raise UsageError(f"{{version}} must be a whole folder name in {path} (e.g. runs/exp/{{version}}/checkpoints)")
    k = parts.index(VERSION)
    return Path(*parts[:k]) if k else Path("."), Path(*parts[k + 1:]) if k + 1 < len(parts) else Path()


def versions(parent: Path) -> list[int]:
    """The version numbers of the ``version_N`` folders in ``parent``, in order."""
    if not parent.is_dir():
        return []
    return sorted(int(m.group(1)) for p in parent.iterdir() if (m := _VERSION_DIR.match(p.name)) and p.is_dir())


def fill(path: Path | None, version: str) -> Path | None:
    """``path`` with ``{version}`` replaced (paths without it unchanged)."""
    return Path(str(path).replace(VERSION, version)) if is_numbered(path) else path


def choose_version(log_dir: Path | None, checkpoint_dir: Path | None, resuming: bool) -> tuple[str, str]:
    """The ``version_N`` for numbered folders, and a sentence for the log ("" when nothing to say).

    Resuming continues the newest run (the highest version with metrics rows or checkpoints) if its
    (numbered) checkpoint folder holds a checkpoint; otherwise a new version is claimed by creating its folder.
    """
    template = log_dir if is_numbered(log_dir) else checkpoint_dir
    parent, _ = _split(template)  # type: ignore[arg-type]
    found = versions(parent)
    note = ""
    if resuming and is_numbered(checkpoint_dir):  # (an explicit checkpoint folder: resumed from there, logged anew)
        for n in reversed(found):  # the newest run: a folder with a trace of one (a failed start leaves none)
            version = f"version_{n}"
            folder = fill(checkpoint_dir, version)
            if holds_run(fill(log_dir, version), folder) is None:
                continue
            if ckpt.find_last(folder) is not None:
                return version, f"continuing run folder {parent / version}"
            note = f"resume='last': no checkpoint in {folder}, the newest run's; starting a new run"
            break
    return _claim(parent, (found[-1] + 1) if found else 0), note


def _claim(parent: Path, first: int) -> str:
    """Create ``parent/version_N`` for the first free N >= ``first`` (atomic: mkdir fails if it exists)."""
    parent.mkdir(parents=True, exist_ok=True)
    n = first
    while True:
        try:
            (parent / f"version_{n}").mkdir()
            return f"version_{n}"
        except FileExistsError:
            n += 1


def holds_run(log_dir: Path | None, checkpoint_dir: Path | None) -> str | None:
    """What shows that another run used these folders (for the refusal), or None when they are unused."""
    found = []
    metrics = log_dir / "metrics.csv" if log_dir is not None else None
    if metrics is not None and metrics.is_file():
        with open(metrics, encoding="utf-8", errors="replace") as fh:
            if sum(1 for _ in zip(range(2), fh)) > 1:  # a header and at least one row
                found.append(f"{metrics} has rows")
    if checkpoint_dir is not None:
        saved = ckpt.list_checkpoints(checkpoint_dir)
        best = Path(checkpoint_dir) / "best.pt"
        if saved:
            found.append(f"{checkpoint_dir} holds {saved[-1].name}" + (f" and {len(saved) - 1} more" if len(saved) > 1 else ""))
        elif best.exists():
            found.append(f"{checkpoint_dir} holds best.pt")
    return "; ".join(found) or None


def mixing(log_dir: Path | None, checkpoint_dir: Path | None) -> str | None:
    """The one-line refusal when the folders already hold another run, else None."""
    evidence = holds_run(log_dir, checkpoint_dir)
    if evidence is None:
        return None
    folder = log_dir if log_dir is not None else checkpoint_dir
    return (f"{folder} already holds another run ({evidence}): continue it with resume='last' (--resume last), "
            "or choose a new folder (the default, runs/NAME/version_N, makes one per run)")


def _decide(log_dir: Path | None, checkpoint_dir: Path | None, resuming: bool, own: set[str]) -> tuple[str | None, str, str, str | None]:
    """Rank 0's decision: ``(version or None, note, a fresh run id, refusal or None)``."""
    version, note = choose_version(log_dir, checkpoint_dir, resuming) if is_numbered(log_dir) or is_numbered(checkpoint_dir) else (None, "")
    log, ck = (fill(log_dir, version), fill(checkpoint_dir, version)) if version else (log_dir, checkpoint_dir)
    refusal = None
    if not resuming and not restarted():  # (folders this Trainer, or this job's earlier attempt, ran in hold its own run)
        refusal = mixing(log if str(log) not in own else None, ck if str(ck) not in own else None)
    return version, note, new_run_id(), refusal


def resolve(trainer: Any, resuming: bool, own: set[str]) -> tuple[Path | None, Path | None, str, str]:
    """This fit's log and checkpoint folders, a note for the log and a fresh run id, decided on rank 0
    and shared with every rank; a :class:`UsageError` on every rank when the folders hold another run."""
    log_dir, checkpoint_dir = trainer.log_dir, trainer.checkpoint_dir
    strategy = trainer.strategy
    decision = _decide(log_dir, checkpoint_dir, resuming, own) if strategy.is_main else None
    version, note, run_id, refusal = strategy.gather_object(decision)[0]  # every rank takes rank 0's
    if refusal is not None:
        raise UsageError(refusal)
    if version is None:
        return log_dir, checkpoint_dir, note, run_id
    return fill(log_dir, version), fill(checkpoint_dir, version), note, run_id


def claim(trainer: Any, resuming: bool) -> FolderLocks:
    """This fit's folders (numbered ones chosen), checked to hold no other run, then locked (rank 0)."""
    trainer.log_dir, trainer.checkpoint_dir, note, run_id = resolve(trainer, resuming, trainer._own_folders)
    if trainer.oom.folder is not None and trainer.checkpoint_dir is not None:
        trainer.oom.folder = trainer.checkpoint_dir  # (where a rank's out-of-memory split waits for the restart)
    trainer._own_folders.update(str(f) for f in (trainer.log_dir, trainer.checkpoint_dir) if f is not None)
    trainer.run_id = trainer.run_id or run_id  # (a resumed checkpoint's id replaces it when it is read)
    trainer._run_note = note
    folders = [(trainer.checkpoint_dir, "checkpoint folder"), (trainer.log_dir, "log folder")]
    return lock_folders(folders if trainer.strategy.is_main else [])
