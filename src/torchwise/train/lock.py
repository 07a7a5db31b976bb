"""One run per folder: a lock on the checkpoint and log folders while :meth:`Trainer.fit` runs.

Two runs writing ``step-N.pt`` files and ``metrics.csv`` in one folder would overwrite each
other's checkpoints and interleave their logs. ``fit`` takes an exclusive ``flock`` on
``FOLDER/.torchwise.lock``; a second run on the same folder is refused with one line naming the
process that holds it. The operating system drops the lock when the holding process ends, however
it ends (SIGKILL and power loss included), so a killed run never leaves a folder locked; the lock
file itself stays, and its content (pid, host, start time) is only information.
On platforms without ``fcntl`` (Windows) there is no lock.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import IO, Iterable

from torchwise.core.errors import UsageError

LOCK_NAME = ".torchwise.lock"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class FolderLocks:
    """Exclusive locks on a few folders, held until :meth:`release` (or the process ends)."""

    def __init__(self) -> None:
        self._files: list[IO[str]] = []

    def acquire(self, folder: Path, role: str) -> None:
        if fcntl is None:
            return
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fh = open(folder / LOCK_NAME, "a+", encoding="utf-8")
        except OSError as exc:
            self.release()
            raise UsageError(f"cannot use {role} {folder}: {(exc.strerror or str(exc)).lower()}") from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            self.release()
            raise UsageError(
                f"{role} {folder} is in use by another run ({holder}); wait for it to end or choose another folder"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {socket.gethostname()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        fh.flush()
        self._files.append(fh)

    def release(self) -> None:
        while self._files:
            fh = self._files.pop()
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)  # type: ignore[union-attr]
            finally:
                fh.close()


def lock_folders(folders: Iterable[tuple[Path | None, str]]) -> FolderLocks:
    """Lock each distinct ``(folder, role)`` (``None`` folders are skipped); all or none."""
    locks = FolderLocks()
    seen: set[str] = set()
    for folder, role in folders:
        if folder is None:
            continue
        key = os.path.realpath(folder)
        if key in seen:
            continue
        seen.add(key)
        locks.acquire(Path(folder), role)
    return locks
