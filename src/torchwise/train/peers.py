"""A dead peer ends the run with one line naming it, never a hang.

Every collective of a torchwise process group has a deadline (``peer_timeout``, seconds): a
peer that died makes gloo/NCCL fail at once (connection reset), one that hangs makes them fail at
the deadline. :func:`failure_error` turns that exception into a :class:`PeerFailure` line. To name
the rank that failed, the survivors hold a roll call in the rendezvous store that torchrun keeps
(it lives in the launcher, not in a worker, so it outlives them): each survivor writes its rank,
waits a few seconds for the others, and the ranks that never answer are the ones named.
"""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

from torchwise.core.errors import TrainingError

_MARKERS = ("gloo", "nccl", "connection reset", "connection closed", "connection refused", "broken pipe")
ROLL_CALL_S = 5.0


class PeerFailure(TrainingError):
    """Another process of the distributed run died or stopped answering."""


def is_peer_failure(exc: BaseException) -> bool:
    """True for the errors a collective raises when a peer is gone (DistError, gloo/NCCL runtime errors)."""
    import torch.distributed as dist

    if isinstance(exc, getattr(dist, "DistError", ())):
        return True
    if type(exc) is RuntimeError:
        text = str(exc).lower()
        return any(m in text for m in _MARKERS)
    return False


def roll_call(rank: int, world_size: int, wait_s: float = ROLL_CALL_S) -> list[int] | None:
    """Ranks that did not answer within ``wait_s`` (None when the store cannot be reached)."""
    import torch.distributed as dist

    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if not addr or not port:
        return None
    try:
        store = dist.TCPStore(addr, int(port), is_master=False, timeout=datetime.timedelta(seconds=max(wait_s, 1.0)))
        prefix = f"torchwise/roll-call/{os.environ.get('TORCHELASTIC_RUN_ID', '')}/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
        store.set(f"{prefix}/{rank}", "1")
        keys = [f"{prefix}/{r}" for r in range(world_size)]
        deadline = time.monotonic() + wait_s
        while True:
            missing = [r for r, k in enumerate(keys) if not store.check([k])]
            if not missing or time.monotonic() > deadline:
                return missing
            time.sleep(0.2)
    except Exception:  # the store went with the failed node: we cannot tell who failed
        return None


def failure_error(exc: BaseException, rank: int, world_size: int, timeout_s: float, checkpoint: Path | None = None) -> PeerFailure | None:
    """One line for a peer failure seen by ``rank``, or None when ``exc`` is something else."""
    if not is_peer_failure(exc):
        return None
    missing = roll_call(rank, world_size)
    if missing:
        who = ("rank " if len(missing) == 1 else "ranks ") + ", ".join(map(str, missing))
        what = f"{who} of {world_size} failed (no answer in the roll call after a collective broke)"
    else:
        what = f"a peer of {world_size} processes failed (which one could not be told)"
    cause = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    cause = cause.split("] ", 1)[-1].split(". ", 1)[0][:160]  # drop the C++ source location and gloo's advice
    last = f"; the last checkpoint is {checkpoint}" if checkpoint else "; no checkpoint was written"
    return PeerFailure(f"rank {rank}: distributed training stopped: {what}: {cause} (peer timeout {timeout_s:g} s){last}")
