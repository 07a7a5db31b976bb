"""Tensors made once per key and kept (TW205): stored into a cache the first time only
(``if key not in cache: cache[key] = ...``), an optimizer's lazy state, or a store made on the
first pass of a loop (``if features is None: features = torch.zeros(...)``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name


def memoized(ctx: Context, call: ast.Call) -> bool:
    """Stored into a cache the first time only: ``if key not in hann_window: hann_window[key] =
    torch.hann_window(n).to(...)``, or an optimizer's lazy state (``if not state:`` / ``if len(state)
    == 0: state["v"] = torch.zeros([]).to(p.device)``). Made once per key, not per step."""
    stmt = ctx.parent(call)
    if _stored_once_on_object(ctx, call):
        return True
    if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name:
        return _lazy_in_loop(ctx, stmt, stmt.targets[0].id)
    if stmt.__class__ is not ast.Assign or len(stmt.targets) != 1 or stmt.targets[0].__class__ is not ast.Subscript:
        return False
    store = ast.dump(stmt.targets[0].value)
    for if_node, in_body in ctx.enclosing_ifs(stmt):
        if in_body and if_node.__class__ is ast.If and _tests_missing(if_node.test, store):
            return True
    return False


def _stored_once_on_object(ctx: Context, call: ast.Call) -> bool:
    """Made in the body of ``if not hasattr(self, 'id_tensor'):`` that stores ``self.id_tensor =
    ...``: built the first time only and kept on the object (a conversion's identity kernel)."""
    for if_node, in_body in ctx.enclosing_ifs(call):
        test = if_node.test
        if not in_body or if_node.__class__ is not ast.If or test.__class__ is not ast.UnaryOp or test.op.__class__ is not ast.Not:
            continue
        probe = test.operand
        if probe.__class__ is not ast.Call or last_name(probe.func) != "hasattr" or len(probe.args) != 2 \
                or probe.args[1].__class__ is not ast.Constant or not isinstance(probe.args[1].value, str):
            continue
        owner, attr = ast.dump(probe.args[0]), probe.args[1].value
        if any(n.__class__ is ast.Attribute and n.attr == attr and n.ctx.__class__ is ast.Store and ast.dump(n.value) == owner
               for stmt in if_node.body for n in ast.walk(stmt)):
            return True
    return False


def _lazy_in_loop(ctx: Context, stmt: ast.Assign, name: str) -> bool:
    """``features = None`` before a loop, then inside it ``if features is None: features =
    torch.zeros(n, d); features = features.cuda()``: a store made on the first pass only (its size
    known from the first batch; also when a checkpoint may have restored it in between,
    ``queue = None``, ``if os.path.isfile(p): queue = torch.load(p)``). Not a parameter filled in when it is None (``if h is None: h =
    torch.zeros(...)`` in a ``forward``): that runs on every call."""
    loops = ctx.enclosing_loops(stmt)
    if not loops:
        return False
    loop = loops[0]
    for if_node, in_body in ctx.enclosing_ifs(stmt):
        if if_node.lineno < loop.lineno:
            break
        if in_body and if_node.__class__ is ast.If and _tests_none(if_node.test, name):
            start, stop = (loop.lineno, loop.col_offset), (loop.end_lineno or loop.lineno, 10**6)
            nones = [b.pos for b in ctx.bindings(ctx.scope_of(stmt)).get(name, ())
                     if b.kind == "assign" and b.value.__class__ is ast.Constant and b.value.value is None]
            # queue = None before the loop (maybe loaded since); never set back to None in it
            return any(p < start for p in nones) and not any(start <= p <= stop for p in nones)
    return False


def _tests_none(test: ast.AST, name: str) -> bool:
    """``name is None``, alone or in an ``and`` (``rank == 0 and name is None``)."""
    parts = test.values if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And else [test]
    return any(p.__class__ is ast.Compare and len(p.ops) == 1 and p.ops[0].__class__ is ast.Is
               and p.left.__class__ is ast.Name and p.left.id == name and p.comparators[0].__class__ is ast.Constant
               and p.comparators[0].value is None for p in parts)


def _tests_missing(test: ast.AST, store: str) -> bool:
    """``k not in C``, ``not C``, ``len(C) == 0`` or ``C.get(k) is None`` for the container ``C``."""
    for node in ast.walk(test):
        if node.__class__ is ast.Compare and len(node.ops) == 1:
            op, right = node.ops[0], node.comparators[0]
            if op.__class__ is ast.NotIn and ast.dump(right) == store:
                return True
            left = node.left
            if left.__class__ is ast.Call and left.args and ast.dump(left.args[0]) == store and last_name(left.func) == "len" \
                    and op.__class__ is ast.Eq and right.__class__ is ast.Constant and right.value == 0:
                return True
            if op.__class__ is ast.Is and right.__class__ is ast.Constant and right.value is None and left.__class__ is ast.Call \
                    and left.func.__class__ is ast.Attribute and left.func.attr == "get" and ast.dump(left.func.value) == store:
                return True
        if node.__class__ is ast.UnaryOp and node.op.__class__ is ast.Not and ast.dump(node.operand) == store:
            return True
    return False
