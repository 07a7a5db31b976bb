"""Tensors a model's method builds on the host from a host copy of its inputs and moves back to
the device (TW207): ABSA-style position weights, ``idx = aspect_idx.cpu().numpy()`` ... Python
loops ... ``torch.tensor(weight).to(self.opt.device)`` in a method the ``forward`` calls (or
``self.weight_matrix(pos, n).to(self.opt.device)`` at its call). Moving the result to the
device says the inputs live there: the ``.cpu()`` of a tensor handed in then waits for the GPU
every forward pass, however the method got it (build the weights on the device instead)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.devices import device_move_target

_BUILDERS = frozenset({"tensor", "from_numpy", "as_tensor", "Tensor", "FloatTensor", "LongTensor", "ByteTensor", "BoolTensor"})


def moves_host_build(ctx: Context, func: AST) -> bool:
    """Does ``func`` (a method) move a tensor it built from host data to the device, or does a
    method of its class move what ``func`` hands back (``self.weight_matrix(...).to(dev)``)?"""
    key = ("sem:moves-host-build", id(func))
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = _called_by_its_class(ctx, func) and (
            any(_moves(ctx, node, func) for node in ctx.walk_body(func.body)) or _moved_by_caller(ctx, func))
    return found


def _called_by_its_class(ctx: Context, func: AST) -> bool:
    """``forward`` itself, or a method another method of its class calls on ``self`` (not one only a
    comment names, nor a namesake of another class)."""
    klass = ctx.parent(func)
    return func.name == "forward" or any(
        c.func.__class__ is ast.Attribute and c.func.value.__class__ is ast.Name and c.func.value.id == "self"
        and (f := ctx.function_of(c)) is not None and f is not func and ctx.parent(f) is klass for c in ctx.calls_named(func.name))


def moved_in_function(ctx: Context, name: str, func: AST) -> bool:
    """``labels.cuda()`` / ``labels.to(device)`` in ``func``: the tensor comes from the host (its copy is no read)."""
    return any((r := _to_device(ctx, n)) is not None and r.__class__ is ast.Name and r.id == name for n in ctx.walk_body(func.body))


def _to_device(ctx: Context, node: AST) -> AST | None:
    """The receiver of ``x.cuda()`` / ``x.to(<a device>)`` (not a dtype change): :func:`devices.device_move_target`."""
    if node.__class__ is not ast.Call or node.func.__class__ is not ast.Attribute:
        return None
    return node.func.value if device_move_target(ctx, node) is not None else None


def _built(ctx: Context, expr: AST, func: AST, depth: int = 2) -> bool:
    """``torch.tensor(w).unsqueeze(2)``, or a name of ``func`` bound to such a build."""
    while expr.__class__ in (ast.Call, ast.Attribute):
        if expr.__class__ is ast.Call:
            if last_name(expr.func) in _BUILDERS and (ctx.qualname(expr.func) or "").startswith("torch."):
                return True
            expr = expr.func
        else:
            expr = expr.value
    if expr.__class__ is ast.Name and depth > 0:
        b = ctx.binding_at(expr.id, expr)
        return b is not None and b.kind == "assign" and b.value is not None and ctx.function_of(b.node) is func \
            and _built(ctx, b.value, func, depth - 1)
    return False


def _moves(ctx: Context, node: AST, func: AST) -> bool:
    receiver = _to_device(ctx, node)
    return receiver is not None and _built(ctx, receiver, func)


def _moved_by_caller(ctx: Context, func: AST) -> bool:
    """``self.<func>(...).to(self.opt.device)`` in a method of the same class, and ``func`` hands back a build."""
    klass = ctx.parent(func)
    if klass.__class__ is not ast.ClassDef:
        return False
    returns_build = any(n.__class__ is ast.Return and n.value is not None and _built(ctx, n.value, func)
                        for n in ctx.walk_body(func.body))
    return returns_build and any(
        (r := _to_device(ctx, ctx.parent(ctx.parent(c)))) is c and c.func.__class__ is ast.Attribute
        and c.func.value.__class__ is ast.Name and c.func.value.id == "self" and ctx.parent(ctx.function_of(c)) is klass
        for c in ctx.calls_named(func.name))
