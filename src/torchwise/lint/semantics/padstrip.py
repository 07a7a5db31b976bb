"""Per-row pad stripping in a module's forward path (TW207): ``[y[y != PAD] for y in padded]``
over a tensor argument of a method of an ``nn.Module`` - each row's selection has a size that
depends on the data, so the host waits for the GPU once per row. The sequence decoders of speech
and translation models strip their padded targets this way before adding start and end tokens
and embedding them with the module's own layers (which is why the targets are on the device).
Only in ``forward`` or a method the class's ``forward`` calls (not a decoding or search method).
Left alone: a method that moves or copies anything itself (``.to(``, ``.cuda()``, ``.cpu()``,
``.numpy()``, ``.tolist()``: the rows may be host data it moves later), a mask that is not a
test of the row itself against a plain value, and what is not iterated straight from a parameter."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

_COMPS = (ast.ListComp, ast.GeneratorExp)
_MOVES = frozenset({"to", "cuda", "cpu", "numpy", "tolist", "item"})
_PLAIN = (ast.Name, ast.Attribute, ast.Constant, ast.UnaryOp)


def strips_padded_rows(ctx: Context, sub: ast.Subscript, func: AST) -> bool:
    """``sub`` is ``y[y != PAD]`` in a comprehension ``for y in param`` of ``func`` (a method of
    an ``nn.Module`` on the forward path, see the caller) that moves nothing itself."""
    row, test = sub.value, sub.slice
    if row.__class__ is not ast.Name or test.__class__ is not ast.Compare or len(test.ops) != 1 \
            or test.left.__class__ is not ast.Name or test.left.id != row.id or test.comparators[0].__class__ not in _PLAIN:
        return False
    comp = ctx.parent(sub)
    while comp is not None and comp.__class__ not in _COMPS and comp is not func:
        comp = ctx.parent(comp)
    if comp is None or comp.__class__ not in _COMPS or len(comp.generators) != 1:
        return False
    gen = comp.generators[0]
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args)}
    if gen.target.__class__ is not ast.Name or gen.target.id != row.id or gen.iter.__class__ is not ast.Name \
            or gen.iter.id not in params or gen.ifs:
        return False
    if any(n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr in _MOVES for n in ast.walk(func)):
        return False
    return func.name == "forward" or _called_by_forward(ctx, func)


def _called_by_forward(ctx: Context, func: AST) -> bool:
    """``self.<func>(...)`` in the ``forward`` of ``func``'s class (not a decode or search method)."""
    klass = ctx.parent(func)
    for fwd in klass.body if klass.__class__ is ast.ClassDef else ():
        if fwd.__class__ is ast.FunctionDef and fwd.name == "forward":
            return any(n.__class__ is ast.Attribute and n.attr == func.name and n.value.__class__ is ast.Name
                       and n.value.id == "self" for n in ast.walk(fwd))
    return False


__all__ = ["strips_padded_rows"]
