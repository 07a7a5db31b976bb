"""flake8 plugin: torchwise's lint rules as flake8 checks (codes ``TW...``), without importing torch.

Registered as the ``TW`` entry point of ``flake8.extension``, so with torchwise installed
``flake8 --select TW`` (or ``--extend-select TW``) runs them beside the other plugins. flake8
handles selection, ``# noqa`` and output; syntax errors are flake8's own ``E999``.

flake8 hands a plugin one file at a time, so the project facts of ``torchwise lint`` (dataset
classes defined in other modules, a project that is GPU-only by design; see
:mod:`torchwise.lint.project`) are not available here: TW202, TW203 and TW403 judge each file on
its own evidence, and may report what ``torchwise lint`` on the whole folder leaves alone.
"""

from __future__ import annotations

import ast
from typing import Iterator, Sequence

from torchwise.lint.core import _check, known_codes
from torchwise.lint.findings import SYNTAX_CODE


class Flake8Checker:
    """A flake8 "tree" plugin. flake8 passes the parsed tree, the lines and the file name."""

    name = "torchwise"
    version = "0"

    def __init__(self, tree: ast.AST | None = None, lines: Sequence[str] | None = None, filename: str = "stdin") -> None:
        self.lines = list(lines or [])
        self.filename = filename
        try:
            from importlib.metadata import version

            self.version = version("torchwise")
        except Exception:  # not installed (running from a checkout)
            pass

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """``(line, column from 0, "CODE message", type)`` for each finding, as flake8 expects."""
        source = "".join(self.lines)
        codes = frozenset(c for c in known_codes() if c != SYNTAX_CODE)
        findings, _ = _check(source, self.filename, codes)
        for f in findings:
            if f.code == SYNTAX_CODE:
                continue
            yield f.line, f.col - 1, f"{f.code} {f.message}", type(self)


__all__ = ["Flake8Checker"]
