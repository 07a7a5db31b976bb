"""Epochs handed on by a scheduler that wraps another (for TW502): a warm-up scheduler written as a
subclass of torch's ``_LRScheduler`` that, once warm, steps the scheduler it was given with an
epoch of its own - ``self.after_scheduler.step(epoch - self.total_epoch)`` where a test on its
type rules out a ``ReduceLROnPlateau`` (whose one argument is the metric), or
``self.after_scheduler.step(metrics, epoch - self.total_epoch)`` for a ``ReduceLROnPlateau``.
Both pass the epoch argument that ``lr_scheduler.step`` deprecates (and that switches the
chainable schedulers to their closed form)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context

_SCHEDULERS = "torch.optim.lr_scheduler."


def _epoch_like(node: AST) -> bool:
    """An expression that names an epoch (``epoch - self.total_epoch``, ``self.last_epoch``)."""
    if node.__class__ is ast.Constant:
        return False
    for n in ast.walk(node):
        name = n.id if n.__class__ is ast.Name else n.attr if n.__class__ is ast.Attribute else ""
        if "epoch" in name.lower():
            return True
    return False


def _plateau_test(test: AST) -> bool | None:
    """For an ``if`` test on the wrapped scheduler's type: True when it holds for a plateau
    scheduler (``isinstance(s, ReduceLROnPlateau)``, ``type(s) == ReduceLROnPlateau``), False when it
    rules one out (``type(s) != ReduceLROnPlateau``, ``not isinstance(...)``); None for other tests."""
    negate = False
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        test, negate = test.operand, True
    if not any(n.__class__ in (ast.Name, ast.Attribute) and (n.id if n.__class__ is ast.Name else n.attr) == "ReduceLROnPlateau"
               for n in ast.walk(test)):
        return None
    if test.__class__ is ast.Compare and len(test.ops) == 1:
        holds = test.ops[0].__class__ in (ast.Eq, ast.Is)
    elif test.__class__ is ast.Call:
        holds = True  # isinstance(self.after_scheduler, ReduceLROnPlateau)
    else:
        return None
    return holds != negate


def _not_plateau(ctx: Context, call: ast.Call) -> bool:
    """The call sits in a branch of an ``if`` on the scheduler's type that rules out a plateau
    scheduler (the warm-up scheduler's ``if type(self.after_scheduler) != ReduceLROnPlateau:``)."""
    for if_node, in_body in ctx.enclosing_ifs(call):
        if if_node.__class__ is ast.If:
            holds = _plateau_test(if_node.test)
            if holds is not None:
                return holds is not in_body
    return False


def handed_on_epochs(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(call, attribute)`` for every ``self.<scheduler>.step(...)`` with an epoch, in a method of a
    class of this file derived from a torch learning-rate scheduler: one argument that names an
    epoch, or two (a plateau scheduler's metric, then an epoch) whose second is not ``None``."""
    for klass in ctx.nodes.get(ast.ClassDef, ()):
        if not any(b.startswith(_SCHEDULERS) for b in ctx.local_class_bases(klass.name)):
            continue
        for call in ctx.calls_named("step"):
            func = call.func
            recv = func.value if func.__class__ is ast.Attribute else None
            if recv.__class__ is not ast.Attribute or recv.value.__class__ is not ast.Name or recv.value.id != "self" \
                    or "sched" not in recv.attr.lower() or ctx.class_of(call) is not klass:
                continue
            args = list(call.args)
            epoch = next((k.value for k in call.keywords if k.arg == "epoch"), None)
            if epoch is None and len(args) == 2:
                epoch = args[1]  # ReduceLROnPlateau.step(metrics, epoch)
            elif epoch is None and len(args) == 1 and not call.keywords and _epoch_like(args[0]) and _not_plateau(ctx, call):
                epoch = args[0]  # (on a ReduceLROnPlateau the one argument is the metric: a branch that rules it out)
            if epoch is None or epoch.__class__ is ast.Constant and epoch.value is None or _maybe_none(ctx, epoch, call):
                continue
            yield call, recv.attr


def _maybe_none(ctx: Context, epoch: AST, call: ast.Call) -> bool:
    """``step(metric, epoch)`` handing on the method's own ``epoch=None`` parameter unchecked: it
    warns only when a caller passes an epoch (``epoch - self.total_epoch`` cannot be None; an
    ``if epoch is None: ... else:`` around the call rules None out)."""
    if epoch.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(epoch.id, call)
    if b is None or b.kind != "param":
        return False
    for if_node, in_body in ctx.enclosing_ifs(call):
        test = if_node.test
        if test.__class__ is ast.Compare and len(test.ops) == 1 and test.left.__class__ is ast.Name \
                and test.left.id == epoch.id and test.comparators[0].__class__ is ast.Constant and test.comparators[0].value is None:
            return (test.ops[0].__class__ is ast.Is) == in_body  # in the branch where it is None
    return True
