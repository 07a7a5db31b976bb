"""``torchwise doctor TASK``: run a few real steps on a copy and print what they showed.

``torchwise doctor -- python train.py ARGS`` (or ``torchwise doctor train.py -- ARGS``) runs an
unmodified training script with the doctor attached instead (:mod:`torchwise.doctor.script`).

Exit status: 0 when nothing of error severity was found, 1 otherwise (or when the steps
failed), 2 for a bad task reference or bad arguments.
"""

from __future__ import annotations

import argparse

from torchwise.core.task_args import add_task_arg, task_kwargs


SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "hint": "cyan"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="task reference: path/to/file.py:function or package.module:function; "
                        "or a training script: `-- python train.py ARGS` / `train.py -- ARGS`")
    parser.add_argument("script_args", nargs="*", metavar="ARGS", help="the script's own arguments (after --)")
    add_task_arg(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON (for tools)")
    parser.add_argument("--steps", type=int, default=None,
                        help="optimizer steps to run (default 3 for a Task, 200 for a script); >= 20 watches training dynamics")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help="stop stepping after this many seconds (with --steps as the upper bound)")
    parser.add_argument("--full", action="store_true", help="script mode: let the script run to its end")
    parser.add_argument("--device", default="auto", help="auto (default), cpu, cuda, cuda:N")
    parser.add_argument("--precision", default="auto", help="auto (default), 32, bf16-mixed, 16-mixed")
    parser.add_argument("--for-device", dest="for_device", default=None,
                        help="device type the real training will use, for the speed checks (e.g. cuda on a laptop)")
    parser.add_argument("--select", action="append", default=None, metavar="CODE", help="run only these codes or prefixes (repeatable)")
    parser.add_argument("--skip", action="append", default=None, metavar="CODE", help="leave out these codes or prefixes (repeatable)")


def run(args: argparse.Namespace) -> int:
    from torchwise.core.output import emit
    from torchwise.doctor import check_codes, doctor
    from torchwise.doctor.script import doctor_script, is_script_command
    from torchwise.core.errors import UsageError
    from torchwise.core.task import load_task

    select, skip = check_codes(args.select, "--select"), check_codes(args.skip, "--skip")  # before anything runs
    if is_script_command(args.task):
        report = doctor_script([args.task, *args.script_args], steps=args.steps or 200, budget=args.budget, full=args.full)
        emit(report, as_json=args.json, rich=_print_rich, text=str, to_json=lambda r: r.to_json())
        return 0 if report.ok else 1
    if args.script_args:
        raise UsageError(f"extra arguments {args.script_args} after the task reference {args.task!r}; "
                         "a script runs as `torchwise doctor -- python train.py ARGS`")
    task = load_task(args.task, **task_kwargs(args.task_arg))
    report = doctor(
        task, steps=args.steps or 3, device=args.device, precision=args.precision, for_device=args.for_device,
        select=select, skip=skip, budget=args.budget,
    )
    emit(report, as_json=args.json, rich=_print_rich, text=str, to_json=lambda r: r.to_json())
    return 0 if report.ok else 1



def _print_rich(report) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{report.summary_line()}[/bold]")
    if report.findings:
        table = Table(show_lines=True)
        for col in ("code", "severity", "where", "finding", "fix"):
            table.add_column(col, overflow="fold")
        for f in report.findings:
            table.add_row(f.code, f"[{SEVERITY_STYLE[f.severity]}]{f.severity}[/]", f.where, f.message, f.fix)
        console.print(table)
    m = report.measured
    facts = ", ".join(f"{k}={v}" for k, v in m.items())
    console.print(f"[dim]measured: {facts}[/dim]")
    for s in report.skipped:
        console.print(f"[dim]skipped {'/'.join(s.codes)}: {s.reason}[/dim]")
