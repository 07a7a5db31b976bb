"""Loops that repeat a training step on one batch (TW207): ``for x, y in loader:`` around ``for _
in range(args.minibatch_replays): ... opt.step()`` (free adversarial training, several updates
per batch): the innermost loop around the step is the repeat loop, but the loop over the data
runs steps on every pass too, so what it reads once per batch it reads every few steps."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, last_name


def replays_batch(inner: AST, outer: AST) -> bool:
    """``for x, y in loader: for _ in range(replays): ... opt.step()``: the inner loop repeats the
    step on the outer loop's batch (its variable unused), so every pass of the outer loop over the
    data trains too - not an epoch loop (``for epoch in range(n)``) around a loop of steps."""
    if inner.__class__ is not ast.For or outer.__class__ is not ast.For or inner.iter.__class__ is not ast.Call \
            or last_name(inner.iter.func) != "range" or inner.target.__class__ is not ast.Name:
        return False
    var = inner.target.id
    if any(n.__class__ is ast.Name and n.id == var for stmt in inner.body for n in ast.walk(stmt)):
        return False
    it = outer.iter
    while it.__class__ is ast.Call and last_name(it.func) in ("enumerate", "tqdm", "iter", "zip") and it.args:
        it = it.args[0]
    return it.__class__ in (ast.Name, ast.Attribute, ast.Subscript)
