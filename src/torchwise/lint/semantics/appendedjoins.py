"""New CPU tensors appended to a list that is joined and moved (TW205): ``inputs = []``,
``inputs.append(obs)``, ``inputs.append(torch.eye(n_agents))``, ``inputs = torch.cat([x.reshape(b, -1)
for x in inputs], dim=1)``, then ``inputs = inputs.cuda()`` - in the same function, or by the
caller of a helper of the file that returns the join (``inputs, inputs_next = self._get_inputs(batch,
t)``). Every part of a join is on one device, so a fresh CPU part means the whole join is made on
the CPU and copied across; the part could have been made on the device.

Also a state a method of the class resets to a new CPU tensor and a move stores back
(:func:`reset_attribute`): ``def init_hidden(self, n): self.h = torch.zeros(n, k)``, then
``self.h = self.h.cuda()`` where it is used - made on the CPU and copied every time it is reset."""

from __future__ import annotations

import ast
from typing import Callable, Iterator, TypeVar

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.stored import _JOINS, name_positions

T = TypeVar("T")


def appended_parts(ctx: Context, recv: AST, call: ast.Call, made_by: Callable[[AST | None], T | None],
                   methods: frozenset[str], helper_of: Callable[[ast.Call], AST | None]) -> Iterator[tuple[ast.Call, T]]:
    """``(the factory call, what made_by says)`` for each new CPU tensor appended to the list whose
    join ``call`` moves: ``recv`` is the moved name, bound just before (nothing uses it in between)
    to the join, or unpacked from a call of a helper of this file (``helper_of`` finds it) that
    returns it."""
    if recv.__class__ is not ast.Name or ".append(" not in ctx.source:
        return
    b = ctx.binding_at(recv.id, call)
    if b is None or b.value is None or b.kind not in ("assign", "unpack") or ctx.scope_of(b.node) is not ctx.scope_of(call):
        return
    if any(b.pos <= pos < (recv.lineno, recv.col_offset) for pos in name_positions(ctx).get(recv.id, ())):
        return  # used in between: needed where it is
    if ctx.enclosing_loops(b.node)[:1] != ctx.enclosing_loops(call)[:1]:
        return
    value = b.value
    if b.kind == "unpack":
        if b.index < 0:
            return
        if value.__class__ is ast.Tuple:
            value = value.elts[b.index] if b.index < len(value.elts) else None
        elif value.__class__ is ast.Call:
            yield from _returned_joins(ctx, helper_of(value), b.index, made_by, methods)
            return
        else:
            return
    if value.__class__ is ast.Call and _join_list(ctx, value, methods) is None:
        yield from _returned_joins(ctx, helper_of(value), -1, made_by, methods)
        return
    yield from _parts(ctx, value, made_by, methods)


def _returned_joins(ctx: Context, func: AST | None, index: int, made_by, methods) -> Iterator[tuple[ast.Call, T]]:
    """The appended CPU parts of the joins a helper of this file returns (at ``index`` of a returned
    tuple, or whole)."""
    if func is None or func.__class__ is ast.Lambda:
        return
    for ret in _returns(func):
        value = ret.value
        if index >= 0:
            if value.__class__ is not ast.Tuple or index >= len(value.elts):
                continue
            value = value.elts[index]
        if value.__class__ is ast.Name:
            b = ctx.binding_at(value.id, ret)
            if b is None or b.kind != "assign" or b.value is None or ctx.scope_of(b.node) is not func:
                continue
            if any(b.pos <= pos < (value.lineno, value.col_offset) for pos in name_positions(ctx).get(value.id, ())):
                continue  # changed or used on the host before it is returned
            value = b.value
        yield from _parts(ctx, value, made_by, methods)


def _returns(func: AST) -> Iterator[ast.Return]:
    todo = list(func.body)
    while todo:
        node = todo.pop()
        if node.__class__ is ast.Return:
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _parts(ctx: Context, join: AST | None, made_by, methods) -> Iterator[tuple[ast.Call, T]]:
    listed = _join_list(ctx, join, methods) if join is not None else None
    if listed is None:
        return
    name, use = listed
    func = ctx.scope_of(use)
    b = ctx.binding_at(name.id, use)
    if b is None or b.kind not in ("assign", "unpack") or ctx.scope_of(b.node) is not func or not _empty_list(b):
        return
    for append in ctx.calls_named("append"):
        target = append.func.value
        if target.__class__ is not ast.Name or target.id != name.id or len(append.args) != 1 \
                or ctx.scope_of(append) is not func or not b.pos < (append.lineno, append.col_offset) < (use.lineno, use.col_offset):
            continue
        for part in _operands(append.args[0]):
            found = made_by(part)
            if found is None:
                found = made_by(_reshaped_origin(ctx, part, append, methods))  # m = 1 - torch.eye(n); m = m.view(...)
            if found is not None:
                yield found[0], found  # reported where it is made: several parts may feed one join


