"""Whether the code around a node evidently runs on an accelerator (TW207): its function moves
data to a device, or it only receives its data in a file that targets a GPU or in a module that
a file of the project moving data to a device imports. A CPU-only helper module of a course,
imported by nothing that uses a GPU, and a function that names a ``"cpu"`` device do not."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.devices import gpu_evident, scope_moves_to_device
from torchwise.lint.semantics.reach import on_a_mover_path


def on_accelerator(ctx: Context, node: AST) -> bool:
    """Is the code around ``node`` evidently on an accelerator? Its function (or script) moves
    data to a device; or it only receives its data (a method such as ``update(self, rollouts)``)
    in a file that targets a GPU, or in a module that a file moving data to a device imports."""
    scope = ctx.scope_of(node)
    if scope_moves_to_device(ctx, scope):
        return True
    if scope.__class__ is ast.Module or _names_cpu(ctx, scope):
        return False
    return gpu_evident(ctx) or (ctx.project.moves_to_device and on_a_mover_path(ctx.project, ctx.path))


def _names_cpu(ctx: Context, scope: AST) -> bool:
    """A ``"cpu"`` device named in the function: it runs on the CPU on purpose."""
    return any(n.__class__ is ast.Constant and n.value == "cpu" for n in ctx.walk_body(scope.body))
