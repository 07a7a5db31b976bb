"""Sharded training checkpoints with ``torch.distributed.checkpoint`` (DCP).

A checkpoint is a folder ``step-<8 digits>.dcp`` holding DCP's files (one per rank, written in
parallel, plus ``.metadata``) for the model, the optimizer(s) and the plug-ins' states (the EMA's
sharded averages), and ``trainer.pt``: everything else the Trainer saves (step, epoch, RNG states, scheduler, scaler...) as a plain torchwise
checkpoint. Saving is atomic: all ranks write into ``.step-<N>.dcp.tmp`` and rank 0 renames it
when every rank has finished, so a rank that dies mid-save leaves the previous checkpoint intact.

Loading goes through DCP's resharding, so a checkpoint written by N processes resumes under M.
:func:`read_full` assembles one in a single process (no process group): that is what
``torchwise checkpoint consolidate`` writes, and how a single-process or DDP run resumes from
it. The other way, :func:`load_full` starts an FSDP run from a single-file (DDP or single-process)
checkpoint.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torchwise.utils.checkpoint import _fsync_dir, load_checkpoint, save_checkpoint
from torchwise.core.errors import CheckpointError
from torchwise.train import checkpoints as ckpt

TRAINER_FILE = "trainer.pt"
_SHARDED = ("model", "optimizer", "plugins")  # what DCP writes (the rest: trainer.pt)


def checkpoint_dir(folder: str | Path, step: int) -> Path:
    return Path(folder) / f"step-{step:08d}.dcp"


def save(state: dict[str, Any], path: Path, strategy: Any) -> Path:
    """Write ``state`` as a sharded checkpoint folder ``path`` (every rank calls this).

    ``state["model"]`` and ``state["optimizer"]`` (one optimizer's state dict, or a dict of them by
    name) hold this rank's shards (the strategy's ``model_state_dict``/``optimizer_state_dict``), and
    ``state["plugins"]`` the plug-ins' states (DTensors such as the EMA's averages, and plain values);
    DCP writes those; the rest goes to ``trainer.pt``, written by rank 0.
    """
    import torch.distributed.checkpoint as dcp

    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    if strategy.is_main:
        shutil.rmtree(tmp, ignore_errors=True)  # left by a run that died while saving
        tmp.mkdir(parents=True)
    strategy.barrier()
    dcp.save({k: state[k] for k in _SHARDED if state.get(k)}, checkpoint_id=str(tmp))  # returns once .metadata is written
    if strategy.is_main:
        save_checkpoint(tmp / TRAINER_FILE, **{k: v for k, v in state.items() if k not in _SHARDED})
        _fsync_dir(tmp)
        old = path.with_name(f".{path.name}.old")
        if path.exists():  # the same step saved again: swap, then drop the old one
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
        shutil.rmtree(old, ignore_errors=True)
    strategy.barrier()
    return path


def _trainer_state(path: Path) -> dict[str, Any]:
    file = path / TRAINER_FILE
    if not file.is_file():
        raise CheckpointError(f"{path} is not a torchwise sharded checkpoint: {TRAINER_FILE} is missing")
    return ckpt.check_format({"model": None, **load_checkpoint(file)}, path)


def read_state(path: Path) -> dict[str, Any]:
    """What a sharded run reads before loading: ``trainer.pt`` of a folder, or a whole single-file checkpoint."""
    path = Path(path)
    if ckpt.is_sharded(path):
        return _trainer_state(path)
    return ckpt.check_format(load_checkpoint(path, map_location="cpu"), path)


def _each(optimizers: dict[str, torch.optim.Optimizer], fn: Any) -> Any:
    """The checkpoint's optimizer entry: one state dict for a single unnamed optimizer, else a dict by name."""
    return fn(optimizers[""]) if list(optimizers) == [""] else {k: fn(o) for k, o in optimizers.items()}


def load_sharded(path: Path, state: dict[str, Any], model: nn.Module, optimizers: dict[str, torch.optim.Optimizer],
                 plugins: dict[str, Any] | None = None) -> dict[str, Any]:
    """Restore a sharded model from the folder ``path``; ``state["optimizer"]`` gets the optimizers' sharded
    states and ``state["plugins"]`` the plug-ins' (``plugins``: their current state dicts, the shapes to load
    into; those the checkpoint does not hold are left out)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, get_optimizer_state_dict, set_model_state_dict

    # (get_optimizer_state_dict initialises each optimizer's state: the shapes DCP loads into)
    template = {"model": get_model_state_dict(model), "optimizer": _each(optimizers, lambda o: get_optimizer_state_dict(model, o))}
    if plugins and "plugins" not in state:  # (older checkpoints kept the plug-ins in trainer.pt)
        saved = _saved_keys(path)
        template["plugins"] = {k: v for k, v in plugins.items() if any(s.startswith(f"plugins.{k}.") for s in saved)}
    try:
        dcp.load({k: v for k, v in template.items() if v}, checkpoint_id=str(path))
    except (Exception, CheckpointException) as exc:  # (CheckpointException: a BaseException holding every rank's error)
        raise CheckpointError(f"cannot load the sharded checkpoint {path} into this model and optimizer: {_reason(exc)}") from exc
    set_model_state_dict(model, template["model"], options=StateDictOptions(strict=True))
    return {**state, "model": None, "optimizer": template["optimizer"], "plugins": template.get("plugins", state.get("plugins"))}


def _saved_keys(path: Path) -> set[str]:
    """The flattened keys a DCP folder holds (``plugins.ema.weights.fc.weight``...)."""
    import torch.distributed.checkpoint as dcp

    try:
        return set(dcp.FileSystemReader(str(path)).read_metadata().state_dict_metadata)
    except Exception as exc:
        raise CheckpointError(f"cannot read the sharded checkpoint {path}: {_reason(exc)}") from exc


def _reason(exc: BaseException) -> str:
    """The first rank's error of a DCP failure, in one line."""
    failures = getattr(exc, "failures", None)
    if isinstance(failures, dict) and failures:
        first = next(iter(failures.values()))  # (exception, traceback frames)
        exc = first[0] if isinstance(first, tuple) and first else first
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return lines[-1][:200] if len(lines) > 1 else lines[0][:200]


