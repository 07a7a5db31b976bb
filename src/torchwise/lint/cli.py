"""``torchwise lint PATH...``: command-line front end (ruff/flake8 conventions).

Exit status: 0 no findings, 1 findings (with ``--diff``: changes to make), 2 usage error.
Never imports torch.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from torchwise.core.errors import UsageError
from torchwise.lint.output import FORMATS, format_text, render, summary

if TYPE_CHECKING:
    from torchwise.lint.runner import FileJob, FileResult, Selection


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
    from torchwise.lint.runner import collect_per_file, run_jobs

    _check_options(args)
    collect_per_file()
    selection = _selection(args)
    jobs = _jobs(args, selection)
    results = run_jobs(jobs, args.jobs or None)
    unwritten = _apply_fixes(jobs, results) if args.fix else []
    findings = [f for r in results for f in r.findings]
    if args.diff:
        report, trailer, status = _diff_report(results, findings)
    else:
        if args.fix:
            stdin = next((r for r in results if r.path == "-"), None)
            if stdin is not None:  # ruff convention: the fixed source goes to stdout, the report to stderr
                return _fixed_stdin(stdin, findings, args)
        text = args.format == "text"
        report = format_text(findings, after_fixes="applied" if args.fix else None) if text else render(findings, args.format)
        trailer, status = "", 1 if findings else 0
    _emit(report, args.output_file, trailer)
    if unwritten:  # after the report, so that the findings are not lost
        raise UsageError(f"could not write the fixes to {_plural(len(unwritten), 'file')}: {', '.join(unwritten)}; "
                         "those files are unchanged (is the folder writable?)")
    return 0 if args.exit_zero else status


def _check_options(args: argparse.Namespace) -> None:
    """Every option checked before any file is read, the report's destination included."""
    if args.fix and args.diff:
        raise UsageError("--fix and --diff exclude each other: --diff shows the fixes, --fix applies them")
    if args.jobs < 0:
        raise UsageError(f"--jobs must be 0 (all cores) or more, got {args.jobs}")
    if args.output_file:
        out = Path(args.output_file)
        if out.is_dir():
            raise UsageError(f"--output-file {args.output_file} is a folder; give a file path such as {out / 'lint.txt'}")
        if not out.parent.is_dir():
            raise UsageError(f"--output-file {args.output_file}: the folder {out.parent} does not exist")


def _selection(args: argparse.Namespace) -> "Selection":
    from torchwise.lint.config import LintConfig, load_pyproject
    from torchwise.lint.core import resolve_codes
    from torchwise.lint.runner import Selection

    config = None
    if args.config:
        cfg_path = Path(args.config)
        if not cfg_path.is_file():
            raise UsageError(f"--config: no such file: {args.config}")
        config = load_pyproject(cfg_path) or LintConfig(cfg_path.parent.resolve())
    selection = Selection(select=_split(args.select) or None, ignore=_split(args.ignore), use_config=not args.isolated, config=config)
    resolve_codes(selection.select, selection.ignore)  # unknown codes -> usage error, before any work
    return selection


def _jobs(args: argparse.Namespace, selection: "Selection") -> list["FileJob"]:
    """The files to lint, standard input last."""
    from torchwise.lint.runner import FileJob, discover

    paths = args.paths or ["."]
    fixing = args.fix or args.diff
    jobs = discover(paths, selection, fix=fixing)
    if "-" in paths:
        name = args.stdin_filename or "<stdin>"
        p = Path(args.stdin_filename) if args.stdin_filename else Path("stdin.py")
        cfg = selection.config_for(p if args.stdin_filename else Path.cwd() / "stdin.py")
        jobs.append(FileJob("-", name, selection.codes_for(p, cfg), fixing, source=sys.stdin.buffer.read()))
    for job in jobs:
        job.unsafe = bool(args.unsafe_fixes)
    return jobs


def _plural(n: int, word: str, plural: str = "s") -> str:
    return f"{n} {word}{plural if n != 1 else ''}"


def _diff_report(results: list["FileResult"], findings: list) -> tuple[str, str, int]:
    """The fixes as one unified diff, the trailer line, and the exit status (1 when there are changes)."""
    import difflib  # only for --diff (lint's start-up stays without it)

    patch: list[str] = []
    for r in results:
        if r.fixed is not None and r.original is not None:
            name = r.display.lstrip("/")
            patch.extend(difflib.unified_diff(r.original.splitlines(keepends=True), r.fixed.splitlines(keepends=True),
                                              fromfile=f"a/{name}", tofile=f"b/{name}"))
    text = "".join(patch)
    if text and not text.endswith("\n"):
        text += "\n"
    n_fixes = sum(r.applied for r in results)
    n_files = sum(1 for r in results if r.fixed is not None)
    trailer = f"{_plural(n_fixes, 'fix', 'es')} would be applied to {_plural(n_files, 'file')}; {summary(findings, 'shown')}"
    return text, trailer, 1 if text else 0


def _apply_fixes(jobs: list["FileJob"], results: list["FileResult"]) -> list[str]:
    """Write every fixed file; returns ``"path (reason)"`` for those that could not be written,
    whose results are replaced by those of the unchanged file (its findings are all still there)."""
    from dataclasses import replace

    from torchwise.lint.runner import lint_job

    written, n_fixes, failed = 0, sum(r.applied for r in results if r.path == "-"), []
    for i, (job, r) in enumerate(zip(jobs, results)):
        if r.fixed is None or r.path == "-":
            continue
        try:
            _write(r.path, r.fixed, r.encoding)
        except OSError as exc:
            failed.append(f"{r.display} ({(exc.strerror or type(exc).__name__).lower()})")
            results[i] = lint_job(replace(job, fix=False))
            continue
        written += 1
        n_fixes += r.applied
    if n_fixes:
        print(f"Fixed {_plural(n_fixes, 'finding')} in {_plural(written, 'file')}.", file=sys.stderr)
    return failed


def _fixed_stdin(result: "FileResult", findings: list, args: argparse.Namespace) -> int:
    sys.stdout.write(result.fixed if result.fixed is not None else (result.original or ""))
    sys.stdout.flush()
    if findings:
        sys.stderr.write(render(findings, args.format))
    return 0 if args.exit_zero or not findings else 1


def _emit(report: str, output_file: str | None, trailer: str) -> None:
    if output_file:
        try:
            with open(output_file, "w", encoding="utf-8") as fh:
                fh.write(report)
        except OSError as exc:
            raise UsageError(f"cannot write the report to {output_file}: {(exc.strerror or str(exc)).lower()}") from None
    else:
        sys.stdout.write(report)
    if trailer:  # after the patch, so the two streams cannot interleave on one terminal
        sys.stdout.flush()
        print(trailer, file=sys.stderr)


def _write(path: str, text: str, encoding: str) -> None:
    """Replace the file's content atomically, keeping its encoding and permissions.

    A symbolic link stays a link: the file it points to is the one rewritten.
    """
    import tempfile  # only for --fix (it imports shutil, random, bz2 and lzma)

    target = os.path.realpath(path)
    data = text.encode(encoding)
    mode = os.stat(target).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=f".{os.path.basename(target)}.", suffix=".torchwise-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - convenience entry
    parser = argparse.ArgumentParser(prog="torchwise lint")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except UsageError as exc:
        print(f"torchwise lint: error: {exc}", file=sys.stderr)
        return 2
