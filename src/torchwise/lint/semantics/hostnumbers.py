"""Values that are plain Python numbers, never tensors (TW207): a number constant, a cast to a
Python number (``float(...)``, ``int(...)``, ``round(...)``, ``len(...)``, ``x.item()``), a
``math`` function, an argparse option (``args.lr`` with ``args = parser.parse_args()``),
arithmetic and conditional expressions of those, and a call of a function of the file or of
the project whose every ``return`` is such a number, followed through helpers
(``get_current_consistency_weight(it)`` returning ``args.consistency * ramps.sigmoid_rampup(it, n)``,
which returns ``1.0`` or ``float(np.exp(...))``). A ramp-up weight multiplied into the loss is
such a number: handing it to ``writer.add_scalar`` reads nothing from the device."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.projecthelpers import project_function

_CASTS = frozenset({"float", "int", "round", "len", "bool"})


def host_number(ctx: Context, expr: AST | None, use: AST, depth: int = 4) -> bool:
    """``expr`` holds a Python number on every path (see the module's doc)."""
    cls = expr.__class__
    if cls is ast.Constant:
        return type(expr.value) in (int, float, bool)
    if cls is ast.UnaryOp:
        return host_number(ctx, expr.operand, use, depth)
    if cls is ast.BinOp:
        return host_number(ctx, expr.left, use, depth) and host_number(ctx, expr.right, use, depth)
    if cls is ast.IfExp:
        return host_number(ctx, expr.body, use, depth) and host_number(ctx, expr.orelse, use, depth)
    if cls is ast.Attribute:
        return _option(ctx, expr, use)
    if cls is ast.Subscript:
        return _learning_rate(ctx, expr, use) or depth > 0 and _returned_element(ctx, expr, use, depth - 1)
    if cls is ast.Name:
        if depth <= 0:
            return False
        b = ctx.binding_at(expr.id, use)
        return b is not None and b.kind == "assign" and b.value is not None and host_number(ctx, b.value, b.node, depth - 1)
    if cls is not ast.Call:
        return False
    func = expr.func
    if func.__class__ is ast.Name and func.id in _CASTS and ctx.qualname(func) in (None, func.id, f"builtins.{func.id}"):
        return True
    if func.__class__ is ast.Attribute and func.attr == "item" and not expr.args:
        return True
    q = ctx.qualname(func)
    if q is not None and q.startswith("math."):
        return True
    if depth <= 0 or q is not None and q.startswith(("torch.", "numpy.")):
        return False
    found = project_function(ctx, expr)
    return found is not None and _returns_numbers(found[0], found[1], depth - 1)


def _returns_numbers(where: Context, func: AST, depth: int) -> bool:
    """Every ``return`` of ``func`` hands back a Python number (and it has one, and no ``yield``)."""
    key = ("sem:host-number-returns", id(func))
    found = where._cache.get(key)
    if found is None:
        where._cache[key] = False  # (a recursive helper proves nothing)
        returns = []
        for node in where.walk_body(func.body):
            if node.__class__ in (ast.Yield, ast.YieldFrom):
                returns = []
                break
            if node.__class__ is ast.Return:
                returns.append(node)
        found = bool(returns) and all(r.value is not None and host_number(where, r.value, r, depth) for r in returns)
        where._cache[key] = found
    return found


def _learning_rate(ctx: Context, expr: ast.Subscript, use: AST) -> bool:
    """``group['lr']`` of an optimizer's parameter group (``for group in optimizer.param_groups``,
    ``optimizer.param_groups[0]['lr']``): a Python float the scheduler sets."""
    key = expr.slice
    if key.__class__ is not ast.Constant or key.value != "lr":
        return False
    base = expr.value
    if base.__class__ is ast.Subscript:
        base = base.value
    elif base.__class__ is ast.Name:
        b = ctx.binding_at(base.id, use)
        base = b.value if b is not None and b.kind == "for" else None
    return base.__class__ is ast.Attribute and base.attr == "param_groups"


def _returned_element(ctx: Context, expr: ast.Subscript, use: AST, depth: int) -> bool:
    """``outputs[4]`` with ``outputs = train(...)``, a function of the project every ``return`` of
    which hands back a tuple whose element 4 is a Python number (``get_lr(optimizer)``,
    ``loss.item()``)."""
    index, base = expr.slice, expr.value
    if index.__class__ is not ast.Constant or type(index.value) is not int or index.value < 0 or base.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(base.id, use)
    if b is None or b.kind != "assign" or b.value.__class__ is not ast.Call:
        return False
    found = project_function(ctx, b.value)
    if found is None:
        return False
    where, func = found
    returns = [n for n in where.walk_body(func.body) if n.__class__ in (ast.Return, ast.Yield, ast.YieldFrom)]
    return bool(returns) and all(r.__class__ is ast.Return and r.value.__class__ is ast.Tuple and len(r.value.elts) > index.value
                                 and host_number(where, r.value.elts[index.value], r, depth) for r in returns)


def _option(ctx: Context, expr: ast.Attribute, use: AST) -> bool:
    """``args.consistency`` with ``args`` bound to ``parser.parse_args()``: an option's value."""
    base = expr.value
    if base.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(base.id, use)
    value = b.value if b is not None and b.kind == "assign" else None
    return value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr == "parse_args"

