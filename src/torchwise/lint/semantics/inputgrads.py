"""Gradients a loop computes to read them, not to train (TW207, ruling R1): a file with no
optimizer step and no hand-written parameter update (``p.data -= lr * p.grad``) whose loop runs a
backward pass and reads a ``.grad`` on the host (``grad = adj.grad.data.numpy()`` then
``np.argsort(grad)`` to choose the edges of an adversarial attack; a saliency map). The gradient
is the loop's result, not a training step's by-product."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

_UPDATES = ("sub_", "add_", "addcdiv_", "addcmul_", "copy_")


def reads_input_gradient(ctx: Context, read: AST) -> bool:
    """Is ``read`` (``x.grad.data.numpy()``, ``x.grad.cpu()``) of a ``.grad``, in a file that never
    steps an optimizer nor updates a tensor from a gradient by hand?"""
    if read.__class__ is not ast.Call or read.func.__class__ is not ast.Attribute:
        return False
    if not any(n.__class__ is ast.Attribute and n.attr == "grad" for n in ast.walk(read.func.value)):
        return False
    return not trains_by_gradient(ctx)


def trains_by_gradient(ctx: Context) -> bool:
    """The file steps an optimizer (``.step(``) or updates a tensor from a gradient by hand (once per file)."""
    found = ctx._cache.get("sem:trains-by-hand")
    if found is None:
        src = ctx.source
        found = ".step(" in src
        if not found and ".grad" in src:
            for node in ctx.nodes.get(ast.AugAssign, ()):
                if ".grad" in ctx.text(node.value) or "grad" in ctx.text(node.target):
                    found = True
                    break
            for call in ctx.calls_named(*_UPDATES) if not found else ():
                if any(".grad" in ctx.text(a) for a in [*call.args, *(k.value for k in call.keywords)]):
                    found = True
                    break
        ctx._cache["sem:trains-by-hand"] = found
    return found


__all__ = ["reads_input_gradient", "trains_by_gradient"]
