"""Gradient-accumulation loops inside a step function: ``for _ in range(config["num_accumulations"]):
loss.backward()`` before the function's one optimizer step. Such a function still runs one
training step per call (a GAN's ``train(x, y)`` closure accumulating D's and G's gradients over
chunks of the batch it is handed); a loop over the data set (``range(len(loader))``,
``range(n_batches)``) before a single step is an epoch of full-batch training instead."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, LOOP_TYPES, Context, last_name

_DATA_WORDS = ("len(", "batch", "loader", "data", "sample", "epoch", "iter")


def accumulation_loops_only(ctx: Context, node: AST, func: AST) -> bool:
    """Are the loops between ``func`` and ``node`` all ``for ... in range(n)`` over a count that
    is not the data's (a number of accumulations or critic steps, not ``len(loader)``)?"""
    for anc in ctx.ancestors(node):
        if anc is func:
            return True
        if anc.__class__ in LOOP_TYPES:
            it = getattr(anc, "iter", None)
            if it is None or it.__class__ is not ast.Call or last_name(it.func) != "range" or not it.args:
                return False
            bound = ctx.text(it.args[-1] if len(it.args) < 3 else it.args[1]).lower()
            if any(word in bound for word in _DATA_WORDS):
                return False
    return False
