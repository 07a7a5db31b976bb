"""Forward passes of a training function that no evaluation needs a graph-free run for (TW104):
a pass whose output the function's own backward pass reaches (``outs = model(x)`` ... ``loss =
ce(outs["pred"], y)`` ... ``loss.backward()``, even after a teacher's ``teacher.eval()``), and a
pass of a network handed in as a parameter whose parameters every caller froze first
(``for p in teacher.parameters(): p.requires_grad = False`` then ``train(model, teacher, ...)``):
with no parameter requiring grad and a batch that needs none, no graph is recorded."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.steps import backward_calls


def _feeding(ctx: Context, scope: AST) -> set[str]:
    """Names whose value reaches a backward pass of ``scope`` (up to eight assignments back)."""
    key = ("trainedruns:feeding", id(scope))
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = set()
        todo = [(c, 8) for c in backward_calls(ctx) if ctx.scope_of(c) is scope]
        while todo:
            expr, depth = todo.pop()
            for sub in ast.walk(expr):
                if sub.__class__ is ast.Name and sub.id not in found:
                    found.add(sub.id)
                    for b in ctx.bindings(scope).get(sub.id, ()) if depth > 0 else ():
                        if b.value is not None and b.kind in ("assign", "aug", "walrus"):
                            todo.append((b.value, depth - 1))
    return found


def feeds_backward(ctx: Context, scope: AST, run: ast.Call) -> bool:
    """``outs = model(x)`` whose value the scope's own backward pass reaches: a training forward."""
    stmt = ctx.statement_of(run)
    if stmt.__class__ is not ast.Assign or stmt.value is not run:
        return False
    names = {n.id for t in stmt.targets for n in ast.walk(t) if n.__class__ is ast.Name}
    return bool(names) and bool(names & _feeding(ctx, scope))


def _frozen_in(ctx: Context, scope: AST, name: str, before: ast.Call) -> bool:
    for node in ctx.walk_body(getattr(scope, "body", [])):
        if (node.lineno, node.col_offset) >= (before.lineno, before.col_offset):
            continue
        if node.__class__ is ast.For and node.iter.__class__ is ast.Call and last_name(node.iter.func) == "parameters" \
                and node.iter.func.__class__ is ast.Attribute and ctx.text(node.iter.func.value) == name \
                and any(s.__class__ is ast.Assign and s.targets[0].__class__ is ast.Attribute and s.targets[0].attr == "requires_grad"
                        and s.value.__class__ is ast.Constant and s.value.value is False for s in node.body):
            return True
        if node.__class__ is ast.Call and last_name(node.func) == "requires_grad_" and node.func.__class__ is ast.Attribute \
                and ctx.text(node.func.value) == name and node.args and node.args[0].__class__ is ast.Constant \
                and node.args[0].value is False:
            return True
    return False


def frozen_by_callers(ctx: Context, scope: AST, receiver: str) -> bool:
    """``receiver`` is a parameter of ``scope`` that every call of it in the file hands a network
    its caller froze before the call (the function is called at least once)."""
    if "requires_grad" not in ctx.source or scope.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    params = [a.arg for a in [*scope.args.posonlyargs, *scope.args.args]]
    if receiver not in params:
        return False
    index = params.index(receiver)
    calls = [c for c in ctx.calls_named(scope.name) if c.func.__class__ is ast.Name]
    if not calls:
        return False
    for call in calls:
        arg = next((k.value for k in call.keywords if k.arg == receiver), None)
        if arg is None and index < len(call.args) and not any(a.__class__ is ast.Starred for a in call.args[:index + 1]):
            arg = call.args[index]
        if arg is None or arg.__class__ is not ast.Name or not _frozen_in(ctx, ctx.scope_of(call), arg.id, call):
            return False
    return True


__all__ = ["feeds_backward", "frozen_by_callers"]
