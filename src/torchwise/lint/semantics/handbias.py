"""A bias a module adds by hand right before its BatchNorm (TW209): a hand-written linear or graph
layer (``output = torch.mm(x, self.weight)``, then ``output = output + self.bias``) whose next step
is ``self.bn(output)``, with ``self.bias = nn.Parameter(...)`` and ``self.bn = nn.BatchNorm1d(...)``
made in ``__init__`` (each maybe under a flag: not one whose default is off)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.semantics.normlayers import bn_dims


def hand_biases(ctx: Context, cls: ast.ClassDef) -> Iterator[ast.Call]:
    """The ``nn.Parameter(...)`` calls of ``__init__`` whose bias ``forward`` adds to a tensor that
    goes straight into a BatchNorm of the module (no other use of it in between)."""
    init = _method(cls, "__init__")
    forward = _method(cls, "forward")
    if init is None or forward is None or "bias" not in ctx.text(forward):
        return
    biases: dict[str, ast.Call] = {}
    norms: set[str] = set()
    for node in ctx.walk_body(init.body):
        if node.__class__ is not ast.Assign or len(node.targets) != 1 or not _enabled(ctx, init, node):
            continue
        attr = _self_attr(node.targets[0])
        value = node.value
        if attr is None or value.__class__ is not ast.Call:
            continue
        if (ctx.qualname(value.func) or "").endswith(".Parameter") or ctx.text(value.func) == "Parameter":
            biases.setdefault(attr, value)
        elif bn_dims(ctx, value) is not None:
            norms.add(attr)
    if not biases or not norms:
        return
    for stmt in ctx.walk_body(forward.body):
        added = _adds_bias(stmt, biases)
        if added is not None and _next_use_normalised(ctx, forward, added[0], stmt, norms):
            yield biases[added[1]]


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((i for i in cls.body if i.__class__ is ast.FunctionDef and i.name == name), None)


def _self_attr(node: ast.AST) -> str | None:
    if node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.value.id == "self":
        return node.attr
    return None


def _adds_bias(stmt: ast.AST, biases: dict[str, ast.Call]) -> tuple[str, str] | None:
    """``out = <expr> + self.bias`` (either side) or ``out += self.bias``: (``out``, ``bias``)."""
    if stmt.__class__ is ast.AugAssign and stmt.op.__class__ is ast.Add and stmt.target.__class__ is ast.Name:
        attr = _self_attr(stmt.value)
        return (stmt.target.id, attr) if attr in biases else None
    if stmt.__class__ is not ast.Assign or len(stmt.targets) != 1 or stmt.targets[0].__class__ is not ast.Name:
        return None
    value = stmt.value
    if value.__class__ is not ast.BinOp or value.op.__class__ is not ast.Add:
        return None
    attr = next((a for a in (_self_attr(value.left), _self_attr(value.right)) if a in biases), None)
    return (stmt.targets[0].id, attr) if attr is not None else None


def _next_use_normalised(ctx: Context, func: ast.FunctionDef, name: str, stmt: ast.AST, norms: set[str]) -> bool:
    """The first read of ``name`` after ``stmt`` in ``func`` is ``self.<norm>(name)``."""
    after = (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)
    reads = sorted((n for n in ast.walk(func) if n.__class__ is ast.Name and n.id == name
                    and n.ctx.__class__ is ast.Load and (n.lineno, n.col_offset) > after),
                   key=lambda n: (n.lineno, n.col_offset))
    if not reads:
        return False
    call = ctx.parent(reads[0])
    return call.__class__ is ast.Call and call.args == [reads[0]] and not call.keywords \
        and _self_attr(call.func) in norms


def _enabled(ctx: Context, init: ast.FunctionDef, node: ast.AST) -> bool:
    """Not under ``if flag:`` where ``flag`` is a parameter of ``__init__`` whose default is off."""
    params = [*init.args.posonlyargs, *init.args.args]
    defaults = dict(zip([a.arg for a in params][::-1], init.args.defaults[::-1]))
    for if_node, in_body in ctx.enclosing_ifs(node):
        test = if_node.test
        default = defaults.get(test.id) if in_body and test.__class__ is ast.Name else None
        if default is not None and default.__class__ is ast.Constant and not default.value:
            return False
    return True