def load_full(path: Path, state: dict[str, Any], model: nn.Module, optimizers: dict[str, torch.optim.Optimizer]) -> dict[str, Any]:
    """Start a sharded run from a single-file checkpoint's ``state``: every rank keeps its shard of the model.

    ``state["optimizer"]`` comes back keyed by parameter names (what ``set_optimizer_state_dict`` takes
    with ``full_state_dict=True``).
    """
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

    from torchwise.utils.checkpoint import fix_prefixes

    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    mapping, _ = fix_prefixes(list(state["model"]), names)
    full = {mapping[k]: v for k, v in state["model"].items()}
    try:
        set_model_state_dict(model, full, options=StateDictOptions(full_state_dict=True, strict=True))
    except (RuntimeError, KeyError, ValueError) as exc:
        raise CheckpointError(f"the model state in {path} does not fit this model: {str(exc).strip().splitlines()[0][:200]}") from exc
    fqn = {id(p): n for n, p in model.named_parameters()}

    def by_name(entry: Any, optimizer: torch.optim.Optimizer) -> Any:
        if not isinstance(entry, dict) or "param_groups" not in entry:
            return entry  # (missing, or not an optimizer state: the Trainer names the mismatch)
        order = [fqn.get(id(p), "?") for g in optimizer.param_groups for p in g["params"]]
        try:
            return ids_to_names(entry, order)
        except (IndexError, KeyError, TypeError) as exc:
            raise CheckpointError(f"the optimizer state in {path} does not fit this optimizer ({exc!r}); was it saved with another optimizer or parameter grouping?") from exc

    saved = state.get("optimizer")
    if list(optimizers) == [""]:
        converted = by_name(saved, optimizers[""])
    elif isinstance(saved, dict):
        converted = {k: by_name(v, optimizers[k]) if k in optimizers else v for k, v in saved.items()}
    else:
        converted = saved
    return {**state, "model": None, "optimizer": converted}


def ids_to_names(optim_sd: dict[str, Any], order: list[str]) -> dict[str, Any]:
    """``optimizer.state_dict()`` (parameters as positions) keyed by parameter names instead."""
    groups = [{**g, "params": [order[i] for i in g["params"]]} for g in optim_sd["param_groups"]]
    return {"state": {order[i]: s for i, s in optim_sd["state"].items()}, "param_groups": groups}


def names_to_ids(optim_sd: dict[str, Any]) -> dict[str, Any]:
    """The reverse of :func:`ids_to_names`: positions follow the order of the parameter groups."""
    position: dict[str, int] = {}
    groups = []
    for g in optim_sd["param_groups"]:
        ids = [position.setdefault(name, len(position)) for name in g["params"]]
        groups.append({**g, "params": ids})
    state = {position[name]: s for name, s in optim_sd.get("state", {}).items() if name in position}
    return {"state": state, "param_groups": groups}


def read_full(path: str | Path) -> dict[str, Any]:
    """A sharded checkpoint assembled in this process: the same dict a single-file checkpoint holds."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    path = Path(path)
    if not ckpt.is_sharded(path):
        raise CheckpointError(f"{path} is not a sharded checkpoint folder (no .metadata); expected a step-NNNNNNNN.dcp folder")
    state = _trainer_state(path)
    with tempfile.TemporaryDirectory(prefix="torchwise-consolidate-") as tmp:
        out = Path(tmp) / "full.pt"
        try:
            dcp_to_torch_save(str(path), str(out))
        except Exception as exc:
            raise CheckpointError(f"cannot read the sharded checkpoint {path}: {_reason(exc)}") from exc
        full = torch.load(out, map_location="cpu", weights_only=True)
    state["model"] = full["model"]
    if full.get("plugins"):
        state["plugins"] = full["plugins"]
    saved = full.get("optimizer")
    if isinstance(saved, dict) and "param_groups" not in saved and saved:  # several optimizers, by name
        state["optimizer"] = {k: names_to_ids(v) for k, v in saved.items()}
    else:
        state["optimizer"] = names_to_ids(saved) if saved else None
    return state


def consolidate(src: str | Path, out: str | Path) -> Path:
    """Write the sharded checkpoint ``src`` as one file ``out`` (atomically)."""
    state = read_full(src)
    state["consolidated_from"] = str(src)
    return save_checkpoint(out, **state)
