"""Checkpoint on interrupt: Ctrl-C (SIGINT) or a scheduler's SIGTERM ends a run cleanly.

During :meth:`Trainer.fit` the first SIGINT or SIGTERM only sets a flag. The step loop looks at
it after each optimizer step (a window boundary, where the state is complete), saves a
checkpoint and raises :class:`Interrupted`, so nothing since the last save is lost and a run
resumed from that checkpoint continues exactly (same batches, same random numbers). A second
signal stops at once, without a checkpoint. The command line exits with
128 + the signal number (130 for SIGINT, 143 for SIGTERM), as shells and schedulers expect.

Handlers are installed only from the main thread, and not under DDP, where every process would
have to agree on the step to stop at; a handler the caller set to ``SIG_IGN`` stays ignored.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """Training stopped by a signal after saving a checkpoint; ``signum`` is the signal."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum


class InterruptCatcher:
    """Turns the first SIGINT/SIGTERM into a request the step loop acts on at its next step end
    (a callback: its ``on_step_end`` saves and stops; see :mod:`.callbacks`)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def installed(self) -> bool:
        """Whether the handlers are in place (a step-end check is needed)."""
        return bool(self._previous)

    def on_step_end(self, trainer: Any) -> None:
        if self.signum is not None:
            stop(trainer, self.signum)

    def install(self) -> "InterruptCatcher":
        if not self.enabled or threading.current_thread() is not threading.main_thread():
            return self
        for sig in SIGNALS:
            previous = signal.getsignal(sig)
            if previous is signal.SIG_IGN:
                continue
            self._previous[sig] = previous
            signal.signal(sig, self._handle)
        return self

    def restore(self) -> None:
        """Put back the handlers found at :meth:`install`."""
        while self._previous:
            sig, previous = self._previous.popitem()
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)

    def _handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.signum is not None:  # a second signal: stop now
            self.restore()
            raise Interrupted(f"interrupted by {name} again: stopped at once, without saving a checkpoint", signum)
        self.signum = signum
        # os.write: print() from a signal handler can collide with a write in progress
        os.write(2, f"\n{name}: saving a checkpoint after this step, then stopping (send it again to stop at once)\n".encode())


def stop(trainer: Any, signum: int) -> None:
    """Save a checkpoint (unless this step's is saved already) and raise :class:`Interrupted`."""
    name = signal.Signals(signum).name
    path = trainer.last_checkpoint
    if trainer.checkpoint_dir is not None and trainer._saved_at != trainer.step:
        path = trainer.save_checkpoint()
    if path is not None:
        outcome = f"checkpoint saved: {path} (continue with resume='last', on the command line --resume last)"
    else:
        outcome = "no checkpoint saved (no checkpoint_dir)"
    raise Interrupted(f"interrupted by {name} at step {trainer.step}; {outcome}", signum)
