"""Hand-written gradient descent (TW110): a loop over a model's parameters that moves each one by
its gradient without an optimizer (``for name, p in model.named_parameters(): p.data -= lr *
p.grad``, also through a value derived from ``p.grad`` - an all-reduced mean - or ``p.data.add_(
-lr, p.grad)``). It reads ``.grad`` the way ``optimizer.step()`` does, so a training loop that
runs it after ``backward()`` must clear the gradients as well."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name

_MOVES = frozenset({"add_", "sub_", "addcdiv_", "addcmul_", "copy_"})


def manual_update(ctx: Context, nodes: list[AST]) -> ast.For | None:
    """The loop among ``nodes`` that updates parameters by hand from their gradients, or None."""
    for loop in nodes:
        if loop.__class__ is not ast.For or loop.iter.__class__ is not ast.Call:
            continue
        if last_name(loop.iter.func) not in ("parameters", "named_parameters"):
            continue
        target = loop.target
        if target.__class__ is ast.Tuple and target.elts:
            target = target.elts[-1]  # for name, p in model.named_parameters()
        if target.__class__ is not ast.Name:
            continue
        body = [n for stmt in loop.body for n in ast.walk(stmt)]
        if not any(n.__class__ is ast.Attribute and n.attr == "grad" for n in body):
            continue  # no gradient read: an EMA, a clamp, a re-initialisation
        if any(_moves(n, target.id) for n in body):
            return loop
    return None


def _moves(node: AST, name: str) -> bool:
    """``p -= ...``, ``p.data -= ...``, ``p.data.add_(...)``, ``p.sub_(...)``."""
    if node.__class__ is ast.AugAssign and node.op.__class__ in (ast.Sub, ast.Add):
        return _is_param(node.target, name)
    if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in _MOVES:
        return _is_param(node.func.value, name)
    return False


def _is_param(expr: AST, name: str) -> bool:
    if expr.__class__ is ast.Attribute and expr.attr == "data":
        expr = expr.value
    return expr.__class__ is ast.Name and expr.id == name


__all__ = ["manual_update"]
