"""``torchwise lint PATH...``: command-line front end (ruff/flake8 conventions).

Exit status: 0 no findings, 1 findings (with ``--diff``: changes to make), 2 usage error.
Never imports torch.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from pathlib import Path

from torchwise.errors import UsageError
from torchwise.lint.output import FORMATS, render, summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders to check (default: the current folder); '-' reads standard input")
    parser.add_argument("--select", action="append", metavar="CODES",
                        help="only these codes or prefixes, comma-separated (e.g. TW4,TW201); replaces the config's select")
    parser.add_argument("--ignore", action="append", metavar="CODES",
                        help="skip these codes or prefixes, comma-separated; adds to the config's ignore")
    parser.add_argument("--fix", action="store_true", help="apply the safe fixes in place (stdin: print the fixed source)")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="with --fix/--diff, also apply the fixes that may change behaviour (each finding says why)")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a unified diff instead of writing them")
    parser.add_argument("--format", choices=FORMATS, default="text", help="report format (default: text)")
    parser.add_argument("-o", "--output-file", metavar="FILE", help="write the report to FILE instead of standard output")
    parser.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                        help="worker processes (default: every core; runs of fewer than 16 files stay in one process)")
    parser.add_argument("--config", metavar="PYPROJECT", help="use this pyproject.toml instead of searching upwards")
    parser.add_argument("--isolated", action="store_true", help="ignore every pyproject.toml")
    parser.add_argument("--stdin-filename", metavar="NAME", help="the name to report for '-' (also used to find the config)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")


def _split(values: list[str] | None) -> list[str]:
    return [p.strip() for v in values or [] for p in v.split(",") if p.strip()]


def run(args: argparse.Namespace) -> int:
    from torchwise.lint.config import LintConfig, load_pyproject
    from torchwise.lint.core import resolve_codes
    from torchwise.lint.runner import FileJob, Selection, discover, run_jobs

    if args.fix and args.diff:
        raise UsageError("--fix and --diff exclude each other: --diff shows the fixes, --fix applies them")
    if args.jobs < 0:
        raise UsageError(f"--jobs must be 0 (all cores) or more, got {args.jobs}")
    config = None
    if args.config:
        cfg_path = Path(args.config)
        if not cfg_path.is_file():
            raise UsageError(f"--config: no such file: {args.config}")
        config = load_pyproject(cfg_path) or LintConfig(cfg_path.parent.resolve())
    selection = Selection(
        select=_split(args.select) or None,
        ignore=_split(args.ignore),
        use_config=not args.isolated,
        config=config,
    )
    resolve_codes(selection.select, selection.ignore)  # unknown codes -> usage error, before any work

    paths = args.paths or ["."]
    fixing = args.fix or args.diff
    jobs = discover(paths, selection, fix=fixing)
    if "-" in paths:
        name = args.stdin_filename or "<stdin>"
        p = Path(args.stdin_filename) if args.stdin_filename else Path("stdin.py")
        cfg = selection.config_for(p if args.stdin_filename else Path.cwd() / "stdin.py")
        data = sys.stdin.buffer.read()
        jobs.append(FileJob("-", name, selection.codes_for(p, cfg), fixing, source=data))
    for job in jobs:
        job.unsafe = bool(getattr(args, "unsafe_fixes", False))
    results = run_jobs(jobs, args.jobs or None)

    out_chunks: list[str] = []
    trailer = ""
    findings = [f for r in results for f in r.findings]
    status = 1 if findings else 0
    if args.diff:
        patch = []
        for r in results:
            if r.fixed is not None and r.original is not None:
                patch.extend(difflib.unified_diff(
                    r.original.splitlines(keepends=True), r.fixed.splitlines(keepends=True),
                    fromfile=f"a/{r.display.lstrip('/')}", tofile=f"b/{r.display.lstrip('/')}",
                ))
        text = "".join(patch)
        if text and not text.endswith("\n"):
            text += "\n"
        n_fixes = sum(r.applied for r in results)
        n_files = sum(1 for r in results if r.fixed is not None)
        out_chunks.append(text)
        trailer = (f"{n_fixes} fix{'es' if n_fixes != 1 else ''} would be applied to {n_files} file{'s' if n_files != 1 else ''}; "
                   f"{summary(findings)}")
        status = 1 if text else 0
    else:
        if args.fix:
            written = 0
            for r in results:
                if r.fixed is None:
                    continue
                if r.path == "-":
                    continue
                _write(r.path, r.fixed, r.encoding)
                written += 1
            n_fixes = sum(r.applied for r in results)
            if n_fixes:
                print(f"Fixed {n_fixes} finding{'s' if n_fixes != 1 else ''} in {written} file{'s' if written != 1 else ''}.",
                      file=sys.stderr)
            for r in results:
                if r.path == "-":  # ruff convention: the fixed source goes to stdout
                    sys.stdout.write(r.fixed if r.fixed is not None else (r.original or ""))
                    sys.stdout.flush()
                    if findings:
                        sys.stderr.write(render(findings, args.format))
                    return 0 if args.exit_zero or not findings else 1
        out_chunks.append(render(findings, args.format))
    report = "".join(out_chunks)
    if args.output_file:
        with open(args.output_file, "w", encoding="utf-8") as fh:
            fh.write(report)
    else:
        sys.stdout.write(report)
    if trailer:  # after the patch, so the two streams cannot interleave on one terminal
        sys.stdout.flush()
        print(trailer, file=sys.stderr)
    return 0 if args.exit_zero else status


def _write(path: str, text: str, encoding: str) -> None:
    """Replace the file's content atomically, keeping its encoding and permissions."""
    data = text.encode(encoding)
    tmp = f"{path}.torchwise-tmp"
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None
    with open(tmp, "wb") as fh:
        fh.write(data)
    if mode is not None:
        os.chmod(tmp, mode & 0o7777)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - convenience entry
    parser = argparse.ArgumentParser(prog="torchwise lint")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except UsageError as exc:
        print(f"torchwise lint: error: {exc}", file=sys.stderr)
        return 2
