"""One window of a watched run: the doctor's recorder on a group of sampled steps, then its checks.

A long run is cut into windows. Each window gets a fresh recorder of the doctor's script mode
(:class:`torchwise.doctor.script._Attached`: a :class:`~torchwise.doctor.watch.Watch` and its
:class:`~torchwise.doctor.script_evidence.ScriptEvidence`), whose module hooks and function
mode are switched on for the sampled steps only (:meth:`Window.begin` / :meth:`Window.end`);
on the other steps nothing of it runs. When the window holds enough samples (or a sampled step
went non-finite) the doctor's script-mode checks run on what it saw, exactly as at the end of
``torchwise doctor -- python train.py``, and the window is dropped: memory stays bounded
however long the run is, and each window judges the recent steps.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from torchwise.doctor.report import DoctorReport
from torchwise.doctor.script import _Attached, _check


class Window(_Attached):
    """The doctor's recorder over the sampled steps of one stretch of the run."""

    def __init__(self, index: int, start_step: int, every: int, loaders: list[tuple[Any, Any]]) -> None:
        super().__init__(steps=1, budget=None, full=True)
        self.index, self.start_step, self.every = index, start_step, every
        self.samples = 0
        self.sampling = False
        self.opened = time.perf_counter()
        for loader, iterator in loaders:  # iterators made before the window: their batches count too
            self.evidence.loader_iter(loader, iterator)

    # -- one sampled step ------------------------------------------------------------------------
    def begin(self, steps_done_in_window: int) -> None:
        """Switch the recorder on for the step about to run."""
        self.watch.step_index = steps_done_in_window
        self.watch.attach()
        self.watch.activations_on = True
        self.sampling = True

    def end(self) -> None:
        """Switch it off again (after the first optimizer's step of the sampled step)."""
        if self.sampling:
            self.watch.close()
            self.watch.reset_stack()
            self.sampling = False
            self.samples += 1

    def pre_step(self, optimizer: Any) -> None:
        """Before an optimizer step: the doctor's records; then the optimizer's own step runs with
        the recorder's function mode paused (its many small ops are nothing the checks read)."""
        self._pre_step(optimizer, (), {})
        if self.watch._mode is not None:
            self.watch._mode.__exit__(None, None, None)
            self.watch._mode = None

    def post_step(self, optimizer: Any) -> None:
        self._post_step(optimizer, (), {})
        if optimizer is not self.optimizers[0] and self.sampling and self.watch._mode is None:
            from torchwise.doctor.watch import _WatchMode

            self.watch._mode = _WatchMode(self.watch)  # the next model of the step (a GAN's generator) is watched too
            self.watch._mode.__enter__()

    def after_backward(self, loss: Any) -> None:
        self._after_backward(loss)

    @property
    def went_nonfinite(self) -> bool:
        return self.evidence.nonfinite_step is not None

    # -- the verdict -----------------------------------------------------------------------------
    def judge(self, subject: str, steps_in_window: int, failure: str | None = None) -> DoctorReport:
        """The doctor's script-mode checks on this window's samples."""
        self.end()
        self.watch.step_index = steps_in_window
        self.watch.result.steps = steps_in_window
        args = SimpleNamespace(steps=max(1, steps_in_window), full=True)
        return _check(subject, self, failure, args)


__all__ = ["Window"]
