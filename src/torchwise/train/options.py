"""Checking the Trainer's options up front: one line naming the option, the value and what is expected.

Switches take ``True``, ``False`` and, where there is an automatic choice, ``"auto"``; anything
else ("maybe", "yes", 1) is refused instead of quietly acting as "on". Counts are positive
integers (``bool`` is not a count). Folders must not be existing files. One entry point,
:func:`check_options`, called with the Trainer's keywords; then :func:`apply_tuned` fills the
options a tune.json decides that the caller left at their defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torchwise.core.errors import UsageError


def check_switch(name: str, value: Any, auto: bool = True) -> None:
    """``value`` must be True or False (or "auto" when ``auto``)."""
    if isinstance(value, bool) or (auto and value == "auto"):
        return
    expected = "True, False or 'auto'" if auto else "True or False"
    raise UsageError(f"{name} must be {expected}, got {value!r}")


def check_count(name: str, value: Any, minimum: int = 1, optional: bool = False) -> None:
    """``value`` must be an integer >= ``minimum`` (or None when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        expected = f"an integer >= {minimum}" + (" or None" if optional else "")
        raise UsageError(f"{name} must be {expected}, got {value!r}")


def check_folder(name: str, value: Any) -> None:
    """``value`` (a path, or None/False for none) must not name an existing file."""
    if value is None or value is False:
        return
    if not isinstance(value, (str, Path)) or str(value) == "":
        raise UsageError(f"{name} must be a folder path or None, got {value!r}")
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{name} {path} is a file, not a folder; give a folder path (it is created when missing)")


def check_options(options: dict[str, Any]) -> None:
    """Raise a :class:`UsageError` naming the first Trainer option that is wrong and what is expected.

    ``options`` are the Trainer's keywords (its ``locals()``); the ones not checked here (precision,
    strategy, tuned configs ...) are checked where they are resolved.
    """
    _check_structure(options)
    for name in ("channels_last", "cudnn_benchmark"):
        check_switch(name, options[name])
    for name in ("compile", "deterministic", "progress", "check_labels", "oom_recovery"):
        check_switch(name, options[name], auto=False)
    if options["clip_grad_norm"] is not None and not (isinstance(options["clip_grad_norm"], (int, float)) and options["clip_grad_norm"] > 0):
        raise UsageError(f"clip_grad_norm must be a positive number or None, got {options['clip_grad_norm']!r}")
    if options["clip_grad_norm"] is not None:
        _check_clippable(options["model"])
    if options["scheduler_interval"] not in (None, "step", "epoch"):
        raise UsageError(f"scheduler_interval must be 'step', 'epoch' or None (by the scheduler's class), got {options['scheduler_interval']!r}")
    check_count("accumulate", options["accumulate"])
    check_count("log_every", options["log_every"])
    check_count("checkpoint_every", options["checkpoint_every"], optional=True)
    check_count("keep_checkpoints", options["keep_checkpoints"], minimum=0)  # 0 keeps every checkpoint
    check_count("nonfinite_patience", options["nonfinite_patience"], minimum=0)
    if options["seed"] is not None:
        check_count("seed", options["seed"], minimum=0)
    for name in ("checkpoint_dir", "log_dir"):
        check_folder(name, options[name])


def _check_clippable(model: nn.Module) -> None:
    """torch's norm clipping has no sparse kernel: refuse it up front for sparse embeddings."""
    sparse = [f"{type(m).__name__} {n!r}" if n else type(m).__name__ for n, m in model.named_modules() if isinstance(m, (nn.Embedding, nn.EmbeddingBag)) and m.sparse]
    if sparse:
        raise UsageError(
            f"clip_grad_norm cannot clip sparse gradients ({', '.join(sparse[:3])} {'has' if len(sparse) == 1 else 'have'} sparse=True): "
            "drop clip_grad_norm, or use dense embeddings (sparse=False)"
        )


def _check_structure(options: dict[str, Any]) -> None:
    """The model, the optimizer(s) and the loss or step."""
    model, optimizer, loss_fn, step_fn = (options[k] for k in ("model", "optimizer", "loss_fn", "step_fn"))
    if not isinstance(model, nn.Module):
        raise UsageError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for name, opt in (optimizer.items() if isinstance(optimizer, Mapping) else [("", optimizer)]):
        if not isinstance(opt, torch.optim.Optimizer) and not callable(opt):
            where = f"optimizer {name!r}" if name else "optimizer"
            raise UsageError(
                f"{where} must be a torch.optim.Optimizer built over the model's parameters (or a factory fn(params) -> Optimizer), "
                f"got {type(opt).__name__}"
            )
    if loss_fn is None and step_fn is None:
        raise UsageError("give loss_fn (called as loss_fn(model(inputs), targets)) or step_fn(model, batch) -> loss")
    if isinstance(step_fn, Mapping):
        names = list(optimizer) if isinstance(optimizer, Mapping) else None
        if names != list(step_fn):
            raise UsageError(f"step_fn is a dict with phases {list(step_fn)}: optimizer must be a dict with the same names in the same order, got {names or type(optimizer).__name__}")


_TUNABLE_DEFAULTS = {"precision": "auto", "channels_last": "auto", "cudnn_benchmark": "auto", "compile": False}


def apply_tuned(trainer: Any, tuned: Any, precision: Any, channels_last: Any, cudnn_benchmark: Any, compile: Any) -> tuple[Any, Any, Any, Any]:
    """Settings from a tune.json for the options the caller left at their defaults (sets ``trainer.tuned``
    and ``trainer.tuned_applied``: what the tuned configuration actually set)."""
    trainer.tuned = None
    trainer.tuned_applied = {}
    given = {"precision": precision, "channels_last": channels_last, "cudnn_benchmark": cudnn_benchmark, "compile": compile}
    if tuned is not None:
        from torchwise.core.tuned import TunedConfig

        trainer.tuned = config = TunedConfig.load(tuned)
        for key, value in config.trainer_overrides().items():
            if given[key] == _TUNABLE_DEFAULTS[key]:  # the caller left it at its default
                given[key] = trainer.tuned_applied[key] = value
        trainer.tuned_applied.update(config.loader_overrides())
        trainer.tuned_applied.update({k: getattr(config, k) for k in ("threads", "matmul_precision") if getattr(config, k)})
        config.apply_process_settings()
    return given["precision"], given["channels_last"], given["cudnn_benchmark"], given["compile"]
