"""``torchwise train --nproc-per-node N``: torchrun in this process, ending with one line and a documented exit code.

The launcher runs ``torch.distributed.run`` (torchrun: elastic agent, rendezvous, restarts) in
its own process rather than as a child, so that a failed worker ends the command with one line
naming the cause -- not torchrun's ``ChildFailedError`` traceback. Each worker records an
exception that ends it in torchelastic's error file (:func:`record_failure`); the agent reads
those files, and the launcher prints the first failure's message (the root cause: the earliest
one) as ``torchwise train: error: ...``.

Exit codes: 0 when every worker succeeded; otherwise the exit code of the worker that failed
first -- 2 for an error torchwise names (bad input, a dead or silent peer), 1 for an unexpected
exception (its traceback is in that worker's output above), 128+N for a worker killed by signal
N; 130/143 when the launcher itself was interrupted (SIGINT/SIGTERM); 1 when the launcher could
not start the workers (rendezvous, bad torchrun options).
"""

from __future__ import annotations

import logging
import re
import signal
import sys
from typing import Any

_EXC_PREFIX = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Failure|Interrupted|Interrupt|Exit): ")
_QUIET = ("torch.distributed.elastic", "torch.distributed.run", "torch.distributed.launcher")


def record_failure(exc: BaseException) -> None:
    """In a worker started by torchrun: leave ``exc`` in the error file the launcher reads (no-op elsewhere)."""
    try:
        from torch.distributed.elastic.multiprocessing.errors import ErrorHandler

        ErrorHandler().record_exception(exc)
    except Exception:  # reporting must never hide the failure itself
        pass


def exit_code(code: int) -> int:
    """A worker's exit status as a shell sees it: a negative one (killed by signal N) is 128+N."""
    return 128 - code if code < 0 else (code or 1)


def cause(rank: int, failure: Any) -> str:
    """One line for the failed worker ``rank``: its recorded message, or how it ended."""
    message = failure.message
    if isinstance(message, dict):  # (torch keeps the error file's {"message": ..., "extraInfo": ...} here)
        message = message.get("message", "")
    recorded = isinstance(failure.error_file_data, dict) and failure.error_file_data.get("message") not in (None, "<NONE>")
    if recorded and isinstance(message, str) and message.strip():
        line = _EXC_PREFIX.sub("", message.strip().splitlines()[0], count=1)
        return line if line.startswith("rank ") else f"rank {rank}: {line}"
    if failure.exitcode < 0:
        try:
            name = signal.Signals(-failure.exitcode).name
        except ValueError:
            name = f"signal {-failure.exitcode}"
        return f"rank {rank} was killed by {name} (exit code {exit_code(failure.exitcode)})"
    return f"rank {rank} exited with code {failure.exitcode} (its output above says why)"


def launch(torchrun_args: list[str]) -> int:
    """Run torchrun with ``torchrun_args`` (what follows ``python -m torch.distributed.run``) here; the exit code."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    levels = {name: logging.getLogger(name).level for name in _QUIET}
    for name in _QUIET:  # the agent's own warnings and errors repeat what the final line says
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        run(parse_args(torchrun_args))
        return 0
    except ChildFailedError as exc:
        rank, failure = exc.get_first_failure()
        _say(f"error: {cause(rank, failure)}")
        return exit_code(failure.exitcode)
    except SignalException as exc:
        _say(f"interrupted by {exc.sigval.name}: the workers were stopped")
        return 128 + int(exc.sigval)
    except Exception as exc:  # rendezvous failures, bad options: the launcher could not run the workers
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        _say(f"error: the launcher could not run the workers ({type(exc).__name__}: {first})")
        return 1
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _say(line: str) -> None:
    sys.stdout.flush()
    print(f"torchwise train: {line}", file=sys.stderr, flush=True)
