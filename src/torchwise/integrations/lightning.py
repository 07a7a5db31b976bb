"""A Lightning callback: ``Trainer(callbacks=[TorchwiseWatch()])`` watches ``fit()``.

Imports ``lightning`` (or the older ``pytorch_lightning``) when this module is imported. With
``stop_on="error"`` the first error finding sets ``trainer.should_stop``: Lightning ends the fit
after the current step, running its own checkpoint callbacks. The report of the run is
``callback.report`` after ``fit()``; options are those of :class:`~torchwise.watch.options.WatchOptions`.
"""

from __future__ import annotations

from typing import Any

from torchwise.core.errors import UsageError

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # pragma: no cover - the older package name
    try:
        from pytorch_lightning.callbacks import Callback
    except ImportError as exc:
        raise UsageError("the Lightning callback needs lightning: pip install 'torchwise[lightning]'") from exc

from torchwise.watch.context import Watching


class TorchwiseWatch(Callback):
    """Watches a Lightning fit with the doctor's checks sampled (see the module doc)."""

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.watching = Watching(None, None, **options)
        self.report: Any = None
        self._trainer: Any = None

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        self._trainer = trainer
        self.watching.model = pl_module
        self.watching.__enter__()
        self.watching.session.stop_callback = self._stop

    def _stop(self, record: dict[str, Any]) -> None:
        self._trainer.should_stop = True

    @property
    def findings(self) -> list[dict[str, Any]]:
        return self.watching.findings

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        self._end(None)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._end(exception)

    def _end(self, exc: BaseException | None) -> None:
        if self.watching.session is None or not self.watching.session.active:
            return
        self.watching.__exit__(type(exc) if exc else None, exc, None)
        self.report = self.watching.report


__all__ = ["TorchwiseWatch"]
