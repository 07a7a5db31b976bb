"""Loops over epochs that run a training step of their own (TW207): ``for ep in range(epochs):``
holding the batch loop ``for xx, yy in train_loader:`` that trains, and, outside it, a step of
another mode (``if training_type == "single": ... loss.backward(); optimizer.step()``) or the
epoch's log (``print(loss.item())``). The outer loop is the innermost loop around that step, but
what it runs outside the batch loop runs once per pass over the data set, not every step."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.steps import training_loops

_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "trange"})


def outside_batch_loop(ctx: Context, loop: AST, node: AST) -> bool:
    """Does ``loop`` hold a loop over a data loader that runs a training step, and ``node`` lie
    outside it? The loader must be bound outside ``loop`` (``train_loader`` made before the
    epochs, ``self.train_loader``, a parameter): one built inside each pass (a task's support set
    in meta-learning) makes the outer loop a loop of steps again."""
    key = ("sem:batch-loops", id(loop))
    inner = ctx._cache.get(key)
    if inner is None:  # (the loops that train are few: ask each whether it lies in this one)
        inner = ctx._cache[key] = [n for n in training_loops(ctx).values() if n is not loop and n.__class__ is ast.For
                                   and _over_loader(ctx, n, loop) and ctx.contains(loop, n)]
    return bool(inner) and not any(ctx.contains(n, node) for n in inner)


_LOADER = "loader"


def _over_loader(ctx: Context, inner: AST, outer: AST) -> bool:
    """``for x, y in train_loader:`` (also ``enumerate(...)``/``tqdm(...)`` of it, ``dataloaders[phase]``),
    the loader bound outside ``outer``."""
    it = getattr(inner, "iter", None)
    while it.__class__ is ast.Call and last_name(it.func) in _WRAPPERS and it.args:
        it = it.args[0]
    if it is None or _LOADER not in ctx.text(it).lower():
        return False
    base = it
    while base.__class__ in (ast.Attribute, ast.Subscript):
        base = base.value
    if base.__class__ is not ast.Name:
        return False
    if base.id in ("self", "cls"):
        return True
    b = ctx.binding_at(base.id, inner)
    end = outer.end_lineno or outer.lineno
    return b is not None and not (outer.lineno <= b.pos[0] <= end)
