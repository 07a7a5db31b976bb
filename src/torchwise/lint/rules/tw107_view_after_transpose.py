"""TW107: ``.view()`` on the result of ``transpose``/``permute``/``.t()``/``.T``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.devices import is_dtype_expr
from torchwise.lint.semantics.factorynames import SHAPED

_REORDERING_METHODS = frozenset({"transpose", "permute", "t", "swapaxes", "swapdims", "movedim", "moveaxis"})
_REORDERING_ATTRS = frozenset({"T", "mT", "H", "mH"})


def _int(node: ast.AST | None) -> int | None:
    if node is None:
        return None
    if node.__class__ is ast.Constant and type(node.value) is int:
        return node.value
    if node.__class__ is ast.UnaryOp and node.op.__class__ is ast.USub:
        inner = _int(node.operand)
        return -inner if inner is not None else None
    return None


def arity(call: ast.Call) -> int | None:
    """How many sizes/dims a call like ``view(a, b)``/``view((a, b))``/``permute(0, 2, 1)`` passes."""
    args = call.args
    if call.keywords or any(a.__class__ is ast.Starred for a in args):
        return None
    if len(args) == 1 and args[0].__class__ in (ast.Tuple, ast.List):
        if any(e.__class__ is ast.Starred for e in args[0].elts):
            return None
        return len(args[0].elts)
    if len(args) == 1 and args[0].__class__ is not ast.BinOp and _int(args[0]) is None:
        return None  # view(shape), view(x.size()): unknown
    return len(args)


def rank_of(ctx: Context, expr: ast.AST | None, use: ast.AST, depth: int = 4) -> int | None:
    """The number of dimensions of ``expr`` when the code makes it evident, else None."""
    if expr is None or depth <= 0:
        return None
    cls = expr.__class__
    if cls is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is None or b.kind != "assign":
            return None
        return rank_of(ctx, b.value, b.node, depth - 1)
    if cls is ast.Attribute and expr.attr in ("T", "mT", "H", "mH"):
        return rank_of(ctx, expr.value, use, depth - 1)
    if cls is not ast.Call:
        return None
    func = expr.func
    if func.__class__ is not ast.Attribute:
        return None
    q = ctx.qualname(func)
    if q is not None:
        if q.startswith("torch.") and q.count(".") == 1 and func.attr in SHAPED:
            if func.attr == "full":
                return len(expr.args[0].elts) if expr.args and expr.args[0].__class__ in (ast.Tuple, ast.List) else None
            return arity(expr)
        return None
    if func.attr in ("view", "reshape", "expand", "permute", "new_zeros", "new_ones", "new_empty"):
        return arity(expr)
    if func.attr in ("transpose", "t", "swapaxes", "swapdims", "contiguous", "float", "half", "detach", "clone", "to", "cuda"):
        return rank_of(ctx, func.value, use, depth - 1)
    if func.attr == "unsqueeze":
        r = rank_of(ctx, func.value, use, depth - 1)
        return r + 1 if r is not None else None
    return None


def reorders(ctx: Context, expr: ast.AST | None, use: ast.AST, depth: int = 3) -> tuple[str, int | None, int] | None:
    """``(op, rank or None, minimum rank)`` when ``expr`` is the direct result of a dimension
    reordering (``transpose``, ``permute``, ``.t()``, ``.T``...), else None."""
    if expr is None or depth <= 0:
        return None
    cls = expr.__class__
    if cls is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is None or b.kind != "assign":
            return None
        return reorders(ctx, b.value, b.node, depth - 1)
    if cls is ast.Attribute and expr.attr in _REORDERING_ATTRS:
        return (f".{expr.attr}", rank_of(ctx, expr.value, use), 2)
    if cls is not ast.Call or expr.func.__class__ is not ast.Attribute:
        return None
    func = expr.func
    op = func.attr
    if op not in _REORDERING_METHODS:
        return None
    q = ctx.qualname(func)
    if q is not None:
        return None  # torch.transpose(x, ...) / np.transpose(...): not followed here
    if op == "t":
        if expr.args or expr.keywords:
            return None
        r = rank_of(ctx, func.value, use)
        return None if r is not None and r < 2 else ("t", 2, 2)
    if op == "permute":
        n = arity(expr)
        if n is None:
            return None
        dims = expr.args[0].elts if len(expr.args) == 1 and expr.args[0].__class__ in (ast.Tuple, ast.List) else expr.args
        values = [_int(d) for d in dims]
        if all(v is not None for v in values) and values == sorted(values):
            return None  # identity permutation
        if all(v is not None for v in values):
            # dims that stay next to each other in memory order may be merged by a view; only a
            # view into fewer sizes than there are such runs must merge across a reordering
            norm = [v % n for v in values]  # type: ignore[operator]
            runs = 1 + sum(1 for a, b in zip(norm, norm[1:]) if b != a + 1)
            return ("permute", runs, runs)
        return ("permute", n, n)
    if op in ("transpose", "swapaxes", "swapdims") and len(expr.args) == 2 and not expr.keywords:
        i, j = _int(expr.args[0]), _int(expr.args[1])
        if i is None or j is None:
            return (op, rank_of(ctx, func.value, use), 2)
        if i == j:
            return None
        rmin = max(i + 1 if i >= 0 else -i, j + 1 if j >= 0 else -j, 2)
        return (op, rank_of(ctx, func.value, use), rmin)
    return (op, rank_of(ctx, func.value, use), 2)


def merges(reordered: tuple[str, int | None, int], view_call: ast.Call, untouched: int = 0) -> bool:
    """Does the view certainly merge dimensions of the reordered tensor (which fails)?

    A view into as many or more sizes may only split dimensions, which works; so we flag only a
    flatten (one size) or fewer sizes than the tensor evidently has. ``untouched``: how many
    leading dimensions the reordering left in place (``transpose(2, 3)``: 2); a view that merges
    only those (``view(-1, c, w)`` after it: one size for them, one for each dimension after) works.
    """
    m = arity(view_call)
    if m is None:
        return False
    _, rank, rmin = reordered
    if m == 1:
        return True
    r = rank if rank is not None else rmin
    if untouched >= 2 and m >= r - untouched + 1 and _leading_merge(view_call.args[0]):
        return False
    return m < r


def _leading_merge(first: ast.AST) -> bool:
    """The first size of a view that stands for several leading dimensions: ``-1`` or a product."""
    return _int(first) == -1 or (first.__class__ is ast.BinOp and first.op.__class__ is ast.Mult)


def untouched_dims(ctx: Context, expr: ast.AST, use: ast.AST, depth: int = 3) -> int:
    """How many leading dimensions a ``transpose(i, j)`` with literal, non-negative ``i`` and ``j``
    leaves where they were (``min(i, j)``); 0 for any other reordering."""
    while expr.__class__ is ast.Name and depth > 0:
        b = ctx.binding_at(expr.id, use)
        if b is None or b.kind != "assign":
            return 0
        expr, use, depth = b.value, b.node, depth - 1
    if expr.__class__ is not ast.Call or expr.func.__class__ is not ast.Attribute or len(expr.args) != 2 \
            or expr.func.attr not in ("transpose", "swapaxes", "swapdims"):
        return 0
    i, j = _int(expr.args[0]), _int(expr.args[1])
    return min(i, j) if i is not None and j is not None and i >= 0 and j >= 0 else 0


# element-wise methods whose result keeps the layout of the tensor they are called on
_LAYOUT_KEEPING = frozenset({"eq", "ne", "gt", "ge", "lt", "le", "float", "double", "half", "long", "int", "bool",
                             "byte", "detach", "clone", "abs", "neg", "sigmoid", "exp", "mul", "div", "add", "sub"})


def carried_reorder(ctx: Context, expr: ast.AST | None, use: ast.AST, depth: int = 6) -> tuple[str, int | None, int] | None:
    """The reordering behind ``expr`` when it reaches it only through element-wise methods and
    slices that keep its layout (``correct = pred.t().eq(target)``; ``correct[:k]``): the result
    is as non-contiguous as the transposed tensor itself."""
    steps = 0
    while expr is not None and depth > 0:
        depth -= 1
        cls = expr.__class__
        if cls is ast.Name:
            b = ctx.binding_at(expr.id, use)
            if b is None or b.kind != "assign":
                return None
            found = reorders(ctx, b.value, b.node)
            if found is not None:
                return found if steps else None
            expr, use = b.value, b.node
        elif cls is ast.Subscript and _keeps_rank(expr.slice):
            expr = expr.value
        elif cls is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in _LAYOUT_KEEPING \
                and ctx.qualname(expr.func) is None:
            expr = expr.func.value
        else:
            found = reorders(ctx, expr, use)
            return found if steps and found is not None else None
        steps += 1
    return None


def _keeps_rank(index: ast.AST) -> bool:
    """A subscript of slices only (``x[:k]``, ``x[1:, :]``), none of them a single row (``x[:1]``)."""
    parts = index.elts if index.__class__ is ast.Tuple else [index]
    for part in parts:
        if part.__class__ is not ast.Slice or part.step is not None:
            return False
        lo, hi = _int(part.lower) if part.lower is not None else 0, _int(part.upper)
        if lo is not None and hi is not None and hi - lo <= 1:
            return False
    return True


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
    per_call = True
    name = "view-after-transpose"
    triggers = ("view",)
    fixable = True
    doc = """\
