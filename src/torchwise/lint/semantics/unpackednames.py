"""What a tuple unpack of a name unpacks (TW207): ``model_output = model(im)`` then ``output, z,
losses = model_output`` unpacks the model's outputs as ``output, z, losses = model(im)`` would.
The name must be bound once in the same function, to a call, before the unpack - a name rebound
in between, a loop variable or a parameter tells nothing about the call."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Binding, Context


def unpacked_value(ctx: Context, b: Binding) -> AST | None:
    """The value ``b`` (an ``unpack`` binding) unpacks: its own value, or the call a plain name
    it unpacks was bound to in the same function (``output, z, q = model_output``)."""
    value = b.value
    if value.__class__ is not ast.Name:
        return value
    bound = ctx.binding_at(value.id, value)
    if bound is None or bound.kind != "assign" or bound.value.__class__ is not ast.Call \
            or ctx.function_of(bound.node) is not ctx.function_of(b.node):
        return value
    return bound.value


__all__ = ["unpacked_value"]
