"""Training checkpoints: what is saved, where, and how "last" is found.

Files are ``<dir>/step-<8 digits>.pt`` (sharded checkpoints: folders ``step-<8 digits>.dcp``, see
:mod:`torchwise.train.dcp`), written atomically by :func:`torchwise.utils.checkpoint.save_checkpoint`
(TW407) and read with ``weights_only=True`` (TW401) by :func:`torchwise.utils.checkpoint.load_checkpoint`.
Only plain values and tensors go in, so the safe loader reads everything, RNG states included.
The newest ``keep`` files are kept.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from torchwise.core.errors import CheckpointError

FORMAT = 1
_NAME = re.compile(r"^step-(\d+)\.(?:pt|dcp)$")


def checkpoint_path(folder: str | Path, step: int) -> Path:
    return Path(folder) / f"step-{step:08d}.pt"


def list_checkpoints(folder: str | Path) -> list[Path]:
    """Checkpoints in ``folder``, oldest first (by step number)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def find_last(folder: str | Path | None) -> Path | None:
    """The newest checkpoint in ``folder``, or None."""
    if folder is None:
        return None
    found = list_checkpoints(folder)
    return found[-1] if found else None


def resolve_resume(resume: Any, folder: str | Path | None) -> tuple[Path | None, str]:
    """Turn ``resume`` ("last", a path, None) into a file, plus a sentence for the log.

    ``"last"`` with nothing to resume from starts fresh (and says so); a path that does not exist
    raises :class:`CheckpointError`.
    """
    if resume is None or resume is False:
        return None, ""
    if isinstance(resume, str) and resume == "last":
        if folder is None:
            raise CheckpointError("resume='last' needs a checkpoint_dir to look in (Trainer(checkpoint_dir=...) or --checkpoint-dir)")
        last = find_last(folder)
        if last is None:
            return None, f"resume='last': no checkpoint in {folder}; starting fresh"
        return last, f"resuming from {last}"
    path = Path(resume)
    if path.is_dir() and not is_sharded(path):
        last = find_last(path)
        if last is None:
            raise CheckpointError(f"no checkpoint (step-*.pt) in folder {path} to resume from")
        return last, f"resuming from {last}"
    if not path.exists():
        hint = f"; the newest in {folder} is {find_last(folder)}" if find_last(folder) else ""
        raise CheckpointError(f"cannot resume: checkpoint {path} not found{hint} (use resume='last' to start fresh when none exists)")
    return path, f"resuming from {path}"


def prune(folder: str | Path, keep: int) -> None:
    """Delete all but the newest ``keep`` checkpoints (keep <= 0 keeps everything)."""
    if keep <= 0:
        return
    for old in list_checkpoints(folder)[:-keep]:
        try:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
        except OSError:
            pass


def is_sharded(path: str | Path) -> bool:
    """True for a sharded (torch.distributed.checkpoint) checkpoint folder."""
    return (Path(path) / ".metadata").is_file()


def check_format(state: Any, path: Path) -> dict[str, Any]:
    """Validate a loaded training checkpoint; one clear line when it is something else."""
    if not isinstance(state, dict) or "model" not in state or "step" not in state:
        keys = sorted(state)[:8] if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{path} is not a torchwise training checkpoint (found {keys}; expected model, optimizer, step, ...)")
    if int(state.get("format", 0)) > FORMAT:
        raise CheckpointError(f"{path} was written by a newer torchwise (format {state['format']} > {FORMAT})")
    return state
