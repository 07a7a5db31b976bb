"""TW107: ``.view()`` on the result of ``transpose``/``permute``/``.t()``/``.T``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics import is_dtype_expr

_REORDERING_METHODS = frozenset({"transpose", "permute", "t", "swapaxes", "swapdims", "movedim", "moveaxis"})
_REORDERING_ATTRS = frozenset({"T", "mT", "H", "mH"})


def reorders(ctx: Context, expr: ast.AST | None, use: ast.AST, depth: int = 3) -> str | None:
    """The reordering op (``transpose``...) that ``expr`` is the direct result of, else None."""
    if expr is None or depth <= 0:
        return None
    cls = expr.__class__
    if cls is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is None or b.kind != "assign":
            return None
        return reorders(ctx, b.value, b.node, depth - 1)
    if cls is ast.Attribute and expr.attr in _REORDERING_ATTRS:
        return f".{expr.attr}"
    if cls is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in _REORDERING_METHODS:
        if ctx.qualname(expr.func) is not None:  # torch.transpose(x, ...) / np.transpose(...)
            q = ctx.qualname(expr.func)
            return expr.func.attr if q and q.startswith("torch.") and q.count(".") == 1 else None
        if expr.func.attr == "t" and (expr.args or expr.keywords):
            return None
        return expr.func.attr
    return None


def _shape_args(ctx: Context, call: ast.Call) -> bool:
    """Are the arguments of ``view`` a shape (not a dtype, as in ``view(torch.int8)``)?"""
    if not call.args or call.keywords:
        return False
    for arg in call.args:
        if arg.__class__ is ast.Constant and not isinstance(arg.value, int):
            return False
        if is_dtype_expr(ctx, arg):
            return False
        q = ctx.qualname(arg)
        if q is not None and (q.startswith("numpy") or q.startswith("torch.")):
            return False  # np.float32, torch.float16...
        name = last_name(arg)
        if name is not None and name.lower() in ("float", "int", "bool", "complex", "type"):
            return False
    return True


class ViewAfterTranspose(Rule):
    code = "TW107"
    name = "view-after-transpose"
    triggers = ("view(",)
    fixable = True
    doc = """\
What it flags
  `.view(shape)` called on the direct result of `transpose`, `permute`, `.t()`, `swapaxes`,
  `movedim` or `.T`/`.mT` (also through a name: `y = x.permute(0, 2, 1)` then `y.view(...)`),
  without `.contiguous()` in between. `view(dtype)` is not flagged. Only files that import
  torch are checked.

Why it matters
  `view` never copies: it needs the memory layout to fit the new shape. Reordering
  dimensions only swaps strides, so the result is non-contiguous and merging its dimensions
  with `view` raises "view size is not compatible with input tensor's size and stride". The
  error appears only at run time, often only for some input shapes.

Example
  out = attn.transpose(1, 2).view(batch, seq, dim)      # TW107

Fix
  `reshape` returns the same view whenever one exists and copies only when it must, so it is
  a drop-in replacement: `attn.transpose(1, 2).reshape(batch, seq, dim)`.
  `torchwise lint --fix` makes that change.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        if not ctx.imports_module("torch"):
            return
        for call in ctx.calls_named("view"):
            func = call.func
            if func.__class__ is not ast.Attribute or not _shape_args(ctx, call):
                continue
            op = reorders(ctx, func.value, call)
            if op is None:
                continue
            edit = ctx.replace_attr(func, "reshape")
            fix = Fix("use reshape instead of view", (edit,)) if edit is not None else None
            yield ctx.finding(
                self.code, call,
                f".view() after {op} fails on the non-contiguous result",
                suggestion="use .reshape(...) (or .contiguous().view(...))",
                fix=fix,
            )


RULE = ViewAfterTranspose()
