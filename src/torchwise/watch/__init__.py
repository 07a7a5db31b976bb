"""``torchwise.watch``: watch a whole training run, unmodified, with the doctor's checks sampled.

    torchwise watch -- python train.py ARGS
    torchwise watch --stop-on error --html run.html -- torchrun --nproc_per_node=4 train.py ARGS

or from Python, :func:`watch_script` (a script in a child process) and, inside your own loop,
``with torchwise.watching(model, optimizer): ...`` (:mod:`torchwise.integrations`).

The parts: :mod:`.session` (the per-process watch: cheap counters every step, the doctor's
recorder on sampled steps, windows judged by the doctor's checks), :mod:`.longrun` (what only a
whole run shows), :mod:`.ranks` and :mod:`.ddp` (cross-rank checks under torchrun),
:mod:`.stall`, :mod:`.events` (the JSON-lines log), :mod:`.launch` and :mod:`.child` (the
processes), :mod:`.report` (the end and the exit status), :mod:`.html` (the page).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from torchwise.watch.options import WatchOptions

__all__ = ["watch_script", "WatchOptions"]


def watch_script(command: Sequence[str], options: WatchOptions | None = None, *, grace: float = 60.0,
                 html: str | Path | None = None, stdout: Any = None, say: Any = None) -> Any:
    """Run ``command`` (``["python", "train.py", ...]`` or ``["torchrun", ..., "train.py", ...]``)
    watched to its end; returns a :class:`~torchwise.watch.report.Outcome` (``.report``, ``.code``,
    ``.line``, ``.logs``). ``stdout``: where the script's own output goes (default: this process's)."""
    from torchwise.watch.launch import default_log, log_paths, plan, run_watched
    from torchwise.watch.report import assemble

    options = options or WatchOptions()
    log = Path(options.log) if options.log else default_log()
    launch = plan(command, options, log, grace)
    if not options.resume:
        for stale in log_paths(log, launch.distributed):
            stale.unlink(missing_ok=True)
    returncode = run_watched(launch, log, options, grace=grace, stdout=stdout, say=say)
    outcome = assemble(log_paths(log, launch.distributed) or [log], launch.subject, returncode)
    if html:
        from torchwise.watch.html import write_page

        write_page(outcome, html)
    return outcome
