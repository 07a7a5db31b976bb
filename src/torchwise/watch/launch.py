"""``torchwise watch -- COMMAND``: start the script (or torchrun) with the watch in each process.

The command is one of ``python train.py ARGS``, ``python -m pkg.train ARGS``, ``train.py ARGS``,
``torchrun [OPTIONS] train.py ARGS`` (or ``python -m torch.distributed.run ...``). A Python
command runs ``python -m torchwise.watch.child ... -- train.py ARGS``; a torchrun command keeps
every torchrun option (parsed with torchrun's own parser) and runs the watch child as each
worker's module: ``torchrun [OPTIONS] -m torchwise.watch.child ... -- train.py ARGS``.

While the script runs, this process follows the event logs (one per rank), prints one line per
new finding on stderr (once, whichever rank saw it), and with ``--stop-on`` asks torchrun to end
every worker when one rank found a problem of that severity. SIGTERM sent to this process is
passed on to the script (Ctrl-C reaches both from the terminal). When the script's process is
gone, an ``exit`` record is appended to each log, and the run's report is assembled from the logs
(:mod:`torchwise.watch.report`), so a script killed with SIGKILL still gets its report.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from torchwise.core.errors import UsageError
from torchwise.watch.options import WatchOptions, rank_log_path

POLL_S = 0.5


@dataclass
class Launch:
    """The child command, its settings (``TORCHWISE_WATCH``), and whether it runs several ranks."""

    argv: list[str]
    distributed: bool
    subject: str
    settings: str = "{}"
    module: bool = False


def default_log() -> Path:
    return Path("runs") / f"watch-{time.strftime('%Y%m%d-%H%M%S')}" / "events.jsonl"


def _is_torchrun(command: list[str]) -> int:
    """How many leading words name torchrun: 1 (``torchrun``), 3 (``python -m torch.distributed.run``), 0."""
    if os.path.basename(command[0]) == "torchrun":
        return 1
    if len(command) >= 3 and os.path.basename(command[0]).startswith("python") and command[1] == "-m" \
            and command[2] in ("torch.distributed.run", "torch.distributed.launch"):
        return 3
    return 0


def child_options(options: WatchOptions, log: Path, grace: float, module: str | None = None) -> str:
    """The child's settings, as the JSON of its ``TORCHWISE_WATCH`` environment variable."""
    return json.dumps({"log": str(log), "stop_on": options.stop_on, "grace": grace, "stall": options.stall,
                       "rank_every": options.rank_every, "every": options.every, "resume": options.resume,
                       "tensorboard": str(options.tensorboard) if options.tensorboard else None, "module": module})


def plan(command: Sequence[str], options: WatchOptions, log: Path, grace: float = 60.0) -> Launch:
    """The command that runs ``command`` watched (bad commands: one-line UsageError)."""
    command = list(command)
    if not command:
        raise UsageError("no command given: use `torchwise watch -- python train.py ARGS` or `-- torchrun ... train.py ARGS`")
    lead = _is_torchrun(command)
    if lead:
        launch = _torchrun(command[lead:])
        launch.settings = child_options(options, log, grace, launch.subject if launch.module else None)
        return launch
    python, command = _interpreter(command)
    if command[:1] == ["-m"]:
        if len(command) < 2:
            raise UsageError("`python -m` needs a module name")
        return Launch([python, "-m", "torchwise.watch.child", *command[2:]], False, command[1],
                      child_options(options, log, grace, command[1]))
    if command[0].startswith("-"):
        raise UsageError(f"unsupported Python option {command[0]!r}: expected `python train.py ARGS` or `python -m module ARGS`")
    if not command[0].endswith(".py") and not Path(command[0]).is_file():
        raise UsageError(f"not a Python script or command: {command[0]!r} (expected `python train.py ARGS` or `torchrun ... train.py ARGS`)")
    if not Path(command[0]).is_file():
        raise UsageError(f"training script not found: {command[0]} (expected `python path/to/train.py ARGS`)")
    return Launch([python, "-m", "torchwise.watch.child", *command], False, command[0], child_options(options, log, grace))


def _interpreter(command: list[str]) -> tuple[str, list[str]]:
    """(the Python to run, the rest): ``python3.11 train.py`` keeps its interpreter, ``train.py`` gets this one."""
    head = command[0]
    if head.endswith(".py") or not os.path.basename(head).startswith("python"):
        return sys.executable, command
    rest = command[1:]
    if not rest:
        raise UsageError("no script given after the Python executable: expected `python train.py ARGS`")
    return (sys.executable if head == "python" else head), rest


