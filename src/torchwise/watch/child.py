"""The watched process: ``python -m torchwise.watch.child train.py ARGS``.

Started by ``torchwise watch`` (directly, or as each worker of ``torchrun``), with its options in
the ``TORCHWISE_WATCH`` environment variable (JSON: torchrun would read options on its command
line as its own), it attaches a
:class:`~torchwise.watch.session.Session` and runs the script unmodified with ``runpy``, writes
its events to its rank's log, and at the end writes an ``end`` record holding the whole run's
report. It exits with the script's own status (0, the ``sys.exit`` code, 1 for an exception,
128+N for a signal), so torchrun and shells see the script's outcome.

``--stop-on``: on the first finding of that severity the script is asked to stop. A script that
handles SIGTERM itself (to save a checkpoint) gets SIGTERM and ``--grace`` seconds to finish;
otherwise (or after the grace) the watch ends it from the optimizer step hook by raising
:class:`~torchwise.doctor.script.StopScript`, which ``except Exception`` does not swallow.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Sequence

from torchwise.doctor.script import StopScript


class Terminated(BaseException):
    """SIGTERM reached a script that does not handle it: unwind, write the end record, exit 143."""


def _sigterm(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: a second SIGTERM must not break the unwinding
    raise Terminated()


class Stopper:
    """What ``--stop-on`` does when a finding asks the run to end."""

    def __init__(self, grace: float, log: Any) -> None:
        self.grace, self.log = grace, log
        self.asked_at: float | None = None
        self.stopped = False

    def __call__(self, record: dict[str, Any]) -> None:
        handler = signal.getsignal(signal.SIGTERM)
        scripted = callable(handler) and handler is not _sigterm
        if self.asked_at is None:
            self.asked_at = time.monotonic()
            self.log.write("stop", code=record["code"], step=record.get("step"), by="SIGTERM" if scripted else "StopScript")
            if scripted:  # the script saves on SIGTERM: let it
                os.kill(os.getpid(), signal.SIGTERM)
                return
        elif scripted and time.monotonic() - self.asked_at < self.grace:
            return
        self.stopped = True
        raise StopScript()


ENV = "TORCHWISE_WATCH"


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    settings = json.loads(os.environ.get(ENV) or "{}")
    if "log" not in settings:
        raise SystemExit(f"python -m torchwise.watch.child is started by `torchwise watch` ({ENV} is not set)")
    script = list(argv)
    if script[:1] == ["--"]:
        script = script[1:]
    args = argparse.Namespace(every=None, stop_on="never", grace=60.0, resume=False, stall=600.0, rank_every=50,
                              tensorboard=None, alerts=False, module=None)
    vars(args).update(settings)
    if args.module:  # `torchrun -m pkg.train`: the module name came first
        script = script[1:] if script[:1] == [args.module] else script
    args.script = script
    return args


def main(argv: Sequence[str]) -> int:
    from torchwise.watch.events import EventLog
    from torchwise.watch.options import WatchOptions, rank_and_world, rank_log_path
    from torchwise.watch.resume import earlier_run
    from torchwise.watch.session import Session

    args = _parse(argv)
    if args.module:
        subject, run_argv = args.module, [args.module, *args.script]
    else:
        subject, run_argv = args.script[0], list(args.script)
        sys.path.insert(0, str(Path(subject).resolve().parent))
    rank, world = rank_and_world()
    options = WatchOptions(every=args.every, stop_on=args.stop_on, log=args.log, resume=args.resume, alerts=args.alerts,
                           rank_every=args.rank_every, stall=args.stall, tensorboard=args.tensorboard)
    path = rank_log_path(args.log, rank, world)
    earlier = earlier_run(path) if args.resume else None
    log = EventLog(path, append=earlier is not None)
    stopper = Stopper(args.grace, log)
    session = Session(options, subject=subject, log=log, stop=stopper)
    log.write("start", subject=subject, argv=run_argv, rank=rank, world_size=world, pid=os.getpid(),
              segment=earlier.segments if earlier else 0, python=sys.version.split()[0])
    if earlier is not None:
        earlier.apply(session)
    signal.signal(signal.SIGTERM, _sigterm)
    sys.argv = run_argv
    session.attach()
    status, code, failure = _run_script(args.module, subject)
    if stopper.stopped or (stopper.asked_at is not None and status in ("completed", "terminated")):
        status, code = "stopped", 0  # (asked by --stop-on; a script that saved on SIGTERM exits on its own)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the end record is written whatever comes now
    try:
        report = session.finish(failure)
    except Exception as exc:  # the watch itself failed at the end: still say how the script ended
        report = None
        print(f"torchwise watch: the final checks failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    processes = next((e.started for e in session.extras if hasattr(e, "started")), [])
    if status == "completed" and session.step == 0:
        status = "spawned" if processes else "untrained"
    log.write("end", status=status, exit_code=code, steps=session.base + session.step, backward_calls=session.backwards,
              processes=processes[:10], report=report.to_dict() if report is not None else None, rank=rank, world_size=world)
    log.close()
    return code


def _run_script(module: str | None, subject: str) -> tuple[str, int, str | None]:
    """Run the script to its end: (status, exit code, failure line)."""
    import runpy

    status, code, failure = "completed", 0, None
    try:
        if module:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(subject, run_name="__main__")
    except StopScript:
        status = "stopped"
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        status = "completed" if code == 0 else "failed"
        if code and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
        if code:
            failure = f"the script called sys.exit({exc.code!r})"
    except KeyboardInterrupt:
        status, code = "interrupted", 130
    except Terminated:
        status, code = "terminated", 143
    except BaseException as exc:  # the script's own error: its traceback, as Python would print it
        status, code = "failed", 1
        failure = _failure(exc)
        _print_traceback(exc)
    return status, code, failure


def _failure(exc: BaseException) -> str:
    from torchwise.doctor.watch import user_frame_of

    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    at = user_frame_of(exc.__traceback__)
    return f"{type(exc).__name__}: {first}"[:300] + (f" (at {at})" if at else "")


def _print_traceback(exc: BaseException) -> None:
    """The traceback from the script's first frame on (the watch's own frames left out)."""
    own = str(Path(__file__).resolve().parents[1])
    tb = exc.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename.startswith(own) or "runpy" in tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb or exc.__traceback__, file=sys.stderr)
    sys.stderr.flush()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