What it flags
  `.view(...)` called on the direct result of `transpose`, `permute`, `.t()`, `swapaxes`,
  `movedim` or `.T`/`.mT` (also through a name: `y = x.permute(0, 2, 1)` then `y.view(...)`),
  without `.contiguous()` in between, when the view evidently merges dimensions: it flattens
  to one size, or passes fewer sizes than the tensor has (known from `permute`'s arguments,
  an earlier `view`/`reshape`, or the highest dimension `transpose` names). Also `.view(-1)` of
  a tensor that carries the transposed layout through element-wise methods and slices
  (`pred = pred.t(); correct = pred.eq(target); correct[:k].view(-1)`, the top-k accuracy
  helper: it fails for k > 1). A view that only splits dimensions works and is not flagged, nor
  one that merges only leading dimensions the transpose did not touch
  (`x.transpose(2, 3).view(-1, c, w)`), nor `view(dtype)`. Only files that import torch are
  checked.
  Linted with its project, code that nothing runs is left alone: a function or class
  nothing calls or names (not even a config, a shell script or a notebook), and a left-over module
  that no file imports, runs or names beside siblings the project does import.

Why it matters
  `view` never copies: it needs the memory layout to fit the new shape. Reordering
  dimensions only swaps strides, so the result is non-contiguous and merging its dimensions
  with `view` raises "view size is not compatible with input tensor's size and stride". The
  error appears only at run time, often only for some input shapes.

