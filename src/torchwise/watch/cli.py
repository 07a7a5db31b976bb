"""``torchwise watch -- python train.py ARGS`` (or ``-- torchrun ... train.py ARGS``).

Runs the whole training unmodified with the doctor's checks sampled, alerts each new finding on
stderr as one line, writes a JSON-lines event log, and prints the doctor's report at the end
(``--json`` for tools, ``--html`` for a page with the run's curves). Exit status: see
:mod:`torchwise.watch.report`.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("script_command", nargs="*", metavar="COMMAND",
                        help="the training command after --: `python train.py ARGS`, `python -m pkg.train ARGS`, "
                        "`torchrun [OPTIONS] train.py ARGS`")
    parser.add_argument("--log", default=None, metavar="PATH",
                        help="the JSON-lines event log (default runs/watch-TIME/events.jsonl; under torchrun one file per rank)")
    parser.add_argument("--resume", action="store_true",
                        help="append to an existing --log (a restarted run): its findings are not alerted again")
    parser.add_argument("--every", type=int, default=None, metavar="N",
                        help="sample one optimizer step in N (default: automatic, so that sampling adds about 1%% to the step time)")
    parser.add_argument("--stop-on", dest="stop_on", default="never", choices=["never", "error", "warning"],
                        help="end the run on the first finding of this severity (a script that handles SIGTERM saves first)")
    parser.add_argument("--grace", type=float, default=60.0, metavar="SECONDS",
                        help="with --stop-on: time a script that handles SIGTERM gets to save and stop (default 60)")
    parser.add_argument("--stall", type=float, default=600.0, metavar="SECONDS",
                        help="report a run whose optimizer has not stepped for this long, with where it waits (default 600; 0: never)")
    parser.add_argument("--rank-every", dest="rank_every", type=int, default=50, metavar="N",
                        help="under torchrun: steps between two cross-rank comparisons (default 50)")
    parser.add_argument("--html", default=None, metavar="PATH", help="write a self-contained HTML page of the run at the end")
    parser.add_argument("--tensorboard", default=None, metavar="DIR", help="also write the samples as TensorBoard scalars")
    parser.add_argument("--json", action="store_true", help="print the final report as JSON")


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from torchwise.core.output import emit
    from torchwise.core.errors import UsageError
    from torchwise.watch import watch_script
    from torchwise.watch.options import WatchOptions

    if not args.script_command:
        raise UsageError("no command given: use `torchwise watch -- python train.py ARGS` or `torchwise watch -- torchrun ... train.py ARGS`")
    if args.grace < 0:
        raise UsageError(f"--grace must be >= 0 seconds, got {args.grace}")
    options = WatchOptions(every=args.every, stop_on=args.stop_on, log=args.log, resume=args.resume, alerts=True,
                           rank_every=args.rank_every, stall=args.stall, tensorboard=args.tensorboard)
    outcome = watch_script(args.script_command, options, grace=args.grace, html=args.html)
    from torchwise.doctor.cli import _print_rich

    emit(outcome.report, as_json=args.json, rich=_print_rich, text=str, to_json=lambda r: r.to_json())
    print(f"torchwise watch: {outcome.line}", file=sys.stderr)
    if args.html:
        print(f"torchwise watch: page written to {Path(args.html)}", file=sys.stderr)
    return outcome.code
