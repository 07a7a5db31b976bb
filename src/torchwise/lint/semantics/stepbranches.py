"""Branches that exclude the training step (TW207): ``if phase != "inference": ... loss.backward();
optimizer.step()`` ``else: out["preds"] = [make_output(r) for r in net(x)]`` in a function (or
a loop) that serves training, validation and inference alike. What the other branch runs never
runs on a training step: its reads are the inference's or the evaluation's (ruling R1). Not a
branch of a modulo test (``if i % accum == 0: optimizer.step()`` ``else: ...``), whose other branch
runs between the steps of the same training."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.steps import training_calls


def opposite_to_step(ctx: Context, node: AST, region: AST) -> bool:
    """Does ``node`` lie in a branch of an ``if`` within ``region`` whose other branch runs the
    training step (a backward pass or an optimizer step) while its own runs none?"""
    for if_node, in_body in ctx.enclosing_ifs(node):
        if if_node.__class__ is not ast.If or not if_node.orelse or if_node.lineno < region.lineno:
            continue
        mine, other = (if_node.body, if_node.orelse) if in_body else (if_node.orelse, if_node.body)
        if _trains(ctx, other) and not _trains(ctx, mine) and not _modulo(if_node.test):
            return True
    return False


def _trains(ctx: Context, body: list[ast.stmt]) -> bool:
    first, last = body[0].lineno, body[-1].end_lineno or body[-1].lineno
    return any(first <= call.lineno <= last for call in training_calls(ctx))


def _modulo(test: AST) -> bool:
    return any(n.__class__ is ast.BinOp and n.op.__class__ is ast.Mod for n in ast.walk(test))
