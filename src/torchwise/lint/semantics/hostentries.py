"""A state dict whose entries are each moved to the host before it is saved (TW402):

    state_dict = net.module.decoder.state_dict()
    for key in state_dict.keys():
        state_dict[key] = state_dict[key].to(torch.device("cpu"))
    torch.save(state_dict, path)

The loop (over the dict, its ``keys()`` or ``items()``) rewrites every entry with ``.cpu()`` or
``.to("cpu")`` / ``.to(torch.device("cpu"))`` in the save's scope, between the name's binding and
the save: the file holds host tensors only.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context


def _to_host(ctx: Context, value: ast.AST) -> bool:
    """``x.cpu()``, ``x.to("cpu")``, ``x.to(torch.device("cpu"))``, ``x.detach().cpu()``."""
    if value.__class__ is not ast.Call or value.func.__class__ is not ast.Attribute:
        return False
    if value.func.attr == "cpu" and not value.args:
        return True
    if value.func.attr != "to" or len(value.args) != 1:
        return False
    text = ctx.text(value.args[0]).replace(" ", "")
    return text in ('"cpu"', "'cpu'", 'torch.device("cpu")', "torch.device('cpu')")


def _iterated_name(loop: ast.For) -> str | None:
    """``sd`` of ``for k in sd`` / ``sd.keys()`` / ``for k, v in sd.items()``."""
    it = loop.iter
    if it.__class__ is ast.Call and it.func.__class__ is ast.Attribute and it.func.attr in ("keys", "items") and not it.args:
        it = it.func.value
    return it.id if it.__class__ is ast.Name else None


def entries_moved_to_host(ctx: Context, obj: ast.AST | None, save: ast.Call) -> bool:
    """``torch.save(sd, f)`` right after a loop of the same scope that moves each entry of ``sd`` to the host."""
    if obj is None or obj.__class__ is not ast.Name or ".to(" not in ctx.source and ".cpu()" not in ctx.source:
        return False
    scope = ctx.scope_of(save)
    b = ctx.binding_at(obj.id, save)
    if b is None or b.kind != "assign" or ctx.scope_of(b.node) is not scope:
        return False
    bound = (b.node.lineno, b.node.col_offset)
    for loop in ctx.nodes.get(ast.For, ()):
        if ctx.scope_of(loop) is not scope or not bound < (loop.lineno, loop.col_offset) < (save.lineno, save.col_offset) \
                or _iterated_name(loop) != obj.id or ctx.contains(loop, save):
            continue
        key = loop.target.elts[0] if loop.target.__class__ is ast.Tuple and loop.target.elts else loop.target
        for stmt in loop.body:
            if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Subscript \
                    and ctx.text(stmt.targets[0].value) == obj.id and ctx.text(stmt.targets[0].slice) == ctx.text(key) \
                    and _to_host(ctx, stmt.value):
                return True
    return False


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
