"""Checkpoint and resume: when the Trainer writes a checkpoint, and where a resumed run comes from.

Rolling checkpoints ``step-NNNNNNNN.pt`` (``.dcp`` folders under FSDP) are written at each
epoch's end (:class:`EpochCheckpoint`, after every callback has run, so the file holds their
state), every ``checkpoint_every`` optimizer steps (:class:`CheckpointEvery`), at the end of
``fit`` and on an interrupt; the newest ``keep_checkpoints`` are kept. What goes in is
:mod:`.state`; how it is written (atomically, one file or shards) is the strategy's.
``resume``: "last" (the newest checkpoint of the checkpoint folder; a fresh start, said in the
log, when there is none), a file, or a folder; a group that torchrun restarted after a failure
resumes "last" by itself (``resume=False`` turns that off).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchwise.utils.seed import get_rng_state
from torchwise.train import checkpoints as ckpt
from torchwise.train.callbacks import Callback
from torchwise.train.runs import restarted
from torchwise.train.state import state_dict


def save(trainer: Any, path: str | Path | None = None) -> Path | None:
    """Write ``checkpoint_dir/step-NNNNNNNN.pt`` or ``path`` (see :meth:`Trainer.save_checkpoint`)."""
    if trainer.checkpoint_dir is None and path is None:
        return None
    strategy = trainer.strategy
    rng = strategy.gather_object(get_rng_state())  # one entry per rank
    written = None
    rolling = path is None
    if strategy.is_main or strategy.sharded_checkpoints:  # sharded: every rank writes its part
        target = strategy.checkpoint_path(trainer.checkpoint_dir, trainer.step) if rolling else strategy.named_checkpoint_path(Path(path))  # type: ignore[arg-type]
        written = strategy.save_checkpoint(state_dict(trainer, rng), target)
        if rolling and strategy.is_main:
            ckpt.prune(trainer.checkpoint_dir, trainer.keep_checkpoints)
    strategy.barrier()
    if rolling:
        trainer.last_checkpoint = written
        trainer._saved_at = trainer.step
    return written


def save_unsaved(trainer: Any) -> None:
    """At the end of a fit: a checkpoint of the last step, unless it was just written."""
    if trainer.checkpoint_dir is not None and trainer._saved_at != trainer.step:
        save(trainer)


def wanted(resume: Any, checkpoint_dir: Path | None) -> Any:
    """``resume`` as asked, or "last" in a group torchrun restarted (a checkpoint folder given, resume not False)."""
    if resume is None and checkpoint_dir is not None and restarted():
        return "last"  # torchrun restarted the group after a failure: go on from the last checkpoint
    return resume


def read_resume(trainer: Any, resume: Any) -> tuple[dict[str, Any], Path] | None:
    """Read the checkpoint to resume from (its data seed applies before the loaders are built)."""
    path, note = ckpt.resolve_resume(resume, trainer.checkpoint_dir)
    if note:
        trainer._event(note)
    if path is None:
        return None
    state = trainer.strategy.read_checkpoint(path)  # (FSDP: the shards load later, into the built optimizers)
    trainer.data_seed = int(state.get("data_seed", trainer.data_seed))
    return state, path


class CheckpointEvery(Callback):
    """A rolling checkpoint every ``every`` optimizer steps (``checkpoint_every``)."""

    def __init__(self, every: int) -> None:
        self.every = every

    def on_step_end(self, trainer: Any) -> None:
        if trainer.step % self.every == 0:
            save(trainer)


class EpochCheckpoint(Callback):
    """A rolling checkpoint at each epoch's end, after every other callback's ``on_epoch_end``."""

    def on_epoch_end(self, trainer: Any, values: dict[str, float]) -> None:
        save(trainer)
