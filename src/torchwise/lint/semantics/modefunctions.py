"""The inference mode of a training script (TW402).

A training script often carries its own generate or evaluation mode: ``def generate():`` restores
the generator from ``--pretrain`` and samples under ``no_grad``, and ``main`` dispatches on a flag,
``if FLAGS.generate: generate() else: train()``. That function is an inference program (R2): it is
run on other machines and GPU counts than the training that wrote the checkpoint, whatever its
name. Recognised by the dispatch, not the name: a module-level function that trains nothing,
puts a model in eval mode or turns gradients off, and is called only on one side of an ``if`` on a
flag whose other side calls a function of the same file that trains (a backward pass or an
optimizer step)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name
from torchwise.lint.semantics.steps import training_calls


def _trainers(ctx: Context) -> set[str]:
    """Names of the file's module-level functions that run a training step themselves."""
    found = ctx._cache.get("modefunctions:trainers")
    if found is None:
        found = set()
        for call in training_calls(ctx):
            func = ctx.function_of(call)
            while func is not None and ctx.parent(func) is not ctx.tree:
                func = ctx.function_of(func)
            if func is not None and func.__class__ is not ast.Lambda:
                found.add(func.name)
        ctx._cache["modefunctions:trainers"] = found
    return found


def _calls(ctx: Context, body: list[ast.stmt]) -> set[str]:
    return {last_name(n.func) or "" for n in ctx.walk_body(body) if n.__class__ is ast.Call}


def inference_mode_function(ctx: Context, load: ast.Call) -> bool:
    """The load is in such an inference mode of a training script."""
    func = ctx.function_of(load)
    if func is None or func.__class__ is ast.Lambda or ctx.parent(func) is not ctx.tree:
        return False
    trainers = _trainers(ctx)
    if not trainers or func.name in trainers:
        return False
    text = ctx.text(func)
    if ".eval()" not in text and "no_grad" not in text and "inference_mode" not in text:
        return False
    calls = [c for c in ctx.calls_named(func.name) if c.func.__class__ is ast.Name]
    if not calls:
        return False
    for call in calls:
        branch = next(((node, in_body) for node, in_body in ctx.enclosing_ifs(call)), None)
        if branch is None:
            return False
        node, in_body = branch
        if node.__class__ is not ast.If:
            return False
        if not any(n.__class__ in (ast.Name, ast.Attribute) for n in ast.walk(node.test)):
            return False
        other = node.orelse if in_body else node.body
        if not other or not _calls(ctx, other) & trainers or _calls(ctx, node.body if in_body else node.orelse) & trainers:
            return False  # the other side does not train, or this side trains too
    return True