Example
  out = attn.permute(0, 2, 1, 3).view(batch, seq, dim)      # TW107

Fix
  `reshape` returns the same view whenever one exists and copies only when it must, so it is
  a drop-in replacement: `attn.permute(0, 2, 1, 3).reshape(batch, seq, dim)`.
  `torchwise lint --fix` makes that change.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        if not ctx.imports_module("torch"):
            return
        for call in ctx.calls_named("view"):
            func = call.func
            if func.__class__ is not ast.Attribute or not _shape_args(ctx, call):
                continue
            found = reorders(ctx, func.value, call)
            carried = found is None and arity(call) == 1
            if carried:
                found = carried_reorder(ctx, func.value, call)  # view(-1) of pred.t().eq(...)[:k]
            if found is None or not merges(found, call, 0 if carried else untouched_dims(ctx, func.value, call)):
                continue
            op = found[0] if found[0].startswith(".") else f".{found[0]}()"
            edit = ctx.replace_attr(func, "reshape")
            fix = Fix("use reshape instead of view", (edit,)) if edit is not None else None
            yield ctx.finding(
                self.code, call,
                f".view() after {op} fails on the non-contiguous result",
                suggestion="use .reshape(...) (or .contiguous().view(...))",
                fix=fix,
            )


RULE = ViewAfterTranspose()
