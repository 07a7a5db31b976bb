"""Python tests of device values in a loss function the training step calls every step (TW207):
``if torch.sum(is_unlabeled) > 0:``, ``if mask.sum() > 0:``, ``assert picked.size(0) == n_hard``
with ``n_hard = hard.sum()`` - a reduction of what the step handed the loss, read as a Python
bool. Not the skip of a pass (``continue``/``break``: R9), nor tests under ``if prototype is not None:``
(state handed in by some calls only: ``if not (prototype == 0).all():``), nor tests of sizes, shapes or host arrays."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.forwardreads import from_inputs
from torchwise.lint.semantics.lossreads import PerStep, every_step_call, guarding_parameter
from torchwise.lint.semantics.masks import in_losses_module, on_host
from torchwise.lint.semantics.rarely import runs_rarely
from torchwise.lint.semantics.steps import hot_region_of, runs_periodically

TEST_FIX = "compute both branches without the test (weight by the mask, torch.where; an empty selection sums to 0)"
_REDUCTIONS = frozenset({"sum", "any", "all", "count_nonzero", "max", "min", "mean"})
_COMPARES = (ast.Eq, ast.NotEq, ast.Lt, ast.Gt, ast.LtE, ast.GtE)


def loss_tests(ctx: Context, per_step: PerStep) -> Iterator[tuple[AST, AST, str]]:
    """``(test, function, where it runs every step)``: each test above in a function named for a
    loss or a criterion (or any top-level function of a module of losses) that the training step
    calls every step with device tensors (semantics.lossreads)."""
    if not any(f".{r}(" in ctx.source for r in _REDUCTIONS):  # (the reductions the test reads)
        return
    for node in [*ctx.nodes.get(ast.If, ()), *ctx.nodes.get(ast.Assert, ())]:
        func = ctx.function_of(node)
        if func is None or hot_region_of(ctx, node) is not None or not _loss_like(ctx, func):
            continue
        if node.__class__ is ast.If and node.body[0].__class__ in (ast.Continue, ast.Break):
            continue  # skips a pass when a selection is empty (R9)
        if _device_test(ctx, node.test, func) and not runs_periodically(ctx, node) and not runs_rarely(ctx, node) \
                and guarding_parameter(ctx, node, func) is None:  # (not a test of state an optional argument carries in)
            where = every_step_call(ctx, func, per_step)
            if where is not None:
                yield node.test, func, where


def _loss_like(ctx: Context, func: AST) -> bool:
    name = func.name.lower()
    return "loss" in name or "criterion" in name or ctx.parent(func) is ctx.tree and in_losses_module(ctx)


def _device_test(ctx: Context, test: AST, func: AST) -> bool:
    """A comparison of a reduction of the function's inputs (``mask.sum() > 0``), or such a reduction
    tested as is (``if valid.any():``)."""
    if test.__class__ is ast.BoolOp:
        return any(_device_test(ctx, v, func) for v in test.values)
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        return _device_test(ctx, test.operand, func)
    if test.__class__ is ast.Compare:
        return all(op.__class__ in _COMPARES for op in test.ops) \
            and any(_reduction(ctx, side, func, test) for side in [test.left, *test.comparators])
    return _reduction(ctx, test, func, test)


def _reduction(ctx: Context, expr: AST, func: AST, use: AST, depth: int = 1) -> bool:
    """``torch.sum(m)``/``m.sum()``/``m.any()`` of a tensor computed from the inputs, on the device;
    or a name the function binds to one (``n_hard = hard.sum()``)."""
    if expr.__class__ is ast.Name and depth > 0:
        b = ctx.binding_at(expr.id, use)
        return b is not None and b.kind == "assign" and b.value is not None and ctx.function_of(b.node) is func \
            and _reduction(ctx, b.value, func, b.node, depth - 1)
    if expr.__class__ is not ast.Call or last_name(expr.func) not in _REDUCTIONS or expr.func.__class__ is not ast.Attribute:
        return False
    q = ctx.qualname(expr.func)
    if q is not None:  # torch.sum(m): a function of torch
        subject = expr.args[0] if q.startswith("torch.") and expr.args else None
    else:  # m.sum(): a method (no dim: the whole tensor)
        subject = expr.func.value if not expr.args and not expr.keywords else None
    return subject is not None and subject.__class__ is not ast.Attribute and from_inputs(ctx, subject, func) \
        and not on_host(ctx, subject, func)
