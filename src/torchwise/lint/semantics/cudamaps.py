"""Checkpoints mapped onto a hard-coded GPU (TW403): ``torch.load(p, map_location='cuda:0')``,
``map_location=f'cuda:{args.gpu}'``, ``map_location='cuda:{}'.format(rank)`` (also through a name
bound to such a string, ``loc = 'cuda:{}'.format(args.local_rank)``; not a name bound to a plain
``"cuda"``, a setting the user overrides). On a machine without CUDA
the load fails whatever device the rest of the file chose."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument
from torchwise.lint.engine.lazyre import lazy_compile

_CUDA = lazy_compile(r"^cuda(:\d*)?$")


def _cuda_text(node: ast.AST | None) -> bool:
    """A string that names a CUDA device: ``'cuda'``, ``'cuda:0'``, ``f'cuda:{i}'``, ``'cuda:{}'.format(i)``."""
    if node is None:
        return False
    if node.__class__ is ast.Constant:
        return isinstance(node.value, str) and _CUDA.match(node.value) is not None
    if node.__class__ is ast.JoinedStr:
        head = node.values[0] if node.values else None
        return head.__class__ is ast.Constant and head.value == "cuda:" and len(node.values) == 2
    if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr == "format":
        owner = node.func.value
        return owner.__class__ is ast.Constant and owner.value in ("cuda:{}", "cuda:%d")
    if node.__class__ is ast.BinOp and node.op.__class__ is ast.Mod:
        return node.left.__class__ is ast.Constant and node.left.value == "cuda:%d"
    return False


def cuda_map_locations(ctx: Context) -> Iterator[tuple[ast.Call, ast.AST, str]]:
    """``(load, the map_location argument, its text)`` for each ``torch.load`` whose
    ``map_location`` names a CUDA device by a fixed string."""
    if "map_location" not in ctx.source or "cuda" not in ctx.source:
        return
    for load in ctx.calls_to("torch.load"):
        where = argument(load, "map_location", 1)
        if where is None:
            continue
        if where.__class__ is ast.Name and len(ctx.bindings(ctx.scope_of(load)).get(where.id) or ()) != 1:
            continue  # a name bound more than once (a device chosen by branches): not one fixed GPU
        value = ctx.resolve(where, load) if where.__class__ is ast.Name else where
        if value is not where and value.__class__ is ast.Constant:
            continue  # device = "cuda" as a setting the user overrides (`--device=cpu`): the name follows it
        if _cuda_text(value):
            yield load, where, ctx.text(value)
