"""Running-value objects of the project that fold what they are handed into their own state (TW101):
``tl = Averager()`` once per epoch, then ``tl.add(loss)`` every step, where ``Averager`` is a class of
the project (of this file, or of the module it is imported from) whose ``add(self, x)`` keeps a running
mean or sum of ``x`` itself (``self.v = (self.v * self.n + x) / (self.n + 1)``, ``self.sum += val * n``,
``self.values.append(x)``). Handed a loss tensor, the object holds a value whose graph links every
step's graph.

The method must use its parameter only in arithmetic: one that converts it (``float(x)``,
``x.item()``, ``x.detach()``, ``isinstance(x, torch.Tensor)`` before a conversion) or rebinds it is
left alone, and so is one that only stores the latest value (``self.val = val``: one graph, no pile)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.metricobjects import metric_method

_ARITH = (ast.BinOp, ast.UnaryOp)


def _self_attr(node: ast.AST) -> str | None:
    if node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.value.id == "self":
        return node.attr
    return None


def _arithmetic_of(expr: ast.AST, name: str) -> bool:
    """``name`` occurs in ``expr`` only through arithmetic (``(self.v * self.n + x) / (self.n + 1)``)."""
    if expr.__class__ is ast.Name:
        return expr.id == name
    if expr.__class__ is ast.BinOp:
        return _arithmetic_of(expr.left, name) or _arithmetic_of(expr.right, name)
    if expr.__class__ is ast.UnaryOp:
        return _arithmetic_of(expr.operand, name)
    return False


def folds_argument(method: ast.FunctionDef) -> bool:
    """Does ``method(self, x, ...)`` fold ``x`` itself into a running value of the object?"""
    params = [a.arg for a in method.args.args]
    if len(params) < 2 or params[0] != "self":
        return False
    x = params[1]
    folds = False
    for node in ast.walk(method):
        cls = node.__class__
        if cls is ast.Name and node.id == x and node.ctx.__class__ is not ast.Load:
            return False  # rebound (``x = x.item()``): what is kept is not what was handed
        if cls is ast.Attribute and node.value.__class__ is ast.Name and node.value.id == x:
            return False  # ``x.item()``, ``x.detach()``, ``x.data``: converted somewhere
        if cls is ast.Call:
            if any(a.__class__ is ast.Name and a.id == x for a in node.args) and not (
                    node.func.__class__ is ast.Attribute and node.func.attr == "append" and _self_attr(node.func.value)):
                return False  # ``float(x)``, ``isinstance(x, torch.Tensor)``, ``np.mean(x)``
            if node.func.__class__ is ast.Attribute and node.func.attr == "append" and _self_attr(node.func.value) \
                    and len(node.args) == 1 and node.args[0].__class__ is ast.Name and node.args[0].id == x:
                folds = True  # self.values.append(x)
        elif cls is ast.AugAssign and _self_attr(node.target) and node.op.__class__ is ast.Add \
                and _arithmetic_of(node.value, x):
            folds = True  # self.sum += val * n
        elif cls is ast.Assign and len(node.targets) == 1 and (attr := _self_attr(node.targets[0])) \
                and node.value.__class__ in _ARITH and _arithmetic_of(node.value, x) \
                and any(_self_attr(n) == attr for n in ast.walk(node.value)):
            folds = True  # self.v = (self.v * self.n + x) / (self.n + 1)
    return folds


def folding_call(ctx: Context, call: ast.Call) -> str | None:
    """``obj.method`` when ``call`` hands its first argument to a method of a project object that
    folds it into its own running value (module doc); None otherwise."""
    found = metric_method(ctx, call)
    if found is None or not folds_argument(found[1]):
        return None
    return ctx.text(call.func)


__all__ = ["folding_call", "folds_argument"]
