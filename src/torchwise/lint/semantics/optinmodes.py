"""A module-level CUDA device used only by an opt-in mode (TW403): ``device =
torch.device("cuda:0")`` at the top of a models file whose every use sits under ``if mixmode:``
or ``if self.mixmode:``, where ``mixmode`` is a parameter defaulting to False (kept as
``self.mixmode = mixmode``). Making the device object needs no GPU; a run with the defaults never
reaches its uses, and the mode is the caller's choice, like a device flag."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context


def _off_by_default(ctx: Context, func: AST | None, name: str) -> bool:
    """``name`` is a parameter of ``func`` whose default is False/None/0."""
    if func is None or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    args = func.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return any(a.arg == name and d.__class__ is ast.Constant and not d.value for a, d in pairs)


def _opt_in_test(ctx: Context, test: AST, use: AST) -> bool:
    func = ctx.function_of(use)
    if test.__class__ is ast.Name:
        return _off_by_default(ctx, func, test.id)
    if test.__class__ is ast.Attribute and test.value.__class__ is ast.Name and test.value.id == "self":
        cls = next((a for a in ctx.ancestors(use) if a.__class__ is ast.ClassDef), None)
        init = next((s for s in cls.body if s.__class__ is ast.FunctionDef and s.name == "__init__"), None) if cls else None
        if init is None:
            return False
        for node in ast.walk(init):
            if node.__class__ is ast.Assign and len(node.targets) == 1 and ctx.text(node.targets[0]) == ctx.text(test):
                return node.value.__class__ is ast.Name and _off_by_default(ctx, init, node.value.id)
    return False


def module_device_only_opt_in(ctx: Context, call: AST) -> bool:
    """``call`` (``torch.device("cuda:0")``) is assigned to a module-level name, and every use of
    that name in the file is in the body of an ``if`` on an off-by-default mode parameter."""
    stmt = ctx.parent(call)
    if stmt.__class__ is not ast.Assign or len(stmt.targets) != 1 or stmt.targets[0].__class__ is not ast.Name \
            or ctx.scope_of(stmt).__class__ is not ast.Module:
        return False
    name = stmt.targets[0].id
    uses = [n for n in ctx.nodes.get(ast.Name, ()) if n.id == name and n.ctx.__class__ is ast.Load]
    return bool(uses) and all(any(in_body and i.__class__ is ast.If and _opt_in_test(ctx, i.test, u)
                                  for i, in_body in ctx.enclosing_ifs(u)) for u in uses)


__all__ = ["module_device_only_opt_in"]
