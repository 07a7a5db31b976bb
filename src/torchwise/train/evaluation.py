"""Evaluation: mean loss and metrics over a loader, under ``inference_mode`` and ``model.eval()``.

With EMA on, the averaged weights are evaluated (swapped in, then back). Under DDP/FSDP each
process evaluates its shard and the sums are all-reduced in one collective, so every process
returns the same numbers. With a custom ``step_fn`` its loss and other 0-d outputs are averaged;
metrics get ``(output, target)`` from its ``"output"``/``"target"`` entries when it returns
them, else from the default model call on the batch.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterable, Mapping

import torch
from torch import nn

from torchwise.utils.batch import batch_size_of, describe, model_call
from torchwise.utils.device import to_device
from torchwise.core.errors import DataError
from torchwise.train.monitor import lower_is_better
from torchwise.train.phases import as_outputs

Metrics = Mapping[str, Callable[..., torch.Tensor]]


def validate(trainer: Any, val: Any) -> dict[str, float]:
    """An epoch's validation: ``val/...`` values (through ``trainer.evaluate``), the best ones kept, logged.
    Its time is left out of the training rates."""
    t = time.perf_counter()
    values = {f"val/{k}": v for k, v in trainer.evaluate(val).items()}
    trainer.meter.exclude(time.perf_counter() - t)
    trainer.last_val = dict(values)
    for name, value in values.items():
        old = trainer.best.get(name)
        if old is None or (value < old[0] if lower_is_better(name) else value > old[0]):
            trainer.best[name] = (value, trainer.epoch)
    trainer.log.log(trainer.step, trainer.epoch, values, line=trainer.progress)
    return values


def evaluate(trainer: Any, prepared: Any, loader: Iterable[Any], metrics: Metrics) -> dict[str, float]:
    """The mean of each value over ``prepared``'s batches (``loader``: the user's, for messages)."""
    model = trainer.model
    was_training = model.training
    model.eval()
    sums: dict[str, torch.Tensor] = {}
    count = 0
    try:
        with _weights(trainer), torch.inference_mode():  # (swapped outside inference mode: sharded weights are DTensors)
            for batch in prepared.loader:
                if trainer.steps.copy:
                    batch = to_device(batch, trainer.device, non_blocking=True)
                with trainer.precision.autocast():
                    values, n = _batch_values(trainer, model, batch, metrics)
                for name, value in values.items():
                    acc = sums.get(name)
                    sums[name] = value * n if acc is None else acc + value * n
                count += n
    finally:
        model.train(was_training)
    if count == 0:
        raise DataError(f"the validation loader is empty ({describe(loader)}): it yields no batches")
    names = list(sums)
    packed = torch.stack([sums[k].float() for k in names] + [torch.tensor(float(count), device=trainer.device)])
    totals = trainer.strategy.all_reduce(packed).tolist()
    return {k: v / totals[-1] for k, v in zip(names, totals[:-1])}


def _weights(trainer: Any) -> Any:
    ema = trainer.ema
    return ema.swapped() if ema is not None and ema.params else contextlib.nullcontext()


def _batch_values(trainer: Any, model: nn.Module, batch: Any, metrics: Metrics) -> tuple[dict[str, torch.Tensor], int]:
    """One batch's values (0-d tensors) and the number of samples they average over."""
    out: dict[str, torch.Tensor] = {}
    pair: tuple[Any, Any] | None = None
    size = batch_size_of(batch) or 1
    for phase in trainer.phases if trainer.step_fn is not None else ():
        result = phase.step_fn(model, batch)  # type: ignore[misc]
        loss, extras = as_outputs(result, "step_fn")
        prefix = f"{phase.name}/" if phase.name else ""
        out[prefix + "loss"] = loss.detach().float()
        out.update({prefix + k: v.float() for k, v in extras.items()})
        if isinstance(result, Mapping) and "output" in result and "target" in result:
            pair = (result["output"], result["target"])
    if trainer.step_fn is None or (metrics and pair is None):
        args, kwargs, targets = model_call(batch, trainer.steps.forward_names)
        output = model(trainer.auto.prepare_input(args[0]), *args[1:], **kwargs) if args else model(**kwargs)
        pair = (output, targets)
        size = batch_size_of(targets) or batch_size_of(args) or size
        if trainer.step_fn is None and trainer.loss_fn is not None:
            out["loss"] = trainer.loss_fn(output, targets).float()
    for name, fn in metrics.items():
        out[name] = torch.as_tensor(fn(*pair), device=trainer.device).float()  # type: ignore[misc]
    return out, size
