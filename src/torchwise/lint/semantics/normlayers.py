"""BatchNorm layers as lint sees them: ``nn.BatchNorm2d(...)``, the file's own subclass of one,
or a ``self.`` attribute that the building method assigns a BatchNorm."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.projectlayers import project_class

BN_DIMS = {"torch.nn.BatchNorm1d": 1, "torch.nn.BatchNorm2d": 2, "torch.nn.BatchNorm3d": 3, "torch.nn.SyncBatchNorm": 0}


def bn_dims(ctx: Context, call: ast.AST) -> int | None:
    """Dimensionality of a BatchNorm call - ``nn.BatchNorm2d(...)`` or the project's own subclass of
    one (``class _BatchNorm2d(nn.BatchNorm2d)`` with other defaults, in this file or imported from
    another module: ``layers.BatchNorm2d(c)``) - else None."""
    if call.__class__ is not ast.Call:
        return None
    dims = BN_DIMS.get(ctx.qualname(call.func) or "")
    if dims is None and call.func.__class__ in (ast.Name, ast.Attribute):
        found = project_class(ctx, call.func)  # also `layers.BatchNorm2d(c)` of another module of the project
        return _bn_subclass_dims(*found, 3, found[1].name) if found is not None else None
    return dims


def _bn_subclass_dims(ctx: Context, klass: ast.ClassDef, depth: int, name: str = "") -> int | None:
    """A class of this file deriving from a BatchNorm (directly or through another such class)
    that keeps BatchNorm's ``forward``, or whose own ``forward`` still normalises with
    ``F.batch_norm(...)`` (a fast-weight variant for meta-learning); any other ``forward`` may
    compute anything."""
    forward = next((i for i in klass.body if i.__class__ is ast.FunctionDef and i.name == "forward"), None)
    if depth == 0 or forward is not None and not any(
            n.__class__ is ast.Call and ctx.qualname(n.func) == "torch.nn.functional.batch_norm" for n in ast.walk(forward)):
        return None
    for base in klass.bases:
        q = ctx.qualname(base) or ""
        dims = BN_DIMS.get(q)
        if dims is None and q in ("torch.nn._BatchNorm", "torch.nn.modules.batchnorm._BatchNorm"):
            tail = (name or klass.name)[-2:]
            dims = int(tail[0]) if tail in ("1d", "2d", "3d") else 0
        if dims is None and base.__class__ is ast.Name and base.id in ctx.local_classes and base.id != klass.name:
            dims = _bn_subclass_dims(ctx, ctx.local_classes[base.id], depth - 1, name or klass.name)
        if dims is not None:
            return dims
    return None


def held_bn_dims(ctx: Context, expr: ast.AST) -> int | None:
    """``self.norm3`` as a layer of an ``nn.Sequential`` built in a method that assigns it a
    BatchNorm (in any branch: ``if norm_fn == 'batch': self.norm3 = nn.BatchNorm2d(planes)``)."""
    if expr.__class__ is not ast.Attribute or expr.value.__class__ is not ast.Name or expr.value.id != "self":
        return None
    func = ctx.parent(expr)
    while func is not None and func.__class__ is not ast.FunctionDef:
        func = ctx.parent(func)
    if func is None:
        return None
    for node in ctx.walk_body(func.body):
        if node.__class__ is ast.Assign and len(node.targets) == 1:
            t = node.targets[0]
            if t.__class__ is ast.Attribute and t.attr == expr.attr and t.value.__class__ is ast.Name and t.value.id == "self":
                dims = bn_dims(ctx, node.value)
                if dims is not None:
                    return dims
    return None


def optional_bn(ctx: Context, expr: ast.IfExp, params: ast.arguments | None) -> int | None:
    """``nn.BatchNorm2d(c) if use_bn else nn.Sequential()`` in an ``nn.Sequential``: the BatchNorm's
    dimensionality when the flag may be on (not a parameter whose default is off)."""
    b = next((bn_dims(ctx, e) for e in (expr.body, expr.orelse) if e.__class__ is ast.Call and bn_dims(ctx, e) is not None), None)
    test = expr.test
    if b is None or test.__class__ is not ast.Name or params is None:
        return b
    positional = [*params.posonlyargs, *params.args]
    default = dict(zip([a.arg for a in positional][::-1], params.defaults[::-1])).get(test.id)
    return None if default is not None and default.__class__ is ast.Constant and not default.value else b
