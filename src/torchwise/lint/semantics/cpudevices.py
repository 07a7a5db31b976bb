"""Devices that are the CPU by construction: ``self.loss_device`` that a module's ``__init__`` sets
from a parameter every construction in the project fills with ``torch.device("cpu")`` (a speaker
encoder computing its loss on the CPU). ``.to(self.loss_device)`` of a new tensor moves nothing."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, argument
from torchwise.lint.semantics.callers import project_calls


def cpu_attribute(ctx: Context, target: AST, use: AST) -> bool:
    """``target`` is ``self.<attr>``, assigned once in the class, from a parameter of its
    ``__init__`` that every construction of the class (in this file and the modules importing it)
    passes as the CPU: ``"cpu"``, ``torch.device("cpu")``, or a name the caller bound to one."""
    if target.__class__ is not ast.Attribute or target.value.__class__ is not ast.Name or target.value.id != "self":
        return False
    cls = ctx.class_of(use)
    if cls is None:
        return False
    key = ("sem:cpu-attr", id(cls), target.attr)
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = _cpu_by_construction(ctx, cls, target.attr)
    return found


def _cpu_by_construction(ctx: Context, cls: ast.ClassDef, attr: str) -> bool:
    values = ctx.self_attr_values(cls, attr)
    init = next((i for i in cls.body if i.__class__ is ast.FunctionDef and i.name == "__init__"), None)
    if len(values) != 1 or values[0].__class__ is not ast.Name or init is None or ctx.function_of(values[0]) is not init:
        return False
    return cpu_parameter(ctx, cls, init, values[0].id, omitted=False)


def cpu_parameter(ctx: Context, cls: ast.ClassDef, init: AST, name: str, omitted: bool = True) -> bool:
    """Every construction of ``cls`` (in this file and the modules importing it) passes the CPU
    for the parameter ``name`` of its ``__init__`` - or, with ``omitted``, leaves it out where its
    default is the CPU (``device="cpu"``)."""
    params = [a.arg for a in [*init.args.posonlyargs, *init.args.args]]
    if name not in params[1:]:
        return False
    index = params.index(name) - 1
    defaults = dict(zip(params[::-1], init.args.defaults[::-1]))
    default_cpu = omitted and name in defaults and _cpu(ctx, defaults[name], init)
    sites = [(ctx, c) for c in ctx.calls_named(cls.name) if c.func.__class__ is ast.Name]
    if ctx.parent(cls) is ctx.tree and ctx.project.files:
        sites += list(project_calls(ctx, cls.name))
    if not sites:
        return False
    for where, call in sites:
        value = argument(call, name, index)
        if value is None and not default_cpu or value is not None and not _cpu(where, value, call):
            return False
    return True


def _cpu(ctx: Context, expr: AST, use: AST) -> bool:
    """``"cpu"``, ``torch.device("cpu")``, or a name bound to one just before ``use``."""
    if expr.__class__ is ast.Name:
        expr = ctx.resolve(expr, use)
    if expr.__class__ is ast.Call and ctx.qualname(expr.func) == "torch.device" and len(expr.args) == 1:
        expr = expr.args[0]
    return expr.__class__ is ast.Constant and isinstance(expr.value, str) and expr.value.split(":")[0] == "cpu"
