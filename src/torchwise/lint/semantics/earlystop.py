"""The best-so-far test of a patience early stop (TW207, ruling R9): ``if loss < best: best = loss;
wait = 0`` / ``else: wait += 1`` and later in the same loop ``if wait == patience: break``. The
algorithm needs the comparison on the host to decide whether to stop; the read that only logs
(``print(loss.item())``) is still reported."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

_ORDER = (ast.Lt, ast.Gt, ast.LtE, ast.GtE)


def patience_stop(ctx: Context, node: AST) -> bool:
    """``node`` is an ``if`` comparing a value with a best-so-far name its branch rebinds from that
    value (``best = loss``), that also sets a counter (``cnt_wait = 0`` or ``+= 1`` in either
    arm), and a test of that counter in the same loop ends the loop (``if cnt_wait == patience: break``)."""
    if node.__class__ is not ast.If or node.test.__class__ is not ast.Compare or len(node.test.ops) != 1 \
            or node.test.ops[0].__class__ not in _ORDER:
        return False
    sides = [ctx.text(node.test.left), ctx.text(node.test.comparators[0])]
    rebinds = False
    counters: set[str] = set()
    for stmt in [*node.body, *node.orelse]:
        if stmt.__class__ is ast.Assign and len(stmt.targets) == 1:
            target = ctx.text(stmt.targets[0])
            if target in sides and any(s != target and s in ctx.text(stmt.value) for s in sides):
                rebinds = True  # best = loss (also best = loss.item())
            elif stmt.targets[0].__class__ is ast.Name and stmt.value.__class__ is ast.Constant:
                counters.add(stmt.targets[0].id)  # cnt_wait = 0
        elif stmt.__class__ is ast.AugAssign and stmt.target.__class__ is ast.Name:
            counters.add(stmt.target.id)  # cnt_wait += 1
    loops = ctx.enclosing_loops(node) if rebinds and counters else []
    if not loops:
        return False
    loop = loops[0]  # (the innermost: the loop the stop ends)
    for other in ast.walk(loop):
        if other.__class__ is ast.If and other is not node and any(s.__class__ is ast.Break for s in other.body) \
                and any(n.__class__ is ast.Name and n.id in counters for n in ast.walk(other.test)):
            return True
    return False


__all__ = ["patience_stop"]
