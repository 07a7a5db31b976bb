"""Who calls an evaluation function, as TW104 reads it in one file: a function handed on as a value
(passed to an evaluator, returned) rather than called, and one this file calls only under no_grad."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.evalcallers import bare_live_call


def handed_over(ctx: Context, func: ast.AST) -> bool:
    """Never called in this file, but handed on as a value: passed as an argument
    (``inference_on_dataset(eval_fn, ...)``) or returned (``return eval_wrapper``)."""
    if ctx.calls_named(func.name):
        return False
    for name in ctx.nodes.get(ast.Name, ()):
        if name.id == func.name and name.ctx.__class__ is ast.Load:
            parent = ctx.parent(name)
            if _worker_target(ctx, name, parent):
                continue  # a process or thread runs it with autograd on: grad mode is per thread, on at its start
            if parent.__class__ is ast.Return or (parent.__class__ is ast.Call and name is not parent.func) or (
                parent.__class__ is ast.keyword
            ):
                return True
    return False


_POOL_METHODS = frozenset({"map", "imap", "imap_unordered", "starmap", "map_async", "starmap_async", "apply_async", "submit"})
_WORKERS = frozenset({"multiprocessing.Process", "threading.Thread", "torch.multiprocessing.Process"})


def _worker_target(ctx: Context, name: ast.Name, parent: ast.AST) -> bool:
    """``pool.map(extract_on_paths, chunks)``, ``executor.submit(f, x)``, ``mp.Process(target=f)``: the
    function runs in a worker process or a new thread, where autograd starts on whatever the caller set."""
    if parent.__class__ is ast.Call and parent.args and parent.args[0] is name and parent.func.__class__ is ast.Attribute:
        return parent.func.attr in _POOL_METHODS and parent.func.value.__class__ in (ast.Name, ast.Attribute) \
            and any(w in ctx.text(parent.func.value).lower() for w in ("pool", "executor", "mp", "workers"))
    if parent.__class__ is ast.keyword and parent.arg == "target":
        call = ctx.parent(parent)
        return call.__class__ is ast.Call and (ctx.qualname(call.func) or "") in _WORKERS
    return False


def only_called_without_grad(ctx: Context, func: ast.AST) -> bool:
    """This file calls ``func`` under no_grad, and nowhere bare on a path that runs (``if
    args.evaluate: validate(...)`` beside ``with torch.no_grad(): validate(...)`` runs it bare)."""
    calls = ctx.calls_named(func.name)
    if not any(under_no_grad(ctx, c) for c in calls):
        return False
    return not any(bare_live_call(ctx, func, c) for c in calls if not under_no_grad(ctx, c))
