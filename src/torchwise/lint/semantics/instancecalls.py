"""The calls that run a class's ``__call__`` (``ev = Evaluator(...)``, then ``ev(net, loader)``), and
an evaluator's ``__call__`` that runs once per use: a plain class (not an ``nn.Module``) whose
``__call__`` loops over the data itself, called outside any loop (TW204, TW205)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.deadtext import words
from torchwise.lint.semantics.projecthelpers import module_class


def instance_calls(ctx: Context, cls: ast.ClassDef) -> list[ast.Call]:
    """Calls of instances of the file's class ``cls`` (which run its ``__call__``): ``ev(net, dl)``
    where ``ev = Evaluator(...)`` in the same function, or ``Evaluator(...)(net, dl)``."""
    if ctx.local_classes.get(cls.name) is not cls:
        return []
    out = []
    for made in ctx.calls_named(cls.name):
        if made.func.__class__ is not ast.Name:
            continue
        parent = ctx.parent(made)
        if parent.__class__ is ast.Call and parent.func is made:
            out.append(parent)
        elif parent.__class__ is ast.Assign and len(parent.targets) == 1 and parent.targets[0].__class__ is ast.Name:
            name = parent.targets[0].id
            scope = ctx.function_of(made)
            for call in ctx.calls_named(name):
                if call.func.__class__ is ast.Name and ctx.function_of(call) is scope:
                    b = ctx.binding_at(name, call)
                    if b is not None and b.node is parent:
                        out.append(call)
    return out


def once_per_instance_call(ctx: Context, node: AST) -> bool:
    """``node`` lies outside the loops of the ``__call__`` of a plain class of this file (no
    ``nn.Module``) that loops itself (an evaluator walking a loader: ``hist = torch.zeros(n,
    n).cuda()`` before ``for imgs, label in dl:``), whose instances are called - here, one call at
    least - outside any loop, and that no other file of the project names (but a copy of the class): one allocation per use."""
    func = ctx.function_of(node)
    if func is None or func.__class__ is ast.Lambda or func.name != "__call__" or ctx.enclosing_loops(node):
        return False
    cls = ctx.parent(func)
    if cls.__class__ is not ast.ClassDef or module_class(ctx, cls):
        return False
    if not any(n.__class__ in (ast.For, ast.AsyncFor, ast.While) for n in ctx.walk_body(func.body)):
        return False
    key = ("sem:once-per-instance-call", id(cls))
    if key not in ctx._cache:
        calls = instance_calls(ctx, cls)
        needle = cls.name
        ctx._cache[key] = bool(calls) and all(not ctx.enclosing_loops(c) and ctx.function_of(c) is not None
                                              and ctx.function_of(c).__class__ is not ast.Lambda
                                              and ctx.function_of(c).name != "forward" for c in calls) \
            and not any(words(text, needle, 1, code=True) and f"class {needle}" not in text for path, text in ctx.project.files if path != ctx.path)
    return ctx._cache[key]
