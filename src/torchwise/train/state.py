"""The run's state in a checkpoint: what :func:`state_dict` saves and :func:`load_state` restores.

One place for everything a resumed run needs: the model and optimizers (through the strategy,
which shards them under FSDP), each phase's scheduler and precision state, the checkpointed
plug-ins (``plugins``: early stopping, the best checkpoint, EMA, and any callback with a ``key``
and ``state_dict``), the RNG states of every rank, the counters (``epoch``, ``step``,
``batch_in_epoch``), the data order's seed, the run id and the plan. With one optimizer the
per-phase entries are plain; with several they are dicts by optimizer name. The RNG states are
restored last, by :mod:`.plan`, just before the first batch.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Mapping

from torchwise.core.errors import CheckpointError
from torchwise.train import checkpoints as ckpt
from torchwise.train.phases import Phase


def _single(trainer: Any) -> bool:
    return len(trainer.phases) == 1 and not trainer.phases[0].name


def state_dict(trainer: Any, rng: Any) -> dict[str, Any]:
    """Everything a resumed run needs (``rng``: the gathered RNG states, one per rank)."""
    model, strategy = trainer.model, trainer.strategy

    def each(fn: Callable[[Phase], Any]) -> Any:  # one optimizer: plain entries; several: by name
        return fn(trainer.phases[0]) if _single(trainer) else {p.name: fn(p) for p in trainer.phases}

    return {
        "format": ckpt.FORMAT,
        "model": strategy.model_state_dict(model),
        "optimizer": each(lambda p: strategy.optimizer_state_dict(model, p.optimizer)),
        "scheduler": each(lambda p: p.scheduler.state_dict() if p.scheduler is not None else None),
        "precision": each(lambda p: p.precision.state_dict()),
        "plugins": {p.key: p.state_dict() for p in trainer.stateful},
        "rng": rng,
        "epoch": trainer.epoch,
        "step": trainer.step,
        "batch_in_epoch": trainer.batch_in_epoch,
        "batch_size": trainer.meter.batch_size,
        "accumulate": trainer.accumulate,
        "data_seed": trainer.data_seed,
        "oom_splits": trainer.oom.splits,
        "best": {k: [v, e] for k, (v, e) in trainer.best.items()},
        "world_size": strategy.world_size,
        "plan": dataclasses.asdict(trainer.plan) if trainer.plan is not None else None,
        "run_id": trainer.run_id,
    }


def load_state(trainer: Any, state: dict[str, Any], path: Path) -> None:
    """Restore what :func:`state_dict` saved (the RNG excepted): the strategy loads the model."""
    current = {p.key: p.state_dict() for p in trainer.stateful}
    state = trainer.strategy.load_checkpoint(path, state, trainer.model, {p.name: p.optimizer for p in trainer.phases}, plugins=current)
    for phase in trainer.phases:
        _load_phase(trainer, phase, state, path)
    saved_plugins = state.get("plugins") or {}
    for plugin in trainer.stateful:
        if plugin.key in saved_plugins:
            plugin.load_state_dict(saved_plugins[plugin.key])
    trainer.epoch, trainer.step, trainer.batch_in_epoch = int(state["epoch"]), int(state["step"]), int(state["batch_in_epoch"])
    note = trainer.oom.resume(int(state.get("oom_splits", 1)))  # (more after a rank ran out of memory: see oom.py)
    if note:
        trainer._event(note)
    trainer.best = {k: (float(v[0]), int(v[1])) for k, v in (state.get("best") or {}).items()}
    if state.get("run_id"):
        trainer.run_id = str(state["run_id"])  # the same run, continued
    _notes(trainer, state)
    trainer.last_checkpoint = path
    trainer._saved_at = trainer.step


def _load_phase(trainer: Any, phase: Phase, state: Mapping[str, Any], path: Path) -> None:
    """One optimizer's state, its scheduler's and its precision plug-in's."""
    single = _single(trainer)

    def part(key: str) -> Any:
        value = state.get(key)
        if single or value is None:
            return value
        if not isinstance(value, Mapping) or phase.name not in value:
            raise CheckpointError(f"{path} has no {key} state for optimizer {phase.name!r}: was it saved with other optimizers?")
        return value[phase.name]

    try:
        trainer.strategy.load_optimizer_state(trainer.model, phase.optimizer, part("optimizer"))
    except (ValueError, KeyError, RuntimeError, TypeError) as exc:
        raise CheckpointError(f"the optimizer state in {path} does not fit this optimizer ({exc}); was it saved with another optimizer or parameter grouping?") from exc
    if phase.scheduler is not None and part("scheduler") is not None:
        phase.scheduler.load_state_dict(part("scheduler"))
    phase.precision.load_state_dict(part("precision") or {})


def _notes(trainer: Any, state: Mapping[str, Any]) -> None:
    """Say what differs between the checkpoint's run and this one (accumulation, the plan)."""
    if state.get("accumulate", trainer.accumulate) != trainer.accumulate:
        trainer._event(f"note: the checkpoint used accumulate={state['accumulate']}, this run {trainer.accumulate}")
    planned = (state.get("plan") or {}).get("total_steps")
    plan = trainer.plan
    if trainer._wants_plan and plan is not None and planned is not None and planned != plan.total_steps:
        trainer._event(f"note: the checkpoint's run planned {planned} optimizer steps, this run {plan.total_steps}: the optimizer "
                       f"and scheduler factories that take the plan were built for this run's, so the schedule continues from step "
                       f"{trainer.step} on the new plan (resume with the same epochs/batch size/accumulate to keep the old one)")
