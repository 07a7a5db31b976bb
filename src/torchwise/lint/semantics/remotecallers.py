"""Calls of a method from the other modules of the project (for TW204): a model class's
``forward_emb(self, images, ...)`` or ``train_emb(...)`` that a training script calls on its
instance (``model.train_emb(images, captions)``) inside the loop over its loader. The method is
found by its name, when the project defines that name once (no other class or function could be
the one called); the callers' files are parsed once per process."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchwise.lint.engine import AST, Context, argument
from torchwise.lint.semantics.callers import MAX_CALLER_FILES, parsed_file


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
    index = params.index(param) - 1
    for other, call in _calls(ctx, func.name):
        value = argument(call, param, index)
        if value is not None:
            yield other, value, call


def _calls(ctx: Context, name: str) -> list[tuple[Context, ast.Call]]:
    key = ("methodcalls", ctx.path, name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = []
        define = re.compile(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}\(", re.M)
        defined = sum(len(define.findall(t)) for _, t in ctx.project.files)
        files = [(p, t) for p, t in ctx.project.files if p != ctx.path and f".{name}(" in t]
        if defined == 1 and len(files) <= MAX_CALLER_FILES:
            for path, text in files:
                other = parsed_file(ctx.project, path, text)
                if other is None:
                    continue
                found += [(other, c) for c in other.calls_named(name) if c.func.__class__ is ast.Attribute
                          and not (c.func.value.__class__ is ast.Name and c.func.value.id in ("self", "cls"))]
        ctx.project.answers[key] = found
    return found
