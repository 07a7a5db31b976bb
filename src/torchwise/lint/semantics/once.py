"""Code that runs once - set-up (module level outside loops, ``__init__``/``setup``/``main``-like
functions, helpers only set-up or an evaluation calls, recovery paths) - and the functions that
run for every batch or step instead."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, DEF_TYPES, Context, last_name
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.steps import is_eval_name, training_calls
from torchwise.lint.semantics.values import local_function

# functions that run once per program or per object: set-up
_ONCE_NAMES = frozenset({"__init__", "__post_init__", "__new__", "main", "_main", "reset_parameters", "_reset_parameters",
                         "init_weights", "_init_weights", "reset", "setup", "_setup", "build", "_build"})
_ONCE_PREFIXES = ("setup_", "_setup_", "build_", "_build_", "init_", "_init_", "initialize", "create_", "configure_",
                  "prepare_", "make_", "load_", "register_")
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def is_per_call_function(ctx: Context, func: AST) -> bool:
    """A function that runs for every batch or step: ``forward``/``__call__`` (also
    ``forward_features``...), ``*_step``, a method of an ``nn.Module`` class (part of the
    model's computation: ``generate``, ``encode``...), or one that runs a training step itself."""
    if func.__class__ is ast.Lambda:
        return True
    if _named_per_call(func.name):
        return True
    klass = ctx.parent(func)
    if klass.__class__ is ast.ClassDef and any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)):
        return True
    return any(ctx.scope_of(c) is func for c in training_calls(ctx))


def runs_once(ctx: Context, node: AST, depth: int = 2) -> bool:
    """Does ``node`` evidently run once (set-up), not every step? Yes at module level outside
    loops, in ``__init__``/``setup``/``build``/``main``-like functions (``__init__`` of a plain
    helper class built in a forward pass excepted), before or after the loop of a function that
    loops (unless a forward pass calls it: :func:`called_per_call`), in a helper every caller of which (in this file) runs once or evaluates (an
    evaluator's method), and on a NaN recovery path; no inside a loop or comprehension, in
    per-call functions (:func:`is_per_call_function`) and in other functions (helpers may be
    called per step)."""
    if ctx.enclosing_loops(node):
        return False
    for anc in ctx.ancestors(node):
        if anc.__class__ in _COMPREHENSIONS:
            return False
        if isinstance(anc, DEF_TYPES):
            break
    if _recovery_path(ctx, node):
        return True
    scope = ctx.scope_of(node)
    if scope.__class__ is ast.Module:
        return True
    if scope.__class__ is not ast.Lambda and (scope.name in _ONCE_NAMES or scope.name.startswith(_ONCE_PREFIXES)):
        return not (scope.name == "__init__" and _built_per_call(ctx, scope))
    if scope.__class__ is not ast.Lambda and scope.name not in ("forward", "__call__") and depth > 0 and _called_at_setup(ctx, scope, depth):
        return True  # a method of a module, but only called from its __init__ (a dummy forward to size layers)
    if is_per_call_function(ctx, scope):
        return False
    if not any(n.__class__ in (ast.For, ast.AsyncFor, ast.While) for n in ctx.walk_body(scope.body)):
        return False
    return not (scope.__class__ is not ast.Lambda and called_per_call(ctx, scope))


def called_per_call(ctx: Context, func: AST, depth: int = 2) -> bool:
    """A function of this file that a per-call function (a ``forward``) calls, directly or
    through ``depth`` helpers: its loop is part of the computation (``farthest_point_sample``'s
    loop over the points to pick), so what it allocates before the loop is made every call."""
    for call in ctx.calls_named(func.name):
        if local_function(ctx, call) is not func:
            continue
        caller = ctx.function_of(call)
        if caller is None or caller is func:
            continue
        if _forward_like(ctx, caller) or (depth > 0 and called_per_call(ctx, caller, depth - 1)):
            return True
    return False


def _forward_like(ctx: Context, func: AST) -> bool:
    """Part of a model's computation: ``forward``-like by name, or a method of an ``nn.Module``
    class (a training function that calls a helper once per epoch is not)."""
    if func.__class__ is ast.Lambda or _named_per_call(func.name):
        return True
    klass = ctx.parent(func)
    return klass.__class__ is ast.ClassDef and any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name))


def _named_per_call(name: str) -> bool:
    low = name.lower()
    return "forward" in low or low in ("__call__", "step") or low.endswith("_step")


def _called_at_setup(ctx: Context, func: AST, depth: int) -> bool:
    """Every call of this helper in the file is made at set-up (:func:`runs_once`) or by an
    evaluation function outside its loops (``_dummy_forward`` from ``__init__``; an evaluator's
    ``eval()`` calling ``_calculate_mrr``)."""
    calls = [c for c in ctx.calls_named(func.name) if local_function(ctx, c) is func]
    if not calls:
        return False
    for call in calls:
        caller = ctx.function_of(call)
        if caller is func:
            return False
        evaluating = caller is not None and is_eval_name(caller.name) and not ctx.enclosing_loops(call)
        if not evaluating and not runs_once(ctx, call, depth - 1):
            return False
    return True


_NAN_CHECKS = frozenset({"isnan", "isinf", "isfinite"})


def _recovery_path(ctx: Context, node: AST) -> bool:
    """Under ``if torch.isnan(k).any():`` (or ``isinf``): a fallback taken on a rare failure."""
    for if_node, in_body in ctx.enclosing_ifs(node):
        if in_body and any(n.__class__ is ast.Call and last_name(n.func) in _NAN_CHECKS for n in ast.walk(if_node.test)):
            return True
    return False


def _built_per_call(ctx: Context, init: AST) -> bool:
    """``__init__`` of a plain helper class (not an ``nn.Module``) that the file builds inside a
    per-call function (``ProbMask(B, H, ...)`` in an attention ``forward``), or that the modules
    importing it do: it runs every forward."""
    klass = ctx.parent(init)
    if klass.__class__ is not ast.ClassDef or any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)):
        return False
    sites = [(ctx, call) for call in ctx.calls_named(klass.name)]
    if ctx.parent(klass) is ctx.tree:
        sites += list(project_calls(ctx, klass.name))
    for where, call in sites:
        func = where.function_of(call)
        if func is not None and func is not init and is_per_call_function(where, func):
            return True
    return False


def forward_path_function(ctx: Context, node: AST) -> AST | None:
    """The function around ``node`` when it runs on every forward pass: a per-call function
    (:func:`is_per_call_function`, e.g. a module's ``forward``) or a helper a forward pass calls
    (:func:`called_per_call`); None otherwise (set-up, evaluation, module level)."""
    func = ctx.function_of(node)
    if func is None or func.name in _ONCE_NAMES or func.name.startswith(_ONCE_PREFIXES):
        return None
    key = ("sem:forward-path", id(func))
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = is_per_call_function(ctx, func) or called_per_call(ctx, func)
    return func if found else None
