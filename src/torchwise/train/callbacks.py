"""The plug-in surface: everything optional in a run is a callback with some of five hooks.

Early stopping, the best checkpoint, EMA, the schedulers, the interval log, the rolling
checkpoints, the interrupt handler, a watcher and your own callbacks all plug into
:meth:`Trainer.fit <torchwise.train.Trainer.fit>` the same way: an object with the hooks it
needs (subclassing :class:`Callback` is optional). The loop calls, in this order of objects
(the Trainer's own plug-ins first, then ``callbacks=``, then the run's bookkeeping):

``on_fit_start(trainer)``
    once, after the plan is known and a checkpoint (if any) is restored, before the first batch.
``on_step_end(trainer)``
    after every optimizer step (every phase stepped, ``trainer.step`` counts it). Cheap to read
    here: ``trainer.model``, ``trainer.phases`` (each with ``optimizer``, ``last_loss`` -- this
    step's loss, a float on one CPU process and a detached tensor elsewhere: reading a tensor's
    value waits for the device -- and ``stepped``, False when the step was skipped),
    ``trainer.step``, ``trainer.epoch``. Setting ``trainer.should_stop = True`` ends the run after
    this step, cleanly (a final checkpoint, a :class:`FitResult`).
``on_log(trainer, values)``
    once per log interval, with the interval's averaged host values (``train/loss``, ``train/lr``...).
``on_epoch_end(trainer, values)``
    after each epoch's validation, with the validation values (``val/...``) and the last
    ``train/loss``; the epoch's checkpoint is written after every callback has run.
``on_fit_end(trainer, result)``
    once, with the :class:`FitResult`, after the summary.

A callback that has a ``key`` (a string) and ``state_dict()`` / ``load_state_dict(state)`` is
checkpointed under ``checkpoint["plugins"][key]`` and restored on resume (early stopping's
counters, the best checkpoint's value and EMA's averages travel this way).

Two plug-ins sit inside the step instead, at fixed points, through interfaces of their own:
the precision plug-in (``autocast``, ``backward``, ``unscale``, ``step``; :mod:`.precision`)
and the strategy (placing, wrapping, ``no_sync``, reductions, checkpoint I/O; :mod:`.strategy`).
Neither is branched on by name in the loop.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

HOOKS = ("on_fit_start", "on_step_end", "on_log", "on_epoch_end", "on_fit_end")


class Callback:
    """A base class for callbacks; its hooks do nothing (only overridden ones are ever called)."""

    key: str | None = None  # with state_dict/load_state_dict: checkpointed under this name

    def on_fit_start(self, trainer: Any) -> None:
        """Once, before the first batch of a fit."""

    def on_step_end(self, trainer: Any) -> None:
        """After every optimizer step."""

    def on_log(self, trainer: Any, values: dict[str, float]) -> None:
        """Once per log interval, with the logged values."""

    def on_epoch_end(self, trainer: Any, values: dict[str, float]) -> None:
        """After each epoch's validation (values: ``val/...`` and the last ``train/loss``)."""

    def on_fit_end(self, trainer: Any, result: Any) -> None:
        """Once, with the fit's result."""


def _hook(callback: Any, name: str) -> Callable[..., Any] | None:
    """``callback``'s bound hook ``name``, or None when it has none (or only the base no-op)."""
    fn = getattr(callback, name, None)
    if fn is None or getattr(fn, "__func__", None) is getattr(Callback, name):
        return None
    return fn  # type: ignore[no-any-return]


class Hooks:
    """The callbacks of one fit, sorted by hook once, so that a hook nobody defines costs nothing.

    ``step_end`` (a list of bound methods) is what the loop runs after every optimizer step.
    """

    def __init__(self, callbacks: Iterable[Any]) -> None:
        self.callbacks = [cb for cb in callbacks if cb is not None]
        self.fit_start = self._bound("on_fit_start")
        self.step_end = self._bound("on_step_end")
        self.log = self._bound("on_log")
        self.epoch_end = self._bound("on_epoch_end")
        self.fit_end = self._bound("on_fit_end")

    def _bound(self, name: str) -> list[Callable[..., Any]]:
        return [fn for cb in self.callbacks if (fn := _hook(cb, name)) is not None]

    @staticmethod
    def run(fns: list[Callable[..., Any]], trainer: Any, *args: Any) -> None:
        for fn in fns:
            fn(trainer, *args)


def stateful(callbacks: Iterable[Any]) -> list[Any]:
    """The callbacks checkpointed with the run: a string ``key`` and ``state_dict``/``load_state_dict``."""
    found, keys = [], set()
    for cb in callbacks:
        key = getattr(cb, "key", None)
        if isinstance(key, str) and key and callable(getattr(cb, "state_dict", None)) and callable(getattr(cb, "load_state_dict", None)):
            if key in keys:
                from torchwise.core.errors import UsageError

                raise UsageError(f"two callbacks share the checkpoint key {key!r}: give each stateful callback its own key")
            keys.add(key)
            found.append(cb)
    return found
