"""Samples generated for the logs inside the training loop (TW104): after the optimizer step, the
network being trained is run in its generation mode (``generator.module(x[:1], lengths[:1],
gen=True)``, ``model.infer(text)``) to draw a spectrogram or an image for TensorBoard, with
autograd on. Nothing backpropagates through it; the graph of a whole generation is kept until
the names are overwritten."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.picturesamples import picture_samples
from torchwise.lint.semantics.steps import hot_loop_of, names_feeding_backward, optimizer_steps

_GEN_FLAGS = frozenset({"gen", "generate", "inference", "infer", "sample", "synthesize"})
_GEN_METHODS = frozenset({"infer", "inference", "generate", "synthesize"})
_NEEDLES = ("gen=True", "generate=True", "inference=True", "infer=True", "sample=True", "synthesize=True",
            ".infer(", ".inference(", ".generate(", ".synthesize(")


def _root(node: ast.AST) -> str | None:
    while node.__class__ is ast.Attribute:
        node = node.value
    return node.id if node.__class__ is ast.Name else None


def _generation_call(call: ast.Call) -> bool:
    if any(k.arg in _GEN_FLAGS and k.value.__class__ is ast.Constant and k.value.value is True for k in call.keywords):
        return True
    return call.func.__class__ is ast.Attribute and call.func.attr in _GEN_METHODS


def logging_samples(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(call, message)`` for each generation run of the trained network after the optimizer step
    of its training loop (see the module doc), and each run whose output only becomes a picture
    (:mod:`.picturesamples`)."""
    yield from picture_samples(ctx)
    src = ctx.source
    if not any(n in src for n in _NEEDLES):
        return
    steps = optimizer_steps(ctx)
    for call in ctx.nodes.get(ast.Call, ()):
        if not call.args or not _generation_call(call) or under_no_grad(ctx, call):
            continue
        loop = hot_loop_of(ctx, call)
        root = _root(call.func)
        if loop is None or root is None or not any(
                ctx.contains(loop, s) and (s.lineno, s.col_offset) < (call.lineno, call.col_offset) for s in steps):
            continue  # only after the loop's optimizer step: a run before it may be the training forward itself
        trained = any(n.__class__ is ast.Call and n is not call and _root(n.func) == root and n.func.__class__ is ast.Name
                      and (n.lineno, n.col_offset) < (call.lineno, call.col_offset) for n in ctx.walk_body(loop.body))
        if not trained:
            continue  # the loop's training forward runs this very network (`generator(x, ...)` before the step)
        stmt = ctx.statement_of(call)
        bound = {n.id for t in getattr(stmt, "targets", ()) for n in ast.walk(t) if n.__class__ is ast.Name}
        if bound & names_feeding_backward(ctx, ctx.scope_of(call)):
            continue
        yield call, (f"{ctx.text(call.func)}(...) generates a sample for the logs after the optimizer step with autograd "
                     "recording; nothing backpropagates through it")


__all__ = ["logging_samples"]
