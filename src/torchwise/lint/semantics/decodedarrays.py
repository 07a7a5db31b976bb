"""NumPy arrays a decoder of video or image files hands back (TW206): ``skvideo.io.vread(path)``,
``imageio.imread``/``mimread``, ``tifffile.imread``, and slices or frames of them (``clip =
video[start:start + n]``, ``video[int(i)]``), followed through names by the binding that reaches the use - not one
in the other arm of an ``if`` around it (``if self.transforms: clip = torch.stack(frames)``
``else: clip = torch.tensor(clip)`` sees the slice made before the ``if``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.bindings import Binding

_DECODERS = frozenset({
    "skvideo.io.vread", "imageio.imread", "imageio.mimread", "imageio.v2.imread", "imageio.v2.mimread",
    "imageio.v3.imread", "tifffile.imread",
})


def decoded_array(ctx: Context, expr: AST | None, use: AST, depth: int = 4) -> bool:
    """``expr`` holds an array a file decoder returned, or a slice of one."""
    if expr is None or depth <= 0:
        return False
    cls = expr.__class__
    if cls is ast.Subscript:
        index = expr.slice  # one index of a decoded image or video (2-D or more) is an array; a tuple needs a slice
        return (index.__class__ is not ast.Tuple or any(p.__class__ is ast.Slice for p in index.elts)) \
            and decoded_array(ctx, expr.value, use, depth - 1)
    if cls is ast.Call:
        return ctx.qualname(expr.func) in _DECODERS
    if cls is ast.Name:
        b = reaching_binding(ctx, expr.id, use)
        return b is not None and b.kind == "assign" and decoded_array(ctx, b.value, b.node, depth - 1)
    return False


def reaching_binding(ctx: Context, name: str, use: AST) -> Binding | None:
    """The last binding of ``name`` before ``use`` in its scope that is not in the other arm of an
    ``if`` whose one arm holds the use."""
    scope = ctx.scope_of(use)
    pos = (use.lineno, use.col_offset)
    arms = {}  # id(if) -> the arm holding the use
    for anc in ctx.ancestors(use):
        if anc.__class__ is ast.If:
            arms[id(anc)] = "body" if any(ctx.contains(s, use) or s is use for s in anc.body) else "orelse"
    for b in reversed(ctx.bindings(scope).get(name, ())):
        if b.pos >= pos:
            continue
        if any(anc.__class__ is ast.If and id(anc) in arms and (
                "body" if any(ctx.contains(s, b.node) or s is b.node for s in anc.body) else "orelse") != arms[id(anc)]
               for anc in ctx.ancestors(b.node)):
            continue  # the other arm of an if around the use
        return b
    return None
