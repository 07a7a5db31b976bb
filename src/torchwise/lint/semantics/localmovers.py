"""Loaders handed to a function of their own file that runs over them and moves the batches to a
device (for TW203): ``train_loader = DataLoader(...)`` in ``train(...)`` or ``main(...)``, then
``train_epoch(model, train_loader, optimizer, args)`` whose loop does ``input_ids.to(device)``."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.data import moves_to_device
from torchwise.lint.semantics.values import local_function

_WRAPPERS = frozenset({"enumerate", "iter", "tqdm", "zip", "trange"})


def handed_to_local_mover(ctx: Context, call: ast.Call) -> bool:
    """The loader, bound to a name, is handed to a function of this file that loops over the
    argument it receives and moves data to a device itself (``for x, y in loader: x =
    x.to(device)``) - directly, or through one more function of the file that hands its
    parameter on (``train_model(cfg, train_loader, dev_loader)`` calling ``evaluate(cfg, model,
    dev_loader)``). A function that only keeps the loader, or moves nothing, does not count."""
    parent = ctx.parent(call)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    return _handed_on(ctx, parent.targets[0].id, ctx.scope_of(call), 2)


def _handed_on(ctx: Context, name: str, scope: AST, depth: int) -> bool:
    tried = set()
    for use in ctx.nodes.get(ast.Name, ()):
        if use.id != name or use.ctx.__class__ is not ast.Load or ctx.scope_of(use) is not scope:
            continue
        holder = ctx.parent(use)
        keyword = holder.arg if holder.__class__ is ast.keyword else None
        if keyword is not None:
            holder = ctx.parent(holder)
        if holder.__class__ is not ast.Call or holder.func is use:
            continue
        func = local_function(ctx, holder)
        if func is None or func.__class__ is ast.Lambda or func is scope or (id(func), keyword, use in holder.args) in tried:
            continue
        tried.add((id(func), keyword, use in holder.args))
        param = _parameter(func, holder, use, keyword)
        if param is None:
            continue
        if _loops_over(ctx, func, param) and moves_to_device(ctx, func, follow_calls=0):
            return True
        if depth > 1 and _handed_on(ctx, param, func, depth - 1):
            return True  # a training function that hands the dev loader on to the file's evaluation function
    return False


def _parameter(func: AST, call: ast.Call, use: AST, keyword: str | None) -> str | None:
    """The parameter of ``func`` that receives ``use`` in ``call``."""
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    if keyword is not None:
        return keyword if keyword in params or keyword in (a.arg for a in func.args.kwonlyargs) else None
    if use not in call.args or any(a.__class__ is ast.Starred for a in call.args):
        return None
    if params and params[0] in ("self", "cls") and call.func.__class__ is ast.Attribute:
        params = params[1:]
    index = call.args.index(use)
    return params[index] if index < len(params) else None


def _loops_over(ctx: Context, func: AST, param: str) -> bool:
    """``for ... in param`` in ``func`` (also through ``enumerate``/``tqdm``/``zip``/``iter``)."""
    for node in ctx.walk_body(func.body):
        if node.__class__ not in (ast.For, ast.AsyncFor):
            continue
        it = node.iter
        while it.__class__ is ast.Call and last_name(it.func) in _WRAPPERS and it.args:
            names = [a for a in it.args if a.__class__ is ast.Name]
            if any(a.id == param for a in names):
                return True
            it = it.args[0]
        if it.__class__ is ast.Name and it.id == param:
            return True
    return False
