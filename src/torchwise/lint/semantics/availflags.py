"""Flags that can only be true when a CUDA GPU is there (TW403): a name or attribute assigned a
conjunction that includes the GPU check (``args.mixmode = args.no_cuda and args.mixmode and
torch.cuda.is_available()``, ``use_amp = torch.cuda.is_available() and args.amp``). Code under
``if args.mixmode:`` runs only on a machine with a GPU, whatever the flag is named: the mode is
guarded by the check it was derived from."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

_AVAILABLE = "torch.cuda.is_available()"


def _requires_gpu(ctx: Context, value: ast.AST) -> bool:
    if value.__class__ is ast.BoolOp and value.op.__class__ is ast.And:
        return any(_requires_gpu(ctx, v) for v in value.values)
    return value.__class__ is ast.Call and ctx.text(value) == _AVAILABLE


def availability_flags(ctx: Context) -> frozenset[str]:
    """The texts of the names and attributes the file assigns only from a conjunction with the GPU
    check (every assignment of them: one plain ``args.mixmode = True`` elsewhere undoes it)."""
    key = ("sem:avail-flags",)
    found = ctx._cache.get(key)
    if found is None:
        found = frozenset()
        if "is_available" in ctx.source and " and " in ctx.source:
            gated, other = set(), set()
            for node in ctx.nodes.get(ast.Assign, ()):
                if len(node.targets) != 1 or node.targets[0].__class__ not in (ast.Name, ast.Attribute):
                    continue
                (gated if _requires_gpu(ctx, node.value) and node.value.__class__ is ast.BoolOp else other).add(
                    ctx.text(node.targets[0]))
            found = frozenset(gated - other)
        ctx._cache[key] = found
    return found


def _flag_holds(ctx: Context, test: ast.AST, flags: frozenset[str]) -> bool:
    if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And:
        return any(_flag_holds(ctx, v, flags) for v in test.values)
    return test.__class__ in (ast.Name, ast.Attribute) and ctx.text(test) in flags


def availability_ifs(ctx: Context, node: AST) -> list[ast.If]:
    """The ``if`` statements whose body holds ``node`` and whose test holds only when such a flag
    is true (``if args.mixmode:``, ``if args.mixmode and epoch > 0:``)."""
    flags = availability_flags(ctx)
    if not flags:
        return []
    return [i for i, in_body in ctx.enclosing_ifs(node)
            if in_body and i.__class__ is ast.If and _flag_holds(ctx, i.test, flags)]


__all__ = ["availability_flags", "availability_ifs"]
