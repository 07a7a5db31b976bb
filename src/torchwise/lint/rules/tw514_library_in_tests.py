"""TW514: ``torch.library.Library(...)`` created in a test, where its registrations outlive the test."""

from __future__ import annotations

from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.files import is_test_path


class LibraryInTests(Rule):
    code = "TW514"
    name = "library-in-tests"
    triggers = ("Library",)
    doc = """\
What it flags
  `torch.library.Library(...)` called in a test file (under `tests/`, `test_*.py`,
  `*_test.py`, `conftest.py`).

Why it matters
  A `Library` object registers operators and kernels with the dispatcher for as long as it
  lives. Created in a test it usually lives on (module globals, fixtures, reference cycles), so
  its registrations leak into the tests that run after it: they pass or fail depending on
  order, or fail with "operator already registered".

Example
  lib = torch.library.Library("mylib", "DEF")     # flagged in tests/test_ops.py

Fix
  `with torch.library._scoped_library("mylib", "DEF") as lib:` around the test body, which
  removes the registrations when the block ends.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        if not is_test_path(ctx.path, ctx.source):
            return
        for call in ctx.calls_to("torch.library.Library"):
            yield ctx.finding(self.code, call, "torch.library.Library in a test keeps its registrations after the test ends",
                              suggestion='use `with torch.library._scoped_library(ns, kind) as lib:`', end_node=call.func)


RULE = LibraryInTests()
