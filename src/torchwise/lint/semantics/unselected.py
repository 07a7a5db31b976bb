"""Branches on a constructor option that no construction of the class selects (ruling R5 of issue 22).

A module class often takes an option and branches on it, in ``__init__`` or later through the
attribute it keeps::

    class Head(nn.Module):
        def __init__(self, kind='ridge', exact=False):
            self.exact = exact
            if 'ridge' in kind: self.solve = ridge_head
            elif 'svm-ww' in kind: self.solve = svm_ww_head      # never chosen
        def forward(self, x):
            if self.exact: ...                                   # never on

When every construction of the class in the project can be seen and passes a constant (or leaves
the default) that fails the test, the branch never runs: :func:`unselected_branch`. A module-level
function that only such branches name (``svm_ww_head``, and no other file names it) never runs
either: :func:`only_unselected`. Tests understood: the option itself (``if exact:``, ``not
exact``), ``== 'c'``, ``!= 'c'``, ``in (...)`` and the substring test ``'c' in kind``. The class's
name used in any other way (a base class, a registry, an argument) or a construction with ``*``
or ``**`` arguments says nothing.
"""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import AST, Context, argument, has_star_args
from torchwise.lint.semantics.callers import MAX_CALLER_FILES, parsed_file

_UNKNOWN = object()


def _subject(ctx: Context, cls: ast.ClassDef, init: ast.FunctionDef, expr: AST, here: AST) -> str | None:
    """The ``__init__`` parameter a tested expression stands for: the parameter itself (inside
    ``__init__``) or ``self.attr`` that ``__init__`` alone sets to it."""
    params = [a.arg for a in init.args.args]
    if expr.__class__ is ast.Name and ctx.function_of(here) is init and expr.id in params[1:]:
        b = ctx.binding_at(expr.id, here)
        return expr.id if b is not None and b.kind == "param" else None
    if expr.__class__ is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
        sets = _self_sets(ctx, cls).get(expr.attr, ())
        if len(sets) == 1 and sets[0].__class__ is ast.Assign and ctx.function_of(sets[0]) is init \
                and sets[0].value.__class__ is ast.Name and sets[0].value.id in params[1:] and not ctx.enclosing_ifs(sets[0]):
            return sets[0].value.id
    return None


def _self_sets(ctx: Context, cls: ast.ClassDef) -> dict[str, list[AST]]:
    """``attr`` -> the assignments to ``self.attr`` anywhere in ``cls`` (walk order), read once per class."""
    key = ("unselected:sets", cls)
    found = ctx._cache.get(key)
    if found is None:
        found = {}
        for n in ast.walk(cls):
            if n.__class__ not in (ast.Assign, ast.AugAssign, ast.AnnAssign):
                continue
            attrs = {t.attr for t in (n.targets if n.__class__ is ast.Assign else [n.target])
                     if t.__class__ is ast.Attribute and ctx.text(t.value) == "self"}
            for attr in attrs:
                found.setdefault(attr, []).append(n)
        ctx._cache[key] = found
    return found


def _test(ctx: Context, cls: ast.ClassDef, init: ast.FunctionDef, test: AST, here: AST):
    """``(parameter, evaluate(value) -> bool or _UNKNOWN)`` for a test of one option, else None."""
    negate = test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not
    inner = test.operand if negate else test
    param = _subject(ctx, cls, init, inner, here)
    if param is not None:
        return param, lambda v: (not v) if negate else bool(v)
    if negate or inner.__class__ is not ast.Compare or len(inner.ops) != 1:
        return None
    op, left, right = inner.ops[0].__class__, inner.left, inner.comparators[0]
    if op in (ast.Eq, ast.NotEq) and right.__class__ is ast.Constant:
        param, c = _subject(ctx, cls, init, left, here), right.value
        return (param, lambda v: (v == c) == (op is ast.Eq)) if param is not None else None
    if op is ast.In and left.__class__ is ast.Constant and isinstance(left.value, str):
        param, c = _subject(ctx, cls, init, right, here), left.value
        return (param, lambda v: c in v if isinstance(v, str) else _UNKNOWN) if param is not None else None
    if op is ast.In and right.__class__ in (ast.Tuple, ast.List, ast.Set) and all(e.__class__ is ast.Constant for e in right.elts):
        param, cs = _subject(ctx, cls, init, left, here), [e.value for e in right.elts]
        return (param, lambda v: v in cs) if param is not None else None
    return None


