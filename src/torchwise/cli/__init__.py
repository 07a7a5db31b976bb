"""The ``torchwise`` command.

Start-up time is part of the product: this module imports nothing heavy. It looks at the first
argument, imports only the module that implements that command, and lets it parse the rest.
Each command module exposes ``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import errno
import importlib
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
    lines += ["", "Run 'torchwise COMMAND --help' for a command's options."]
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
    argv = list(sys.argv[1:] if argv is None else argv)
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
    previous_showwarning = warnings.showwarning
    warnings.showwarning = _one_line_warnings(name, previous_showwarning)
    try:
        return int(module.run(args) or 0)
    except TorchwiseError as exc:
        print(f"torchwise {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM turned into an interrupt by the Trainer
        signum = int(getattr(exc, "signum", 0) or 2)
        print(f"torchwise {name}: {str(exc) or 'interrupted'}", file=sys.stderr)
        return 128 + signum
    except OSError as exc:
        line = environment_error(exc)
        if line is None:  # not about the user's files or machine: a bug, keep the traceback
            raise
        print(f"torchwise {name}: error: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `torchwise env | head`: the reader left; not an error of ours
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    finally:
        warnings.showwarning = previous_showwarning


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
