"""``--task-arg KEY=VALUE``: keyword arguments for the task function, the same on every command.

``train``, ``doctor``, ``tune`` and ``summary`` all take it, so the configuration one checks and
tunes is the one one trains. Values are Python literals when they parse as one (``lr=0.01``,
``layers=[64,64]``, ``fast=True``), else strings (``data=/tmp/x``). Imports nothing heavy.
"""

from __future__ import annotations

import argparse
import ast
from typing import Any

from torchwise.core.errors import UsageError


def add_task_arg(parser: argparse.ArgumentParser) -> None:
    """Add the repeatable ``--task-arg KEY=VALUE`` option."""
    parser.add_argument("--task-arg", action="append", default=[], metavar="KEY=VALUE",
                        help="keyword argument for the task function (repeatable), e.g. --task-arg lr=0.01")


def task_kwargs(items: list[str]) -> dict[str, Any]:
    """``{"lr": 0.01, ...}`` from ``["lr=0.01", ...]``; a :class:`UsageError` for a malformed item."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, text = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--task-arg expects KEY=VALUE with a Python identifier as KEY, got {item!r}")
        try:
            out[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            out[key] = text
    return out
