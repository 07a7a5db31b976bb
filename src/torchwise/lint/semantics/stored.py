"""Tensors stored in a name and moved later: ``m = torch.ones(n)`` then ``m = m.cuda()``, or
joined with ``torch.cat([x, m])`` and moved in the next statement (TW205)."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, Context, keyword
from torchwise.lint.semantics.devices import is_device_tensor

_JOINS = ("torch.cat", "torch.concat", "torch.concatenate", "torch.stack")


def stored_then_moved(ctx: Context, recv: ast.Name, call: ast.Call, unpacked: bool = False) -> bool:
    """``recv`` was assigned in the same function (and loop) as ``call`` with no use of it in
    between (writing a constant into it, ``m[:, 0] = 4``, is part of making it): the move (or the join that is moved) is the next thing done with the new tensor.
    ``unpacked``: also a name unpacked from a tuple (``yy, xx = torch.meshgrid(...)``)."""
    b = ctx.binding_at(recv.id, call)
    if b is None or b.kind not in (("assign", "unpack") if unpacked else ("assign",)) or b.value is None \
            or ctx.scope_of(b.node) is not ctx.scope_of(call):
        return False
    start, here = b.pos, (recv.lineno, recv.col_offset)
    other = _other_branch(ctx, recv)
    skipped = _branches_not_taken(ctx, call, b.node)
    for pos in name_positions(ctx).get(recv.id, ()):
        if start <= pos < here and pos != other and not any(first <= pos[0] <= last for first, last in skipped):
            return False  # used in between: needed on the CPU first
    return ctx.enclosing_loops(b.node)[:1] == ctx.enclosing_loops(call)[:1]


def _other_branch(ctx: Context, recv: ast.Name) -> tuple[int, int] | None:
    """``c if device is None else c.to(device)``: where the other branch names ``recv`` (not a use
    before the move: only one branch runs)."""
    node = recv
    for anc in ctx.ancestors(recv):
        if anc.__class__ is ast.IfExp:
            alt = anc.body if node is anc.orelse else anc.orelse if node is anc.body else None
            if alt is not None and alt.__class__ is ast.Name and alt.id == recv.id:
                return alt.lineno, alt.col_offset
        if isinstance(anc, ast.stmt):
            return None
        node = anc
    return None


def _branches_not_taken(ctx: Context, call: AST, made: AST) -> list[tuple[int, int]]:
    """The lines of the ``if`` bodies that cannot run before ``call``: ``if mse: ... one_hot(y) ...
    else: y = y.cuda()`` - the move sits in the ``else`` of an ``if`` that comes after ``made``."""
    out = []
    for if_node, in_body in ctx.enclosing_ifs(call):
        if not in_body and if_node.__class__ is ast.If and if_node.body and if_node.lineno > made.lineno:
            out.append((if_node.body[0].lineno, if_node.body[-1].end_lineno or if_node.body[-1].lineno))
    return out


def branch_alternatives(ctx: Context, stmt: AST, name: str) -> list[AST]:
    """The values the other branches of the ``if``/``elif``/``else`` chain around ``stmt`` (an
    assignment to ``name``) give ``name`` as their last statement-level assignment: ``if shake:
    alpha = torch.rand(1)`` / ``else: alpha = torch.FloatTensor([0.5])``, then ``alpha =
    alpha.to(device)`` - each branch makes the tensor that is moved."""
    out = []
    node = stmt
    for anc in ctx.ancestors(stmt):
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            break
        if anc.__class__ is ast.If:
            for branch in (anc.body, anc.orelse):
                if node in branch:
                    continue
                for i in range(len(branch) - 1, -1, -1):
                    s = branch[i]
                    if s.__class__ is ast.Assign and len(s.targets) == 1 and s.targets[0].__class__ is ast.Name \
                            and s.targets[0].id == name:
                        out.append(s.value)  # the branch's last word on the name
                        break
                    if any(n.__class__ is ast.Name and n.id == name for n in ast.walk(s)):
                        break  # used or changed after it is made: not simply made and moved
        elif isinstance(anc, ast.stmt):
            break  # a loop or a with: the chain ends here
        node = anc
    return out


def joined_names(ctx: Context, expr: AST, methods: frozenset[str]) -> list[ast.Name]:
    """The names joined by ``torch.cat([a, m], dim).float()`` (through retyping/reshaping
    ``methods``). Every part of a join is on one device, so a fresh CPU part means a CPU join."""
    while expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in methods \
            and ctx.qualname(expr.func) is None:
        expr = expr.func.value
    if expr.__class__ is not ast.Call or ctx.qualname(expr.func) not in _JOINS or not expr.args:
        return []
    parts = expr.args[0]
    if parts.__class__ not in (ast.List, ast.Tuple):
        return []
    return [p for p in parts.elts if p.__class__ is ast.Name]


def name_positions(ctx: Context) -> dict[str, list[tuple[int, int]]]:
    found = ctx._cache.get("tw205:names")
    if found is None:
        found = {}
        for name in ctx.nodes.get(ast.Name, ()):
            if name.ctx.__class__ is not ast.Load:
                continue
            parent = ctx.parent(name)
            if parent.__class__ is ast.Compare and _none_test(ctx, name) or parent.__class__ is ast.Subscript \
                    and _constant_fill(ctx, name):
                continue
            found.setdefault(name.id, []).append((name.lineno, name.col_offset))
        ctx._cache["tw205:names"] = found
    return found


def _constant_fill(ctx: Context, name: ast.Name) -> bool:
    """``m[:, 0] = 4`` (or ``c[rows, y] = 1.``): a constant written into the new tensor or array in
    place - part of making it, not a use that needs it where it was made."""
    sub, held = ctx.parent(name), name.id
    while sub.__class__ is ast.Subscript and sub.ctx.__class__ is ast.Load and ctx.parent(sub).__class__ is ast.Subscript \
            and ctx.parent(sub).value is sub:
        name, sub = sub, ctx.parent(sub)  # a[0][idx] = 1
    stmt = ctx.parent(sub)
    if sub.__class__ is not ast.Subscript or sub.value is not name or sub.ctx.__class__ is not ast.Store \
            or stmt.__class__ is not ast.Assign:
        return False
    value = stmt.value.operand if stmt.value.__class__ is ast.UnaryOp else stmt.value
    return value.__class__ is ast.Constant and isinstance(value.value, (int, float, bool)) \
        and not _per_item_write(ctx, stmt, held)


_PASS_THROUGH = frozenset({"enumerate", "zip", "sorted", "reversed", "list", "tuple"})


def _per_item_write(ctx: Context, stmt: AST, name: str) -> bool:
    """``for j, k in enumerate(idx): stop[j, :lengths[k]] = 0`` on a tensor made before the loop:
    the pattern written in comes from the items of data (a mask or target assembled on the host
    from a batch's metadata), so the tensor holds data that has to cross anyway. Not a loop over
    ``range(...)`` or constants (a pattern made from sizes)."""
    loops = ctx.enclosing_loops(stmt)
    if not loops or loops[0].__class__ not in (ast.For, ast.AsyncFor):
        return False
    loop = loops[0]
    it = loop.iter
    while it.__class__ is ast.Call and it.func.__class__ is ast.Name and it.func.id in _PASS_THROUGH and it.args:
        it = it.args[0]
    if it.__class__ is ast.Call and it.func.__class__ is ast.Name and it.func.id == "range" \
            or it.__class__ in (ast.List, ast.Tuple, ast.Constant):
        return False
    return not any(n.__class__ is ast.Name and n.id == name and n.ctx.__class__ is ast.Store
                   for n in ctx.walk_body(loop.body))  # made inside the loop: the write is part of making it


def _none_test(ctx: Context, name: ast.Name) -> bool:
    """``x is not None`` / ``x is None``: a test of whether the tensor was made, not a use of it
    (``if coverage is not None: coverage = coverage.cuda()``)."""
    parent = ctx.parent(name)
    return parent.__class__ is ast.Compare and parent.left is name and len(parent.ops) == 1 \
        and parent.ops[0].__class__ in (ast.Is, ast.IsNot) and parent.comparators[0].__class__ is ast.Constant \
        and parent.comparators[0].value is None


def host_built(ctx: Context, expr: AST | None, use: AST, made: Callable[[AST], bool], methods: frozenset[str],
               depth: int = 2) -> bool:
    """A tensor made on the CPU in this function: a factory with no device
    (``torch.tensor(self.p).float()``), or a torch function with no device whose tensor
    arguments are all so made (``torch.bernoulli(torch.tensor(p))``)."""
    while expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in methods \
            and ctx.qualname(expr.func) is None and not made(expr):
        expr = expr.func.value  # .float(), .view(...) keep the device
    if expr.__class__ in (ast.Compare, ast.BinOp) and depth:  # torch.rand(1) < self.p
        parts = [expr.left, expr.right] if expr.__class__ is ast.BinOp else [expr.left, *expr.comparators]
        sides = [host_built(ctx, e, use, made, methods, depth - 1) for e in parts]
        return any(sides) and all(m or _scalar(e) and not is_device_tensor(ctx, e, use) for m, e in zip(sides, parts))
    if expr is None or expr.__class__ is not ast.Call:
        return False
    if made(expr):
        return True
    q = ctx.qualname(expr.func) or ""
    if depth == 0 or not q.startswith("torch.") or q.count(".") != 1 or keyword(expr, "device") is not None or not expr.args:
        return False
    if q in ("torch.tensor", "torch.as_tensor"):  # torch.tensor(self.p): a number held by the module
        arg = expr.args[0]
        return _scalar(arg) and not is_device_tensor(ctx, arg, use)
    return all(a.__class__ is ast.Constant or host_built(ctx, a, use, made, methods, depth - 1) for a in expr.args)


def _scalar(node: ast.AST) -> bool:
    """A number, a name or a module's setting (``self.p``; not ``.weight``/``.data``)."""
    return _number_like(node) or node.__class__ is ast.Attribute and node.attr not in _TENSOR_ATTRS


_TENSOR_ATTRS = frozenset({"weight", "bias", "data", "grad"})


def _number_like(node: AST) -> bool:
    if node.__class__ is ast.UnaryOp:
        node = node.operand
    return node.__class__ in (ast.Constant, ast.Name)
