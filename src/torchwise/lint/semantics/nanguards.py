"""NaN/inf guards on a value of the training step (TW207): ``if torch.isnan(loss).any(): raise
...``, ``if not torch.isfinite(loss):``, ``if loss.isnan().any() or loss.isinf().any():``. The test
reads the tensor on the host every step, whatever the branch does (it checks the step's result,
the algorithm needs nothing from it: ruling R9). Unlike a plain tensor test, the checked value
counts when it is any device value of the step - a loss a step method hands back
(``loss = self.train_step(batch)``), a term of the backward pass - not only one whose device
:func:`~.devices.is_device_tensor` sees."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.steps import modulo_test
from torchwise.lint.semantics.stepvalues import step_subject

_CHECKS = frozenset({"isnan", "isinf", "isfinite", "isneginf", "isposinf"})
_REDUCTIONS = frozenset({"any", "all"})


def nan_guard(ctx: Context, test: AST, use: AST) -> AST | None:
    """The part of an ``if``/``while`` test that checks a step value for NaN or inf on the host
    (``torch.isnan(loss).any()``), or None. ``math.isnan``/``np.isnan`` are left out (they take a
    number read already, or raise on a CUDA tensor: reported at the read)."""
    cls = test.__class__
    if cls is ast.BoolOp:
        for v in test.values:
            if test.op.__class__ is ast.And and modulo_test(ctx, v):
                return None  # `if i % 200 == 0 and torch.isnan(loss).any():` tests only once per interval
            if (part := nan_guard(ctx, v, use)) is not None:
                return part
        return None
    if cls is ast.UnaryOp and test.op.__class__ is ast.Not:
        return nan_guard(ctx, test.operand, use)
    if cls is not ast.Call or test.func.__class__ is not ast.Attribute:
        return None
    func = test.func
    if func.attr in _REDUCTIONS and not test.args and func.value.__class__ is ast.Call:
        inner = func.value  # torch.isnan(loss).any()
        if inner.func.__class__ is not ast.Attribute or inner.func.attr not in _CHECKS:
            return None
        func, test_call = inner.func, inner
    elif func.attr in _CHECKS:
        test_call = test  # torch.isnan(loss) on a 0-dim loss
    else:
        return None
    q = ctx.qualname(func)
    if q is not None:
        subject = test_call.args[0] if q == f"torch.{func.attr}" and len(test_call.args) == 1 else None
    else:
        subject = func.value if not test_call.args else None  # loss.isnan()
    if subject is None or subject.__class__ not in (ast.Name, ast.Attribute, ast.Subscript):
        return None
    return test if step_subject(ctx, subject, use) else None