def _constructions(ctx: Context, cls: ast.ClassDef) -> list[ast.Call] | None:
    """Every construction of the module-level class ``cls`` in the project, or None when its name
    is used otherwise anywhere (or is found in too many files)."""
    key = ("unselected:builds", ctx.path, cls.name)
    if key in ctx._cache:
        return ctx._cache[key]
    name = cls.name
    word = re.compile(rf"\b{re.escape(name)}\b")
    out: list[ast.Call] | None = []
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    others = [(p, t) for p, t in ctx.project.files if p != ctx.path and word.search(t)]
    if len(others) > MAX_CALLER_FILES:
        out = None
    for where in [ctx, *(parsed_file(ctx.project, p, t) for p, t in others)] if out is not None else ():
        if where is None or where is not ctx and not re.search(rf"\b{re.escape(stem)}\b", where.source):
            out = None
            break
        for n in where.nodes.get(ast.Name, ()):
            if n.id != name:
                continue
            parent = where.parent(n)
            if parent.__class__ is ast.Call and parent.func is n and not has_star_args(parent):
                out.append(parent)
            elif not (parent.__class__ is ast.Call and parent.func.__class__ is ast.Name and parent.func.id == "super"):
                out = None
                break
        if out is None or any(a.attr == name for a in where.nodes.get(ast.Attribute, ())):
            out = None  # (heads.Head(...): a construction through the module)
            break
    ctx._cache[key] = out or None
    return ctx._cache[key]


def _value(call: ast.Call, init: ast.FunctionDef, param: str):
    params = [a.arg for a in init.args.args]
    v = argument(call, param, params.index(param) - 1)
    if v is None:
        defaults = dict(zip(params[::-1], init.args.defaults[::-1]))
        v = defaults.get(param)
    return v.value if v is not None and v.__class__ is ast.Constant else _UNKNOWN


def _class_init(ctx: Context, node: AST) -> tuple[ast.ClassDef, ast.FunctionDef] | None:
    cls = ctx.class_of(node)
    if cls is None or ctx.parent(cls) is not ctx.tree:
        return None
    init = next((i for i in cls.body if i.__class__ is ast.FunctionDef and i.name == "__init__"), None)
    if init is None or init.args.vararg or init.args.kwarg or init.args.kwonlyargs:
        return None
    return cls, init


def branch_values(ctx: Context, if_node: ast.If) -> list | None:
    """The value of ``if_node``'s test (True, False or ``_UNKNOWN``) for each construction of its
    class, when the test reads one constructor option; None otherwise or when the class has no
    construction the project shows."""
    if "__init__" not in ctx.source:
        return None
    found = _class_init(ctx, if_node)
    if found is None:
        return None
    cls, init = found
    test = _test(ctx, cls, init, if_node.test, if_node)
    if test is None:
        return None
    builds = _constructions(ctx, cls)
    if not builds:
        return None
    param, evaluate = test
    return [_UNKNOWN if (v := _value(b, init, param)) is _UNKNOWN else evaluate(v) for b in builds]


def unselected_branch(ctx: Context, node: AST) -> bool:
    """``node`` lies in the body of an option test that no construction selects (module doc)."""
    if "__init__" not in ctx.source or _class_init(ctx, node) is None:
        return False
    for if_node, in_body in ctx.enclosing_ifs(node):
        if not in_body or if_node.__class__ is not ast.If:
            continue
        values = branch_values(ctx, if_node)
        if values and all(v is False for v in values):
            return True
    return False


def only_unselected(ctx: Context, func: AST | None) -> bool:
    """The module-level function ``func`` is named only in branches :func:`unselected_branch`
    finds, and no other file of the project names it."""
    if func is None or func.__class__ is not ast.FunctionDef or ctx.parent(func) is not ctx.tree:
        return False
    key = ("unselected:func", func.name)
    if key not in ctx._cache:
        uses = [n for n in ctx.nodes.get(ast.Name, ()) if n.id == func.name]
        word = re.compile(rf"\b{re.escape(func.name)}\b")
        ctx._cache[key] = bool(uses) and all(unselected_branch(ctx, n) for n in uses) and not any(
            p != ctx.path and word.search(t) for p, t in ctx.project.files) and "__all__" not in ctx.source
    return ctx._cache[key]
