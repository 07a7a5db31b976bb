"""A Hugging Face ``TrainerCallback``: ``Trainer(..., callbacks=[TorchwiseCallback()])``.

Imports ``transformers`` when this module is imported. The Trainer calls ``loss.backward()``
(through Accelerate) and ``optimizer.step()`` as any loop does, so the same watch applies. With
``stop_on="error"`` the first error finding sets ``control.should_training_stop``: the Trainer
ends after the current step and saves as its arguments say. ``callback.report`` holds the run's
report after ``train()``.
"""

from __future__ import annotations

from typing import Any

from torchwise.core.errors import UsageError

try:
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover
    raise UsageError("the Hugging Face callback needs transformers: pip install 'torchwise[hf]'") from exc

from torchwise.watch.context import Watching


class TorchwiseCallback(TrainerCallback):
    """Watches ``transformers.Trainer.train()`` with the doctor's checks sampled."""

    def __init__(self, **options: Any) -> None:
        self.watching = Watching(None, None, **options)
        self.report: Any = None
        self._stop = False

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        self.watching.model = model
        self.watching.__enter__()
        self.watching.session.stop_callback = self._ask_stop

    def _ask_stop(self, record: dict[str, Any]) -> None:
        self._stop = True

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._stop:
            control.should_training_stop = True

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.watching.session is not None and self.watching.session.active:
            self.watching.__exit__(None, None, None)
            self.report = self.watching.report

    @property
    def findings(self) -> list[dict[str, Any]]:
        return self.watching.findings


__all__ = ["TorchwiseCallback"]
