"""Coordinate grids ``torch.meshgrid`` builds from new CPU tensors (TW205): ``yy, xx =
torch.meshgrid(torch.arange(h), torch.arange(w))`` gives CPU tensors, which code then moves
(``xx, yy = xx.cuda(), yy.cuda()``) or joins and moves (``torch.stack((xx, yy), 2).to(device)``,
``torch.stack(torch.meshgrid(...), dim=2).to(device)``)."""

from __future__ import annotations

import ast
from typing import Callable, TypeVar

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.stored import stored_then_moved

T = TypeVar("T")


def meshgrid_part(ctx: Context, name: ast.Name, use: AST, made_by: Callable[[AST | None], T | None]) -> T | None:
    """``name`` is one of the grids of ``torch.meshgrid`` unpacked just before ``use`` (moved or
    joined there, no use in between), and every tensor the meshgrid was given is new on the CPU
    (``made_by`` says so of each, through plain names): what ``made_by`` says of its first input
    (one report per meshgrid, whichever of its grids is moved)."""
    b = ctx.binding_at(name.id, use)
    if b is None or b.kind != "unpack" or b.index < 0 or b.value.__class__ is not ast.Call:
        return None
    grid = b.value
    if ctx.qualname(grid.func) != "torch.meshgrid" or any(k.arg != "indexing" for k in grid.keywords):
        return None
    args = meshgrid_inputs(grid)
    if b.index >= len(args):
        return None
    made = [made_by(ctx.resolve(a, grid)) for a in args]
    if any(m is None for m in made) or not stored_then_moved(ctx, name, use, unpacked=True):
        return None
    return made[0]


def meshgrid_inputs(grid: ast.Call) -> list[ast.AST]:
    """The tensors ``torch.meshgrid(a, b)`` / ``torch.meshgrid([a, b])`` is given (empty when
    there are fewer than two, or a starred one)."""
    args = grid.args
    if len(args) == 1 and args[0].__class__ in (ast.List, ast.Tuple):
        args = args[0].elts  # torch.meshgrid([torch.arange(h), torch.arange(w)])
    if len(args) < 2 or any(a.__class__ is ast.Starred for a in args):
        return []
    return list(args)
