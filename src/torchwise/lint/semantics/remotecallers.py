"""Calls of a method from the other modules of the project (for TW204): a model class's
``forward_emb(self, images, ...)`` or ``train_emb(...)`` that a training script calls on its
instance (``model.train_emb(images, captions)``) inside the loop over its loader. The method is
found by its name, when the project defines that name once (no other class or function could be
the one called); the callers' files are parsed once per process."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import caller_arguments


def method_calls(ctx: Context, func: AST, param: str) -> Iterator[tuple[Context, AST, ast.Call]]:
    """``(caller's context, argument, call)`` for the calls ``obj.<method>(...)`` (``obj`` not
    ``self``) in the other files of the project that pass ``param`` of the method ``func`` of
    this file, when ``func`` is the project's only definition of its name."""
    owner = ctx.parent(func)
    if owner.__class__ is not ast.ClassDef or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef) \
            or func.name.startswith("_") or not ctx.project.files:
        return
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if params[:1] != ["self"] or param not in params:
        return
    for other, value, call in caller_arguments(ctx, func, param, here=False, elsewhere="methods", shift="self"):
        if value is not None:
            yield other, value, call
