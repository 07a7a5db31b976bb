"""``torchwise.Trainer(..., watch=True)``: the Trainer's fit watched like any other loop.

``watch`` is ``True``, a dict of :class:`~torchwise.watch.options.WatchOptions` fields or a
``WatchOptions``. The callback attaches at ``on_fit_start`` and reports at ``on_fit_end``
(``trainer.watch_report``); with ``stop_on="error"`` it sets ``trainer.should_stop`` so the
Trainer ends the run cleanly (its checkpoint included). A fit that raises leaves the watch
attached until the next ``fit()`` or :meth:`WatchCallback.close`.
"""

from __future__ import annotations

from typing import Any

from torchwise.watch.context import Watching
from torchwise.watch.options import WatchOptions


class WatchCallback:
    """A Trainer callback (``callbacks=[WatchCallback()]`` works too)."""

    def __init__(self, options: Any = True) -> None:
        self.options = WatchOptions.coerce(options)
        self.watching: Watching | None = None
        self.report: Any = None

    def on_fit_start(self, trainer: Any) -> None:
        self.close()  # a previous fit that raised
        opts = {k: getattr(self.options, k) for k in self.options.__dataclass_fields__}
        self.watching = Watching(trainer.model, None, **opts)
        self.watching.__enter__()
        self.watching.session.stop_callback = lambda record: setattr(trainer, "should_stop", True)

    def on_fit_end(self, trainer: Any, result: Any = None) -> None:
        self.close()
        trainer.watch_report = self.report

    def close(self) -> None:
        """Judge the last samples and remove the hooks (done by ``on_fit_end``)."""
        if self.watching is not None and self.watching.session is not None and self.watching.session.active:
            self.watching.__exit__(None, None, None)
            self.report = self.watching.report
        self.watching = None


__all__ = ["WatchCallback"]
