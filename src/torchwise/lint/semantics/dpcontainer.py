"""DataParallel used only as a container: wrapped to load a checkpoint's ``module.`` keys, then unwrapped.

``enc = nn.DataParallel(Net()); enc.load_state_dict(torch.load(p)); enc = enc.module.encoder``
(or ``self.v = wrapped.module.v``) never runs the wrapper: DataParallel is there only so that the
``module.``-prefixed keys of a checkpoint saved from a DataParallel model match. No forward pass
goes through it, so there is nothing for DistributedDataParallel to do better.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context

# what may be done with the wrapper before it is unwrapped: load the checkpoint, move it, set a mode
_HOLDING = frozenset({"load_state_dict", "cpu", "cuda", "to", "eval", "train"})
_UNWRAP_CALLS = frozenset({"children", "named_children"})


def container_only(ctx: Context, call: ast.Call) -> bool:
    """The wrapper ``call`` is bound to a plain name, loaded with ``load_state_dict`` and then only
    unwrapped (``w.module``, ``next(w.children())``) - never called, passed on or returned."""
    parent = ctx.parent(call)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    name = parent.targets[0].id
    scope = ctx.scope_of(call)
    body = getattr(scope, "body", None)
    if not body or "load_state_dict" not in ctx.source or ".module" not in ctx.source and "children()" not in ctx.source:
        return False
    start = (parent.end_lineno or parent.lineno, parent.end_col_offset or 0)
    loaded = unwrapped = False
    uses = sorted((n for n in ast.walk(scope) if n.__class__ is ast.Name and n.id == name
                   and (n.lineno, n.col_offset) > start and ctx.scope_of(n) is scope),
                  key=lambda n: _order(ctx, n))
    for use in uses:
        if use.ctx.__class__ is not ast.Load:
            if unwrapped:
                break  # rebound after it was unwrapped (`enc = enc.module.encoder`): the wrapper is gone
            return False
        up = ctx.parent(use)
        if up.__class__ is not ast.Attribute:
            return False  # called, passed on, returned or stored: it may run
        if up.attr == "module":
            unwrapped = True
            continue
        holder = ctx.parent(up)
        if holder.__class__ is not ast.Call or holder.func is not up:
            return False
        if up.attr in _UNWRAP_CALLS:
            unwrapped = True
        elif up.attr in _HOLDING:
            loaded = loaded or up.attr == "load_state_dict"
            if up.attr != "load_state_dict" and ctx.parent(holder).__class__ is not ast.Expr:
                return False  # `w = w.cuda()` keeps the wrapper under the name: it goes on to be used
        else:
            return False
    return loaded and unwrapped


def _order(ctx: Context, name: ast.Name) -> tuple[int, int]:
    """Evaluation order: a name bound by an assignment counts after its right-hand side."""
    if name.ctx.__class__ is ast.Store:
        stmt = ctx.parent(name)
        if stmt.__class__ in (ast.Assign, ast.AnnAssign, ast.AugAssign):
            return (stmt.end_lineno or stmt.lineno, (stmt.end_col_offset or 0) + 1)
    return (name.lineno, name.col_offset)


__all__ = ["container_only"]
