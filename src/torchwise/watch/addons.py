"""Per-process add-ons of a :class:`~torchwise.watch.session.Session`, each optional.

An add-on sees every first-optimizer step (``pre_step``/``post_step``, both cheap), each logged
sample (``sample``) and the end (``close``):

- :class:`Processes`: forked children (DataLoader workers) stop watching; processes the script
  starts itself are counted (a script that trains in workers it spawns is not watched there);
- DDP instrumentation and cross-rank checks under torchrun (:mod:`torchwise.watch.ddp`,
  :mod:`torchwise.watch.ranks`);
- the stall watchdog (:mod:`torchwise.watch.stall`) and TensorBoard scalars (:mod:`torchwise.watch.tb`).
"""

from __future__ import annotations

import os
import weakref
from typing import Any


class AddOn:
    """No-op hooks; add-ons override what they need."""

    def pre_step(self, optimizer: Any, first: bool) -> None:
        pass

    def post_step(self) -> None:
        pass

    def sample(self, row: dict[str, Any], loss: dict[str, float], grads: dict[str, float], update: dict[str, float]) -> None:
        pass

    def close(self) -> None:
        pass


_SESSIONS: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for s in list(_SESSIONS):
        s.forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Processes(AddOn):
    """Counts the processes the script starts (DataLoader workers left out), with where."""

    def __init__(self, session: Any) -> None:
        import multiprocessing.process as mp_process

        self.session = session
        self.started: list[str] = []
        _SESSIONS.add(session)
        self._owner = mp_process.BaseProcess
        self._original = self._owner.start
        addon, original = self, self._original

        def start(process):
            target = getattr(process, "_target", None)
            module = getattr(target, "__module__", "") or ""
            if addon.session.active and not module.startswith("torch.utils.data"):
                from torchwise.doctor.watch import user_frame

                if len(addon.started) < 100:
                    addon.started.append(user_frame() or module or "?")
            return original(process)

        self._owner.start = start  # type: ignore[method-assign]

    def close(self) -> None:
        self._owner.start = self._original  # type: ignore[method-assign]
        _SESSIONS.discard(self.session)


def install_extras(session: Any) -> list[AddOn]:
    """The add-ons this process needs."""
    extras: list[AddOn] = [Processes(session)]
    from torchwise.watch.ddp import DDPWatch

    ddp = DDPWatch.install(session)
    if ddp is not None:
        extras.append(ddp)
        if session.world_size > 1:
            from torchwise.watch.ranks import RankCheck

            extras.append(RankCheck(session, ddp))
    if session.options.stall > 0:
        from torchwise.watch.stall import Stall

        extras.append(Stall(session, session.options.stall))
    if session.options.tensorboard:
        from torchwise.watch.tb import Scalars

        extras.append(Scalars(session, session.options.tensorboard))
    return extras


__all__ = ["AddOn", "Processes", "install_extras"]
