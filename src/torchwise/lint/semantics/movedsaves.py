"""A save that first moves the object's networks to the host through the object itself (TW402).

``def save(self, filename): self.prep_training(device="cpu"); torch.save({...}, filename)``: a
method of the class, called with the literal ``"cpu"`` and moving modules with ``.cpu()``, runs
before the save - or ``self.cpu()`` / ``self.to("cpu")`` itself - so the file holds host tensors.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context


def _cpu_literal(node: ast.AST) -> bool:
    return node.__class__ is ast.Constant and node.value == "cpu"


def _moves_to_host(ctx: Context, call: ast.Call, klass: ast.ClassDef) -> bool:
    """``self.cpu()``, ``self.to("cpu")``, or ``self.m(..., "cpu")`` / ``self.m(device="cpu")`` where
    ``m`` is a method of the class whose body calls ``.cpu()``."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.value.__class__ is not ast.Name or func.value.id != "self":
        return False
    if func.attr == "cpu" and not call.args:
        return True
    if not any(_cpu_literal(a) for a in [*call.args, *(k.value for k in call.keywords)]):
        return False
    if func.attr == "to":
        return True
    method = next((n for n in klass.body if n.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and n.name == func.attr), None)
    return method is not None and any(n.__class__ is ast.Attribute and n.attr == "cpu" for n in ast.walk(method))


def saved_after_self_to_host(ctx: Context, save: ast.Call) -> bool:
    """The save runs in a method, after an expression statement of that method's own body that
    moves the object to the host (above), with no ``.cuda()`` / ``.to(...)`` statement of ``self``
    in between."""
    func = ctx.function_of(save)
    klass = ctx.class_of(save)
    if func is None or klass is None or ctx.parent(func) is not klass or "cpu" not in ctx.text(func):
        return False
    moved = False
    for stmt in func.body:
        if stmt.lineno >= save.lineno:
            break
        if stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call:
            call = stmt.value
            if _moves_to_host(ctx, call, klass):
                moved = True
            elif call.func.__class__ is ast.Attribute and call.func.attr in ("cuda", "to") and ctx.text(call.func.value).startswith("self"):
                moved = False
    return moved