def _reshaped_origin(ctx: Context, expr: AST, use: AST, methods: frozenset[str], depth: int = 3) -> AST | None:
    """``mask.unsqueeze(0)`` with ``mask = (1 - torch.eye(n))`` then ``mask = mask.view(-1, 1).repeat(1, k)``
    in this function: the expression the name was first made by, through reshapes under its own name."""
    for _ in range(depth):
        while expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in methods \
                and ctx.qualname(expr.func) is None:
            expr = expr.func.value
        if expr.__class__ is not ast.Name:
            return expr if expr is not None and expr.__class__ is not ast.Name else None
        b = ctx.binding_at(expr.id, use)
        if b is None or b.kind != "assign" or b.value is None or ctx.scope_of(b.node) is not ctx.scope_of(use):
            return None
        expr, use = b.value, b.node
    return None


def _operands(expr: AST) -> list[AST]:
    """The appended value, or the sides of an elementwise product or sum (``u * mask.unsqueeze(0)``)."""
    if expr.__class__ is ast.BinOp and expr.op.__class__ in (ast.Mult, ast.Add, ast.Sub):
        return [expr, expr.left, expr.right]
    return [expr]


def _empty_list(b) -> bool:
    value = b.value
    if b.kind == "unpack":
        if value.__class__ is not ast.Tuple or b.index < 0 or b.index >= len(value.elts):
            return False
        value = value.elts[b.index]
    return value.__class__ is ast.List and not value.elts or (
        value.__class__ is ast.Call and value.func.__class__ is ast.Name and value.func.id == "list" and not value.args)


def _join_list(ctx: Context, expr: AST, methods: frozenset[str]) -> tuple[ast.Name, ast.Call] | None:
    """``torch.cat(parts, 1)`` or ``torch.cat([x.reshape(n, -1) for x in parts], dim=1)`` (only
    reshaping the items, through retyping ``methods`` after the join): the list name and the join."""
    while expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in methods \
            and ctx.qualname(expr.func) is None:
        expr = expr.func.value
    if expr.__class__ is not ast.Call or ctx.qualname(expr.func) not in _JOINS or not expr.args:
        return None
    parts = expr.args[0]
    if parts.__class__ is ast.Name:
        return parts, expr
    if parts.__class__ not in (ast.ListComp, ast.GeneratorExp) or len(parts.generators) != 1:
        return None
    gen = parts.generators[0]
    if gen.ifs or gen.target.__class__ is not ast.Name or gen.iter.__class__ is not ast.Name:
        return None
    elt = parts.elt
    while elt.__class__ is ast.Call and elt.func.__class__ is ast.Attribute and elt.func.attr in methods:
        elt = elt.func.value
    if elt.__class__ is not ast.Name or elt.id != gen.target.id:
        return None  # [x.cuda() for x in parts]: the items are moved one by one
    return gen.iter, expr


def reset_attribute(ctx: Context, recv: AST, call: ast.Call, made_by: Callable[[AST | None], T | None]) -> Iterator[tuple[ast.Call, T]]:
    """``self.h = self.h.cuda()`` (the move stored back under its own name) where a method of the
    class other than ``__init__`` sets ``self.h = torch.zeros(...)``: each such factory (reported
    there; whether that method runs per step is the caller's question)."""
    if recv.__class__ is not ast.Attribute or recv.value.__class__ is not ast.Name or recv.value.id != "self":
        return
    stmt = ctx.parent(call)
    if stmt.__class__ is not ast.Assign or len(stmt.targets) != 1 or stmt.value is not call:
        return
    target = stmt.targets[0]
    if target.__class__ is not ast.Attribute or target.attr != recv.attr or target.value.__class__ is not ast.Name \
            or target.value.id != "self":
        return
    cls = ctx.class_of(call)
    for value in ctx.self_attr_values(cls, recv.attr) if cls is not None else ():
        func = ctx.function_of(value)
        if func is None or func.__class__ is ast.Lambda or func.name == "__init__" or func is ctx.function_of(call):
            continue
        found = made_by(value)
        if found is not None:
            yield found[0], found
