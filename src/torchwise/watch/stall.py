"""The stall watchdog: a background thread that notices when the optimizer stops stepping.

Once the run has taken its first step, a thread wakes every few seconds; when no optimizer step
has finished for ``seconds`` (``--stall``), it reads where the main thread is (its innermost
frame and the script's own frame below it) and reports it once per stall (TW412): a collective
that another rank never entered, a DataLoader whose workers died, a deadlock. It does nothing
else and never touches torch, so it costs nothing while the run is healthy.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from torchwise.doctor.report import Finding
from torchwise.watch.addons import AddOn


def where_waiting(thread_id: int) -> tuple[str, str]:
    """(innermost function and file, the script's own ``file:line`` under it) of a thread."""
    frame = sys._current_frames().get(thread_id)
    if frame is None:
        return "", ""
    inner = f"{frame.f_code.co_name} ({os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno})"
    from torchwise.doctor.watch import _OWN_DIR, _SKIP_DIRS

    user = ""
    f = frame
    while f is not None:
        path = f.f_code.co_filename
        if not path.startswith(_SKIP_DIRS + (_OWN_DIR,)) and not path.startswith("<") and "site-packages" not in path \
                and "/lib/python" not in path:
            user = f"{os.path.relpath(path) if not os.path.relpath(path).startswith('..') else path}:{f.f_lineno}"
            break
        f = f.f_back
    return inner, user


class Stall(AddOn):
    """Reports a run whose optimizer has not stepped for ``seconds``."""

    def __init__(self, session: Any, seconds: float) -> None:
        self.session, self.seconds = session, float(seconds)
        self.main = threading.main_thread().ident or 0
        self._stop = threading.Event()
        self._reported_at: int | None = None
        self.thread = threading.Thread(target=self._run, name="torchwise-watch-stall", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        tick = max(0.05, min(30.0, self.seconds / 4))
        while not self._stop.wait(tick):
            s = self.session
            if not s.active or s.step == 0 or self._reported_at == s.step:
                continue
            idle = time.monotonic() - s.last_progress
            if idle < self.seconds:
                continue
            self._reported_at = s.step
            inner, user = where_waiting(self.main)
            s.log.write("stall", step=s.base + s.step, seconds=round(idle, 1), inner=inner, at=user, rank=s.rank)
            s.report_finding(Finding(
                "TW412", "warning",
                f"no optimizer step for {idle:.0f} s after step {s.base + s.step:,}: the main thread waits in {inner or '?'}"
                + (f", called from {user}" if user else ""),
                user or inner or "main thread", {"seconds": round(idle, 1), "inner": inner, "at": user, "step": s.base + s.step},
                "a collective entered by some ranks only (a rank-dependent branch around all_reduce/barrier), a DataLoader "
                "whose workers died or wait on I/O, or a deadlock: look at the line shown; under torchrun compare the ranks' logs"))

    def close(self) -> None:
        self._stop.set()


__all__ = ["Stall", "where_waiting"]
