"""TW501: calls or imports of functions PyTorch has removed."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.semantics.api_symbols import REMOVED, symbol_calls, symbol_imports
from torchwise.lint.engine import Context, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


class RemovedApi(Rule):
    code = "TW501"
    name = "removed-api"
    triggers = ("solve", "symeig", "matrix_rank", "lstsq", "eig", "zero_gradients", "_six", "load_lua", "Scale", "SizedCrop")
    doc = """\
What it flags
  A call of, or `from ... import` of, a function that current PyTorch no longer has:
  `torch.solve`, `torch.symeig`, `torch.matrix_rank`, `torch.lstsq`, `torch.eig` (under any
  import alias), `torch.autograd.gradcheck.zero_gradients`, and the names of `torch._six`
  (`string_classes`, `int_classes`, `container_abcs`, `inf`...; the module went in PyTorch 2.0),
  and `torch.utils.serialization.load_lua` (Lua Torch `.t7` files; gone since PyTorch 1.0); and
  torchvision's `transforms.Scale` and `transforms.RandomSizedCrop` (deprecated since 0.2,
  deleted in torchvision 0.12: `Resize`, `RandomResizedCrop`). A class or function of the
  project that happens to be called `Scale` is not torchvision's and is left alone.
  An import inside `try:` whose `except` catches the ImportError (a fallback for newer versions)
  is left alone.

Why it matters
  These were deprecated for several releases and then deleted; the line fails with an
  AttributeError or ImportError as soon as it runs on a current version, often deep into a job
  when the rarely used code path is reached.

Example
  x = torch.solve(b, A)                                # TW501
  resize = transforms.Scale(256)                       # TW501

Fix
  Use the `torch.linalg` function named in the finding (`torch.linalg.solve(A, b)`: the
  argument order differs, so rewrite it by hand).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call, q in symbol_calls(ctx, REMOVED):
            yield ctx.finding(self.code, call, f"{q} was removed from {_library(q)}; use {REMOVED[q]}",
                              suggestion=f"use {REMOVED[q]}", end_node=call.func)
        for node, alias, q in symbol_imports(ctx, REMOVED):
            if _import_guarded(ctx, node):
                continue  # try: from torch._six import inf / except ImportError: from torch import inf
            yield ctx.finding(self.code, node, f"import of {q}, which was removed from {_library(q)}; use {REMOVED[q]}",
                              suggestion=f"use {REMOVED[q]}")


def _library(q: str) -> str:
    return "torchvision" if q.startswith("torchvision.") else "PyTorch"


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _import_guarded(ctx: Context, node: ast.AST) -> bool:
    """The import sits in the body of a ``try:`` whose handlers catch its ImportError."""
    child = node
    for anc in ctx.ancestors(node):
        if anc.__class__ is ast.Try and child in anc.body:
            for h in anc.handlers:
                types = [] if h.type is None else h.type.elts if h.type.__class__ is ast.Tuple else [h.type]
                if h.type is None or any(last_name(t) in _IMPORT_ERRORS for t in types):
                    return True
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        child = anc
    return False


RULE = RemovedApi()
