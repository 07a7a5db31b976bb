"""``with torchwise.watching(model, optimizer): train()`` — watch a loop you wrote yourself.

(The in-process watch that every integration adapts: :mod:`torchwise.integrations`.)

Works with any loop that calls ``loss.backward()`` and ``optimizer.step()``, including
Accelerate's (``accelerator.backward(loss)``; the prepared optimizer is unwrapped to the torch
optimizer inside it). On leaving the block the last samples are judged and ``.report`` holds the
doctor's report of the run; ``.findings`` lists the findings as they come.

``stop_on="error"``: the first error finding ends the loop from inside ``optimizer.step()`` by
raising :class:`WatchStopped`, which the ``with`` block swallows, so the code after it (saving
a checkpoint, say) runs. Options are those of :class:`~torchwise.watch.options.WatchOptions`.
"""

from __future__ import annotations

from typing import Any

from torchwise.watch.options import WatchOptions


class WatchStopped(BaseException):
    """Raised from the optimizer step to end a watched loop (``stop_on``); the ``with`` swallows it."""


class Watching:
    """The context manager returned by :func:`watching`."""

    def __init__(self, model: Any = None, optimizer: Any = None, **options: Any) -> None:
        self.options = WatchOptions.coerce(options)
        self.model = model
        self.optimizers = None if optimizer is None else (list(optimizer) if isinstance(optimizer, (list, tuple)) else [optimizer])
        self.session: Any = None
        self.report: Any = None
        self.stopped: dict[str, Any] | None = None

    def __enter__(self) -> "Watching":
        from torchwise.watch.events import EventLog
        from torchwise.watch.session import Session

        subject = type(self.model).__name__ if self.model is not None else "training"
        log = EventLog(self.options.log, append=self.options.resume) if self.options.log else None
        self.session = Session(self.options, subject=subject, log=log, model=self.model, optimizers=self.optimizers, stop=self._stop)
        if log is not None:
            log.write("start", subject=subject, rank=self.session.rank, world_size=self.session.world_size, mode="in-process")
        self.session.attach()
        return self

    def _stop(self, record: dict[str, Any]) -> None:
        if self.stopped is None:
            self.stopped = record
            raise WatchStopped(f"{record['code']} {record['severity']} at step {record.get('step')}: {record['message']}")

    @property
    def findings(self) -> list[dict[str, Any]]:
        """The findings so far, in the order first seen (``code``, ``severity``, ``message``, ``step``...)."""
        return list(self.session.findings.records) if self.session is not None else []

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        failure = None
        if exc is not None and not isinstance(exc, WatchStopped):
            failure = f"{exc_type.__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
        self.report = self.session.finish(failure)
        status = "stopped" if self.stopped else ("failed" if failure else "completed")
        self.session.log.write("end", status=status, steps=self.session.base + self.session.step, report=self.report.to_dict())
        self.session.log.close()
        return isinstance(exc, WatchStopped)


def watching(model: Any = None, optimizer: Any = None, **options: Any) -> Watching:
    """Watch the training steps run inside the ``with`` block (see the module doc)."""
    return Watching(model, optimizer, **options)


__all__ = ["watching", "Watching", "WatchStopped"]
