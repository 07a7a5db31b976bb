"""Branches a call selects:  the DataLoaders a loader-building function makes on the side of an
``if`` on one of its parameters that a call's constant decides (``create_dataloader(hp, args,
train=True)`` with ``if train: return DataLoader(..., pin_memory=True)`` / ``else: return
DataLoader(...)``): only the pinned training loader comes back to that caller (TW204)."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, argument, last_name

_UNKNOWN = object()


def call_constants(func: AST, call: ast.Call) -> dict[str, object]:
    """The constant each parameter of ``func`` gets from ``call`` (its constant default where the
    call leaves it out); parameters given anything else are absent."""
    if any(k.arg is None for k in call.keywords) or any(a.__class__ is ast.Starred for a in call.args):
        return {}
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    shift = 1 if params[:1] in (["self"], ["cls"]) and call.func.__class__ is ast.Attribute else 0
    defaults = dict(zip(params[len(params) - len(func.args.defaults):], func.args.defaults))
    out: dict[str, object] = {}
    for i, name in enumerate(params[shift:]):
        given = argument(call, name, i)
        if given is None:
            given = defaults.get(name)
        if given is not None and given.__class__ is ast.Constant:
            out[name] = given.value
    return out


def unselected_loaders(func: AST, consts: dict[str, object]) -> set[int] | None:
    """``id``s of the DataLoader calls and ``return``s of ``func`` that lie on a side of an ``if`` on a parameter
    (``if train:``, ``if not train:``, ``if mode == 'train':``) that ``consts`` rule out; None when
    no loader is ruled out (nothing is decided)."""
    if not consts:
        return None
    out: set[int] = set()

    def visit(node: AST, excluded: bool) -> None:
        if node.__class__ is ast.If:
            decided = _decide(node.test, consts)
            visit(node.test, excluded)
            for s in node.body:
                visit(s, excluded or decided is False)
            for s in node.orelse:
                visit(s, excluded or decided is True)
            return
        if excluded and (node.__class__ is ast.Return or node.__class__ is ast.Call and last_name(node.func) == "DataLoader"):
            out.add(id(node))
        for child in ast.iter_child_nodes(node):
            visit(child, excluded)

    for stmt in func.body:
        visit(stmt, False)
    return out or None


def _decide(test: AST, consts: dict[str, object]) -> bool | None:
    """The truth of an ``if`` test on parameters ``consts`` fixes; None when it does not."""
    if test.__class__ is ast.Name:
        value = consts.get(test.id, _UNKNOWN)
        return None if value is _UNKNOWN else bool(value)
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        inner = _decide(test.operand, consts)
        return None if inner is None else not inner
    if test.__class__ is ast.Compare and len(test.ops) == 1 and test.left.__class__ is ast.Name \
            and test.comparators[0].__class__ is ast.Constant and test.ops[0].__class__ in (ast.Eq, ast.NotEq):
        value = consts.get(test.left.id, _UNKNOWN)
        if value is _UNKNOWN:
            return None
        same = value == test.comparators[0].value
        return same if test.ops[0].__class__ is ast.Eq else not same
    return None


def selected_test(call: ast.Call, test: Callable[..., int | None]) -> Callable[[AST], int | None]:
    """``test`` (``pinned_loaders_line``) run on a function's loaders that ``call`` can get back:
    None unless the call's constants rule some of them out."""
    def run(func: AST) -> int | None:
        if func.__class__ is not ast.FunctionDef:
            return None
        dropped = unselected_loaders(func, call_constants(func, call))
        return test(func, dropped) if dropped else None
    return run

