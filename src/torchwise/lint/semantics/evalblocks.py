"""Evaluation inside a training loop, and code of a training function outside its loop (TW207).

A training loop that evaluates on every pass does so in a block such as ``with torch.no_grad():
model.eval(); val_acc = accuracy(pred[val_mask], ...)`` (a linear probe choosing its best epoch):
host reads in that block belong to the evaluation (not the training step), and reads after it in
the same pass wait for a GPU the evaluation has already drained. A function that trains in a loop
of its own runs what comes before or after that loop once per call, not every step."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.devices import SYNC_METHODS
from torchwise.lint.semantics.hostreads import host_reader
from torchwise.lint.semantics.steps import hot_loops, hot_region_of

_NO_GRAD = frozenset({"no_grad", "inference_mode"})


def _evaluation_block(ctx: Context, node: AST) -> bool:
    """``with torch.no_grad():`` (or ``inference_mode()``, ``set_grad_enabled(False)``) whose body
    puts a model in evaluation mode (``model.eval()``)."""
    if node.__class__ is not ast.With:
        return False
    key = ("sem:eval-block", id(node))
    found = ctx._cache.get(key)
    if found is None:
        found = any(_no_grad(item.context_expr) for item in node.items) and any(
            n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr == "eval" and not n.args
            for n in ctx.walk_body(node.body))
        ctx._cache[key] = found
    return found


def _no_grad(expr: AST) -> bool:
    if expr.__class__ is not ast.Call:
        return False
    name = last_name(expr.func)
    if name in _NO_GRAD:
        return True
    return name == "set_grad_enabled" and bool(expr.args) and expr.args[0].__class__ is ast.Constant and expr.args[0].value is False


def in_evaluation_block(ctx: Context, node: AST) -> bool:
    """Is ``node`` inside such an evaluation block of its function?"""
    return any(_evaluation_block(ctx, anc) for anc in _ancestors_in_function(ctx, node))


def after_evaluation(ctx: Context, loop: AST, node: AST) -> bool:
    """Does the loop body evaluate, outside any condition, before ``node``'s statement, and read a
    value on the host there (``.item()``, a helper that reads what it is given)? Then the GPU is
    drained already when ``node`` reads."""
    key = ("sem:evaluates-at", id(loop))
    first = ctx._cache.get(key, -1)
    if first == -1:  # the end line of the first evaluation that reads, in the loop body (asked once per loop)
        first = ctx._cache[key] = next((stmt.end_lineno or stmt.lineno for stmt in getattr(loop, "body", ())
                                        if _evaluation_block(ctx, stmt) and _reads_on_host(ctx, stmt)), None)
    return first is not None and getattr(node, "lineno", 0) > first


def _reads_on_host(ctx: Context, block: AST) -> bool:
    for n in ctx.walk_body(block.body):
        if n.__class__ is ast.Call and (
                n.func.__class__ is ast.Attribute and n.func.attr in SYNC_METHODS or host_reader(ctx, n) is not None):
            return True
    return False


def off_training_path(ctx: Context, node: AST, func: AST) -> bool:
    """A post-processing module's ``forward`` (``PostProcessPanoptic``: detections turned into
    results for the evaluation), or code before or after the own loop of a function that trains
    in a loop (a linear probe's final test): not run every training step."""
    klass = ctx.parent(func)
    if klass.__class__ is ast.ClassDef and klass.name.lower().startswith(("postprocess", "post_process")):
        return True
    return outside_its_training_loop(ctx, node, func)


def outside_its_training_loop(ctx: Context, node: AST, func: AST) -> bool:
    """``func`` trains in a loop of its own (a linear probe fitted for the evaluation) and
    ``node`` lies outside that loop, and no training step calls ``func``: it runs once per call."""
    loops = [loop for loop in hot_loops(ctx).values() if ctx.function_of(loop) is func]
    if not loops or any(loop in ctx.enclosing_loops(node) for loop in loops):
        return False
    top = ctx.parent(func) is ctx.tree  # a function of the module: called by its name (model.train(True) is no call of it)
    if any(hot_region_of(ctx, call) is not None for call in ctx.calls_named(func.name)
           if not top or call.func.__class__ is ast.Name):
        return False
    if top:
        return not any(hot_region_of(other, call) is not None for other, call in project_calls(ctx, func.name))
    return True


def _ancestors_in_function(ctx: Context, node: AST):
    for anc in ctx.ancestors(node):
        if anc.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef):
            return
        yield anc
