"""A ``torch.save`` that says nothing of what the project's files hold (TW402): a forwarding helper
(``def save_on_master(*args, **kwargs): torch.save(*args, **kwargs)``) that no file of the project
calls - a utility module copied whole from another project."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context


def uncalled_forwarder(ctx: Context, save: ast.Call) -> bool:
    """``def save_on_master(*args, **kwargs): torch.save(*args, **kwargs)`` that no file of the project
    calls (a utility module copied whole): the save writes nothing, so it says nothing of what the
    project's files hold."""
    if not any(a.__class__ is ast.Starred for a in save.args):
        return False
    func = ctx.function_of(save)
    if func is None or not ctx.project.files:
        return False
    needle = f"{func.name}("
    return sum(text.count(needle) for _, text in ctx.project.files if needle in text) <= 1  # (its own def only)
