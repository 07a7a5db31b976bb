"""Tensors the step's loss is computed from (TW207): a name that is an operand of the expression of
a loss the same function runs the backward pass of (``actor_loss = (alpha * log_prob -
actor_q).mean()`` ... ``actor_loss.backward()``) lives on the loss's device, however the
function got it (``action, log_prob, _ = self.actor.sample(obs)``; ``self.alpha``, a property). Only tensors read with a
tensor method count (``-log_prob.mean().item()``): a Python number can be an operand too."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.devices import SYNC_METHODS
from torchwise.lint.semantics.stepvalues import step_loss_terms

# tensor methods that keep the value (and its device) on the way to the read
_KEEPING = frozenset({"mean", "sum", "detach", "float", "double", "clone", "view", "reshape", "squeeze", "abs",
                      "max", "min", "norm", "flatten", "contiguous", "data"})


def loss_operand(ctx: Context, read: AST) -> bool:
    """Is ``read`` (``x.item()``, ``x.mean().cpu()``) of a tensor the function's backwarded loss is
    computed from, in the loss's own expression (not summed into it: those are loss terms already)?"""
    if read.__class__ is not ast.Call or read.func.__class__ is not ast.Attribute or read.func.attr not in SYNC_METHODS:
        return False
    base = read.func.value
    while True:
        if base.__class__ is ast.Call and base.func.__class__ is ast.Attribute and base.func.attr in _KEEPING and not base.args:
            base = base.func.value
        elif base.__class__ is ast.Attribute and base.attr == "data":
            base = base.value
        else:
            break
    name = _operand_name(base)
    if name is None or name not in (operands := _operands(ctx, ctx.scope_of(read))):
        return False
    if base.__class__ is not ast.Name:
        return True  # self.alpha: an attribute or property of the object
    b = ctx.binding_at(base.id, read)  # the same binding the loss used (not a CPU label moved after its read)
    return b is not None and id(b.node) in operands[name]


def _operand_name(node: AST) -> str | None:
    """``log_prob`` -> "log_prob"; ``self.alpha`` -> "self.alpha" (an attribute or property of the object)."""
    if node.__class__ is ast.Name:
        return node.id
    if node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.value.id == "self":
        return f"self.{node.attr}"
    return None


def _operands(ctx: Context, scope: AST) -> dict[str, set[int]]:
    """Names in the expressions bound to the scope's backwarded loss terms -> the statements that
    bound what the loss used (once per scope)."""
    key = ("sem:loss-operands", id(scope))
    found = ctx._cache.get(key)
    if found is None:
        terms = step_loss_terms(ctx, scope)
        found = ctx._cache[key] = {}
        bindings = ctx.bindings(scope) if terms else {}
        for term in terms:
            for b in bindings.get(term, ()):
                if b.kind not in ("assign", "aug") or b.value.__class__ not in (ast.Call, ast.BinOp, ast.UnaryOp):
                    continue
                for node in ast.walk(b.value):
                    name = _operand_name(node)
                    if name is None or name in terms:
                        continue
                    used = ctx.binding_at(node.id, node) if node.__class__ is ast.Name else None
                    found.setdefault(name, set()).add(id(used.node) if used is not None else 0)
    return found


__all__ = ["loss_operand"]
