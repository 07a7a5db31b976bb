"""The ``torchwise`` command.

Start-up time is part of the product: this module imports nothing heavy. It looks at the first
argument, imports only the module that implements that command, and lets it parse the rest.
Each command module exposes ``add_arguments(parser)`` and ``run(args) -> int``.

Whatever a command raises ends as one line on stderr, never a traceback, unless it is a bug:
a :class:`TorchwiseError` or an OSError about the user's files (exit 2), a missing optional
dependency with the pip line that installs it (exit 2), an interrupt (128 + the signal), and a
reader that closed the pipe early (``torchwise rules | head -1``: quiet, the command's status).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import warnings
from typing import Any, Callable, Sequence

from torchwise.core.errors import TorchwiseError

# name -> (module implementing it, one-line help). Modules are imported only when used.
COMMANDS: dict[str, tuple[str, str]] = {
    "env": ("torchwise.utils.env", "report Python, torch, CUDA, cuDNN, NCCL, CPU and every GPU (NVML)"),
    "rules": ("torchwise.cli.rules", "list the practice catalog"),
    "rule": ("torchwise.cli.rules", "explain one practice: what, why, example, fix"),
    "summary": ("torchwise.utils.summary", "per-layer shapes, parameters and FLOPs of a Task's model"),
    "lint": ("torchwise.lint.cli", "statically check Python files for training pitfalls"),
    "train": ("torchwise.train.cli", "train a Task with every practice applied"),
    "doctor": ("torchwise.doctor.cli", "run a few real steps and report run-time problems"),
    "watch": ("torchwise.watch.cli", "watch a whole training run (script or torchrun) with the doctor's checks sampled"),
    "tune": ("torchwise.tune.cli", "measure which speed settings help this model here"),
    "checkpoint": ("torchwise.train.checkpoint_cli", "consolidate a sharded (FSDP) checkpoint into one file"),
    "demo": ("torchwise.cli.demo", "train, lint, doctor and tune the built-in digits example, step by step"),
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torchwise")
    except PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def _top_help() -> str:
    width = max(len(n) for n in COMMANDS)
    lines = [
        "usage: torchwise COMMAND [options]",
        "",
        "Train PyTorch models well, automatically and checkably.",
        "",
        "commands:",
    ]
    lines += [f"  {name.ljust(width)}  {desc}" for name, (_, desc) in COMMANDS.items()]
    lines += ["", "Run 'torchwise COMMAND --help' (or 'torchwise help COMMAND') for a command's options.",
              "Start with 'torchwise demo' (needs: pip install 'torchwise[torch,examples]')."]
    return "\n".join(lines)


# errno values that describe the user's files or machine, not a defect of torchwise
_ENV_ERRNOS = frozenset({
    errno.ENOENT, errno.EEXIST, errno.EISDIR, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.EROFS,
    errno.ENOSPC, errno.EDQUOT, errno.ENAMETOOLONG, errno.ELOOP, errno.EMFILE, errno.ENFILE, errno.EBUSY,
    errno.ETXTBSY, errno.EXDEV, errno.EFBIG, errno.ENXIO,
})


def environment_error(exc: OSError) -> str | None:
    """One line for an OSError caused by a path or the machine (missing file, no permission, disk
    full...), naming the path; ``None`` for anything else, which the caller re-raises."""
    if exc.errno not in _ENV_ERRNOS:
        return None
    what = exc.strerror or type(exc).__name__
    if exc.filename is None:
        return f"{what[:1].lower()}{what[1:]}"
    where = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
    return f"{where}: {what[:1].lower()}{what[1:]}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``torchwise`` console script; returns the exit status."""
    status: int | None = None
    try:
        try:
            status = _dispatch(list(sys.argv[1:] if argv is None else argv))
        finally:  # also after argparse's SystemExit (--help): a reader that left shows up here,
            _flush()  # not as "Exception ignored ... BrokenPipeError" at interpreter exit
        return status
    except BrokenPipeError:  # `torchwise rules | head -1`: the reader left; not an error of ours
        _silence_output()
        return 0 if status is None else status


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["help"] and len(argv) > 1:
        argv = [argv[1], "--help", *argv[2:]]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_top_help())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        print(f"torchwise {_version()}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        import difflib

        near = difflib.get_close_matches(name, list(COMMANDS), n=3)
        hint = f" Did you mean: {', '.join(near)}?" if near else ""
        print(f"torchwise: unknown command {name!r}.{hint} Commands: {', '.join(COMMANDS)}.", file=sys.stderr)
        return 2
    module_name, desc = COMMANDS[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"torchwise {name}", description=desc)
    if hasattr(module, "add_arguments_for"):
        module.add_arguments_for(name, parser)
    else:
        module.add_arguments(parser)
    args = parser.parse_args(rest)
    args.command = name
    return _run(name, module, args)


def _run(name: str, module: Any, args: argparse.Namespace) -> int:
    """Run one command; its errors become one line on stderr and an exit status."""
    from torchwise.core.extras import install_hint, missing_module

    previous_showwarning = warnings.showwarning
    warnings.showwarning = _one_line_warnings(name, previous_showwarning)
    try:
        return int(module.run(args) or 0)
    except TorchwiseError as exc:
        missing = missing_module(exc)
        hint = f" ({install_hint(missing)})" if missing else ""
        print(f"torchwise {name}: error: {exc}{hint}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        missing = missing_module(exc)
        if missing is None:  # not an optional dependency of ours: a bug, keep the traceback
            raise
        print(f"torchwise {name}: error: {install_hint(missing)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM turned into an interrupt by the Trainer
        signum = int(getattr(exc, "signum", 0) or 2)
        print(f"torchwise {name}: {str(exc) or 'interrupted'}", file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        raise  # main() ends quietly
    except OSError as exc:
        line = environment_error(exc)
        if line is None:  # not about the user's files or machine: a bug, keep the traceback
            raise
        print(f"torchwise {name}: error: {line}", file=sys.stderr)
        return 2
    finally:
        warnings.showwarning = previous_showwarning


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


def _silence_output() -> None:
    """Point stdout and stderr at /dev/null, so that nothing is written (and nothing fails) when
    Python flushes them at exit after the reader of the pipe has gone."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
            pass
    os.close(devnull)


def _one_line_warnings(name: str, fallback: Callable[..., None]) -> Callable[..., None]:
    """``torchwise CMD: warning: MESSAGE`` for user-facing warnings (UserWarning and its kind);
    other categories (deprecations...) keep Python's format, with the source line."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: str | None = None) -> None:
        if not issubclass(category, UserWarning):
            fallback(message, category, filename, lineno, file, line)
            return
        text = " ".join(str(message).split())
        print(f"torchwise {name}: warning: {text}", file=file if file is not None else sys.stderr)

    return show


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
