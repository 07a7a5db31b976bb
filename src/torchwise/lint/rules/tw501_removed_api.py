"""TW501: calls or imports of functions PyTorch has removed."""

from __future__ import annotations

from typing import Iterator

from torchwise.lint.semantics.api_symbols import REMOVED, symbol_calls, symbol_imports
from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


class RemovedApi(Rule):
    code = "TW501"
    name = "removed-api"
    triggers = ("solve", "symeig", "matrix_rank", "lstsq", "eig")
    doc = """\
What it flags
  A call of, or `from ... import` of, a function that current PyTorch no longer has:
  `torch.solve`, `torch.symeig`, `torch.matrix_rank`, `torch.lstsq`, `torch.eig` (under any
  import alias).

Why it matters
  These were deprecated for several releases and then deleted; the line fails with an
  AttributeError or ImportError as soon as it runs on a current version, often deep into a job
  when the rarely used code path is reached.

Example
  x = torch.solve(b, A)                                # TW501

Fix
  Use the `torch.linalg` function named in the finding (`torch.linalg.solve(A, b)`: the
  argument order differs, so rewrite it by hand).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call, q in symbol_calls(ctx, REMOVED):
            yield ctx.finding(self.code, call, f"{q} was removed from PyTorch; use {REMOVED[q]}",
                              suggestion=f"use {REMOVED[q]}", end_node=call.func)
        for node, alias, q in symbol_imports(ctx, REMOVED):
            yield ctx.finding(self.code, node, f"import of {q}, which was removed from PyTorch; use {REMOVED[q]}",
                              suggestion=f"use {REMOVED[q]}")


RULE = RemovedApi()
