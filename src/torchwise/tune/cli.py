"""``torchwise tune TASK [--budget 120] [--out tune.json] [--plot speedups.png] [--json]``."""

from __future__ import annotations

import argparse
import json
import sys

from torchwise.core.task_args import add_task_arg, task_kwargs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="the Task to tune: path/to/file.py:function or package.module:function")
    add_task_arg(parser)
    parser.add_argument("--budget", type=float, default=120.0, metavar="SECONDS", help="time budget of the whole search (default 120)")
    parser.add_argument("--out", default="tune.json", metavar="PATH", help="where to write the chosen configuration (default tune.json); '-' writes none")
    parser.add_argument("--plot", default=None, metavar="PNG", help="also draw a bar chart of the speed-ups (needs matplotlib: the 'viz' extra)")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON instead of tables")
    parser.add_argument("--device", default="auto", help="auto (default), cpu, cuda, cuda:N")
    parser.add_argument("--knobs", default=None, metavar="A,B", help="measure only these knobs (default all): threads, precision, channels_last, cudnn_benchmark, tf32, compile, batch_size, loader")
    parser.add_argument("--max-batch-size", type=int, default=None, metavar="N", help="largest batch the batch-size search may try (CUDA)")
    parser.add_argument("--loss-rtol", type=float, default=0.05, metavar="R", help="how far (relative) the loss after a few steps may move from fp32 (default 0.05)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run(args: argparse.Namespace) -> int:
    from torchwise.core.task import load_task
    from torchwise.tune import tune
    from torchwise.core.tuned import check_output_path

    def progress(msg: str) -> None:
        print(f"tune: {msg}", file=sys.stderr, flush=True)

    out = None if args.out in ("-", "") else args.out
    check_output_path(out, "out")  # before the task is loaded and the budget spent
    check_output_path(args.plot, "plot")
    result = tune(
        load_task(args.task, **task_kwargs(args.task_arg)),
        budget_s=args.budget,
        device=args.device,
        out=out,
        knobs=args.knobs,
        plot=args.plot,
        loss_rtol=args.loss_rtol,
        max_batch_size=args.max_batch_size,
        progress=None if args.quiet else progress,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
        return 0
    from torchwise.core.output import rich_wanted

    lines = []
    if result.out is not None:
        task_args = "".join(f" --task-arg {a}" for a in args.task_arg)
        lines.append(f"wrote {result.out}  (apply it: torchwise train {args.task}{task_args} --tuned {result.out})")
    if result.plot_path is not None:
        lines.append(f"wrote {result.plot_path}")
    if rich_wanted():
        from rich.console import Console

        console = Console()
        result.print(console)
        for line in lines:
            console.print(line, highlight=False, markup=False, soft_wrap=True)
    else:  # piped or redirected: plain aligned text, no box drawing
        print("\n".join([result.text(), *lines]))
    return 0
