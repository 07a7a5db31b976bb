"""Losses: loss modules and functionals, and values that evidently hold a loss tensor."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.steps import backwarded_names


LOSS_FUNCTIONALS = frozenset({
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "gaussian_nll_loss", "hinge_embedding_loss", "margin_ranking_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "soft_margin_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "cosine_embedding_loss", "ctc_loss",
})
_LOSS_CALLABLE = lazy_compile(
    r"^(criterion|criterion_\w+|\w+_criterion|loss_fn|loss_func|lossfn|loss_function|loss_fct|"
    r"\w+_loss_fn|compute_loss|calc_loss|get_loss)$",
    re.I,
)


def is_loss_class(ctx: Context, built: str | None) -> bool:
    if built is None:
        return False
    if built.startswith("torch.nn.") and built.endswith("Loss") and built.count(".") == 2:
        return True
    if built.startswith("local:"):
        name = built[6:]
        bases = ctx.local_class_bases(name)
        if any(b.startswith("torch.nn.") and (b.endswith("Loss") or b.endswith("._Loss")) for b in bases):
            return True
    return False


def is_loss_call(ctx: Context, call: ast.Call, heuristic: bool = True) -> bool:
    """A call that evidently computes a loss value (``heuristic``: also trust names such as
    ``criterion(...)``/``loss_fn(...)`` whose construction is not visible)."""
    func = call.func
    q = ctx.qualname(func)
    if q is not None:
        return q.startswith("torch.nn.functional.") and q.rsplit(".", 1)[1] in LOSS_FUNCTIONALS
    if func.__class__ is ast.Call:  # nn.CrossEntropyLoss()(out, y)
        return is_loss_class(ctx, ctx._call_target(func))
    if is_loss_class(ctx, ctx.constructed_from(func, call)):
        return True
    if not heuristic:
        return False
    name = last_name(func)
    return bool(name and _LOSS_CALLABLE.match(name))


def is_loss_value(ctx: Context, expr: AST | None, use: AST | None = None, depth: int = 4, heuristic: bool = True) -> bool:
    """Does ``expr`` evidently hold a loss tensor (with its autograd graph)?"""
    if expr is None or depth <= 0:
        return False
    use = use or expr
    cls = expr.__class__
    if cls is ast.Call:
        if is_loss_call(ctx, expr, heuristic):
            return True
        func = expr.func
        if func.__class__ is ast.Attribute and func.attr in ("mean", "sum") and not expr.args:
            return is_loss_value(ctx, func.value, use, depth - 1, heuristic)
        return False
    if cls is ast.BinOp:
        return is_loss_value(ctx, expr.left, use, depth - 1, heuristic) or is_loss_value(ctx, expr.right, use, depth - 1, heuristic)
    if cls is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is None:
            return False
        if b.kind in ("assign", "walrus"):
            if is_loss_value(ctx, b.value, b.node, depth - 1, heuristic):
                return True
        elif b.kind == "aug":
            if is_loss_value(ctx, b.value, b.node, depth - 1, heuristic):
                return True
        # a backward pass was started from this name after its last binding
        positions = backwarded_names(ctx, ctx.scope_of(use)).get(expr.id)
        return bool(positions) and positions[-1] >= b.pos
    return False
