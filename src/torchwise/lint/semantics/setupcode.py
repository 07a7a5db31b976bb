"""Code that evidently runs once, by strong evidence only (TW206): module level outside loops, a
function named for set-up (``__init__``, ``create_mlp``, ``build_*``...) with its own loops over
layers or files, the code around the training loop of a function that runs it, and a helper
every caller of which is one of these (a noise schedule ``get_sigmas(config)`` that ``__init__``
and a runner's ``train()`` call before their loops). Unlike :func:`~torchwise.lint.semantics.once.runs_once`,
the code before or after some loop of a function (a dataset's ``get(idx)``) is not taken as set-up."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.deadcode import dead_code
from torchwise.lint.semantics.once import ONCE_NAMES, ONCE_PREFIXES, outside_its_steps, runs_once
from torchwise.lint.semantics.steps import hot_loops
from torchwise.lint.semantics.values import local_function


def set_up_function(ctx: Context, node: AST) -> bool:
    """``node`` is in a function named for set-up (``__init__``, ``create_*``, ``build_*``,
    ``load_*``...; not ``main``, which holds the training loop) that runs once (:func:`runs_once`
    of its own body), also inside its own loops (over layers, over files: once per call of it)."""
    func = ctx.function_of(node)
    if func is None or func.__class__ is ast.Lambda or not (func.name in ONCE_NAMES and func.name not in ("main", "_main")
                                                            or func.name.startswith(ONCE_PREFIXES)):
        return False
    hot = hot_loops(ctx)
    return not any(id(loop) in hot for loop in ctx.enclosing_loops(node)) and runs_once(ctx, func.body[0])


def set_up_only(ctx: Context, node: AST, depth: int = 1) -> bool:
    """``node`` runs once by strong evidence (see the module doc)."""
    if ctx.enclosing_loops(node):
        return set_up_function(ctx, node)
    func = ctx.function_of(node)
    if func is None:
        return True  # module level, outside loops
    if func.__class__ is ast.Lambda:
        return False
    if set_up_function(ctx, node) or outside_its_steps(ctx, func, node):
        return True
    if depth <= 0 or ctx.parent(func).__class__ is ast.ClassDef and func.name != "__init__":
        return False
    sites = [(ctx, c) for c in ctx.calls_named(func.name) if local_function(ctx, c) is func and not dead_code(ctx, c)]
    if ctx.parent(func) is ctx.tree and ctx.project.files:
        sites += list(project_calls(ctx, func.name))
    return bool(sites) and all(where.function_of(c) is not func and set_up_only(where, c, depth - 1) for where, c in sites)