def _torchrun(rest: list[str]) -> Launch:
    from torch.distributed.run import get_args_parser

    parser = get_args_parser()
    try:
        parsed = parser.parse_args(rest)
    except SystemExit:
        raise UsageError("torchrun could not parse its arguments (see its message above); expected `torchrun [OPTIONS] train.py ARGS`") from None
    if parsed.no_python:
        raise UsageError("torchrun --no-python runs a program that is not Python: the watch attaches to Python training scripts only")
    tail = 1 + len(parsed.training_script_args)
    head = [a for a in rest[: len(rest) - tail] if a not in ("-m", "--module")]
    if not parsed.module and not Path(parsed.training_script).is_file():
        raise UsageError(f"training script not found: {parsed.training_script} (expected `torchrun [OPTIONS] path/to/train.py ARGS`)")
    argv = [sys.executable, "-m", "torch.distributed.run", *head, "-m", "torchwise.watch.child",
            parsed.training_script, *parsed.training_script_args]
    launch = Launch(argv, True, parsed.training_script)
    launch.module = bool(parsed.module)
    return launch


def child_env(settings: str = "{}") -> dict[str, str]:
    from torchwise.watch.child import ENV

    src = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env[ENV] = settings
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def log_paths(log: Path, distributed: bool) -> list[Path]:
    """The logs written so far: ``log`` alone, or every ``log``'s rank file (by rank)."""
    if not distributed:
        return [log]
    probe = rank_log_path(log, 0, 2)
    pattern = probe.name.replace(".rank0", ".rank*")
    found = list(log.parent.glob(pattern)) if log.parent.exists() else []

    def rank_of(p: Path) -> int:
        try:
            return int(p.name.split(".rank", 1)[1].split(".", 1)[0])
        except (IndexError, ValueError):
            return 1 << 30

    return sorted(found, key=rank_of)


class Follower:
    """Follows the logs of a running script: alerts once per finding, stop requests."""

    def __init__(self, log: Path, distributed: bool, options: WatchOptions, say: Callable[[str], None]) -> None:
        from torchwise.watch.events import Tail

        self.log, self.distributed, self.options, self.say = log, distributed, options, say
        self.tails: dict[Path, Tail] = {}
        self.seen: set[tuple[str, str]] = set()
        self.stop_at: float | None = None

    def poll(self) -> None:
        from torchwise.watch.alerts import alert_line
        from torchwise.watch.events import Tail

        for path in log_paths(self.log, self.distributed):
            tail = self.tails.setdefault(path, Tail(path))
            for record in tail.read():
                if record["event"] != "finding" or record.get("earlier"):
                    continue
                key = (record["code"], record.get("where", ""))
                if key in self.seen:
                    continue
                self.seen.add(key)
                self.say(alert_line(record))
                if self.stop_at is None and self.options.stops_on(record["severity"]):
                    self.stop_at = time.monotonic()


def run_watched(launch: Launch, log: Path, options: WatchOptions, *, grace: float, stdout: Any = None,
                say: Callable[[str], None] | None = None) -> int:
    """Run the planned command to its end, following its logs; returns the process's exit status."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    follower = Follower(log, launch.distributed, options, say)
    proc = subprocess.Popen(launch.argv, env=child_env(launch.settings), stdout=stdout)
    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)

    def forward(signum: int, frame: Any) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, lambda s, f: None)  # the terminal sends Ctrl-C to the script too: wait for it
    terminated = killed = False
    try:
        while proc.poll() is None:
            try:
                proc.wait(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                pass
            follower.poll()
            if follower.stop_at is not None and launch.distributed and not terminated:
                proc.send_signal(signal.SIGTERM)  # torchrun relays it to every worker
                terminated = True
            elif follower.stop_at is not None and not killed and time.monotonic() - follower.stop_at > grace + 30:
                proc.kill()  # the script neither stopped nor saved within the grace
                killed = True
        follower.poll()
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    code = proc.returncode
    for path in log_paths(log, launch.distributed):
        from torchwise.watch.events import EventLog

        end = EventLog(path, append=True)
        end.write("exit", code=code, signal=signal.Signals(-code).name if code < 0 else None)
        end.close()
    return code


__all__ = ["plan", "run_watched", "Launch", "default_log", "log_paths", "child_env"]
