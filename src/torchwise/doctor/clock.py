"""A clock for the loader-wait share that does not count time lost to other processes.

On a busy machine a thread that is ready to run may sit in the scheduler's run queue while
other processes use the cores; wall-clock timings then grow by amounts that have nothing to do
with the code timed (a clean run once showed 34% "loader wait" this way). Linux records that
time per thread: the second field of ``/proc/thread-self/schedstat`` is the nanoseconds spent
waiting on a run queue. :func:`clock` is ``time.perf_counter()`` minus that wait, so a loader
that sleeps on I/O still counts (the thread is blocked, not queued) while preemption does not.
Elsewhere (no ``/proc``) it is plain ``perf_counter``.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["clock", "load_free", "both"]

_local = threading.local()


def _queued_seconds() -> float | None:
    fd = getattr(_local, "fd", -2)
    if fd == -2:
        try:
            fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            fd = -1
        _local.fd = fd
    if fd < 0:
        return None
    try:
        return int(os.pread(fd, 128, 0).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def load_free() -> bool:
    """True when run-queue time can be left out on this system (and this thread)."""
    return _queued_seconds() is not None


def clock() -> float:
    """Seconds, like ``time.perf_counter()``, less the time this thread waited to be scheduled."""
    queued = _queued_seconds()
    now = time.perf_counter()
    return now - queued if queued is not None else now


def both() -> tuple[float, float]:
    """(wall-clock seconds, :func:`clock` seconds) read together."""
    queued = _queued_seconds()
    now = time.perf_counter()
    return now, (now - queued if queued is not None else now)
