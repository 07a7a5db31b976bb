"""The light wrappers a :class:`~torchwise.watch.session.Session` puts around torch for every step.

``Tensor.backward`` (backward passes, their time, the last loss; on a sampled step the doctor's
recorder sees the loss), ``torch.autograd.grad`` (a sampled pass that took gradients was not an
evaluation pass), ``DataLoader.__iter__`` (which loader is iterated) and the loader iterators'
``__next__`` (batches, and the time spent waiting for them; after the first window a sampled
step fetches its batch with the recorder paused). Each does a few counter updates
when the step is not sampled.
"""

from __future__ import annotations

import time
from typing import Any, Callable


def quiet() -> Any:
    """No torch-function mode while the watch computes its own numbers (they are not the user's)."""
    import torch

    return torch._C.DisableTorchFunction()


def torch_optimizer(opt: Any) -> Any:
    """The torch optimizer inside a wrapper (Accelerate's AcceleratedOptimizer, Lightning's)."""
    import torch

    seen = 0
    while isinstance(getattr(opt, "optimizer", None), torch.optim.Optimizer) and seen < 4:
        opt, seen = opt.optimizer, seen + 1
    return opt


def wrap_backward(session: Any, original: Callable) -> Callable:
    timed = session.world_size > 1  # the time and the last loss are for the cross-rank checks only

    def backward(tensor, *args, **kwargs):
        if session._in_backward or not session.active:  # re-dispatched through the recorder's mode
            return original(tensor, *args, **kwargs)
        session._in_backward = True
        t0 = time.perf_counter() if timed else 0.0
        try:
            return original(tensor, *args, **kwargs)
        finally:
            session._in_backward = False
            session.backwards += 1
            if timed:
                session.backward_s += time.perf_counter() - t0
                session._last_loss = tensor
            if session.sampling:
                with quiet():
                    session._sampled_backward(tensor)

    return backward

def wrap_grad(session: Any, original: Callable) -> Callable:
    def grad(*args, **kwargs):
        if session.sampling:
            session.window.evidence.gradients_taken()
        return original(*args, **kwargs)

    return grad

def wrap_iter(session: Any, original: Callable) -> Callable:
    def iterate(loader):
        iterator = original(loader)
        if session.active:
            session._loaders.append((loader, iterator))
            if session.window is not None:
                w = session.window
                if w.index == 0 and w.watch.result.distinct_batches is None and session.step == 0:
                    try:
                        w.watch.result.distinct_batches = len(loader)
                    except TypeError:
                        pass
                w.evidence.loader_iter(loader, iterator)
        return iterator

    return iterate

def wrap_next(session: Any, original: Callable) -> Callable:
    def next_batch(iterator):
        t0 = time.perf_counter()
        try:
            if session.sampling and session.window.index > 0:
                return _unrecorded(session.window.watch, original, iterator)
            return original(iterator)
        finally:
            dt = time.perf_counter() - t0
            session.wait_s += dt
            session.batches += 1
            if session.sampling:
                session.window.evidence.loader_next(iterator, dt)

    return next_batch


def _unrecorded(watch: Any, original: Callable, iterator: Any) -> Any:
    """A batch fetched with the recorder paused: an in-process dataset's indexing and collation are
    many small ops that are not the training step (and that a loader with workers never shows).
    The dense first window records them as the doctor does."""
    if watch.paused:
        return original(iterator)
    watch.paused = True
    try:
        return original(iterator)
    finally:
        watch.paused = False


__all__ = ["wrap_backward", "wrap_grad", "wrap_iter", "wrap_next", "quiet", "torch_optimizer"]
