"""A data-dependent stop of the algorithm written through a flag (TW207, ruling R9): ``if approx_kl >
args.target_kl: stop = True`` with ``if stop: break`` in the same function (a PPO KL early stop that
finishes the current pass before it leaves the loop). The test needs its value on the host to decide."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.deadmethods import function_at


def flag_stop(ctx: Context, node: AST) -> bool:
    """``node`` is an ``if`` with no ``else`` whose body only sets names to ``True``/``False``, and one
    of them is tested by an ``if`` of the same function whose body ends with ``break`` (``if stop:
    break`` after ``stop = True``, ``if not go_on: break`` after ``go_on = False``) or by a ``while``
    it ends (``while go_on:``)."""
    if node.__class__ is not ast.If or node.orelse or not node.body:
        return False
    flags: dict[str, bool] = {}
    for stmt in node.body:
        if stmt.__class__ is not ast.Assign or len(stmt.targets) != 1 or stmt.targets[0].__class__ is not ast.Name \
                or stmt.value.__class__ is not ast.Constant or stmt.value.value not in (True, False):
            return False
        flags[stmt.targets[0].id] = stmt.value.value is True
    func = function_at(ctx, node.lineno)
    scope = func if func is not None else ctx.tree
    for other in ast.walk(scope):
        if other is node or other.__class__ not in (ast.If, ast.While):
            continue
        name, negated = _flag_test(other.test)
        if name not in flags:
            continue
        if other.__class__ is ast.While and flags[name] == negated:
            return True  # (``while ok:`` after ``ok = False``, ``while not done:`` after ``done = True``)
        if other.__class__ is ast.If and flags[name] != negated and other.body and other.body[-1].__class__ is ast.Break:
            return True  # (``if stop: break`` after ``stop = True``, ``if not ok: break`` after ``ok = False``)
    return False


def _flag_test(test: AST) -> tuple[str | None, bool]:
    if test.__class__ is ast.Name:
        return test.id, False
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not and test.operand.__class__ is ast.Name:
        return test.operand.id, True
    return None, False


__all__ = ["flag_stop"]
