"""TW102: probabilities (softmax output) given to a loss that expects logits or log-probabilities."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.values import producing_call

_SOFTMAX = {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"}
_LOG_SOFTMAX = {"torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax"}


def activation_of(ctx: Context, expr: ast.AST | None, use: ast.AST | None = None, depth: int = 4) -> str | None:
    """``"softmax"`` / ``"log_softmax"`` when ``expr`` evidently is such an output, else None.

    Knows ``F.softmax(x)``, ``torch.softmax(x)``, ``x.softmax(dim)``, ``nn.Softmax(dim)(x)``, an
    ``nn.Softmax`` instance called on ``x``, an ``nn.Sequential`` whose last layer is one, and names
    bound to any of these.
    """
    expr = producing_call(ctx, expr, use, depth)
    if expr is None:
        return None
    func = expr.func
    q = ctx.qualname(func)
    if q is not None:
        if q in _SOFTMAX:
            return "softmax"
        if q in _LOG_SOFTMAX:
            return "log_softmax"
        return None
    if func.__class__ is ast.Attribute and func.attr in ("softmax", "log_softmax") and expr.args or (
        func.__class__ is ast.Attribute and func.attr in ("softmax", "log_softmax") and any(k.arg == "dim" for k in expr.keywords)
    ):
        return func.attr
    built = ctx._call_target(func) if func.__class__ is ast.Call else ctx.constructed_from(func, expr)
    if built is not None and built.startswith("local:") and depth > 0:
        return _forward_returns(ctx, built[6:], depth - 1)
    if built == "torch.nn.Softmax":
        return "softmax"
    if built == "torch.nn.LogSoftmax":
        return "log_softmax"
    if built == "torch.nn.Sequential":
        seq = func if func.__class__ is ast.Call else ctx.resolve(func, expr)
        if seq is not None and seq.__class__ is ast.Call and seq.args:
            last = ctx._call_target(seq.args[-1])
            if last == "torch.nn.Softmax":
                return "softmax"
            if last == "torch.nn.LogSoftmax":
                return "log_softmax"
    return None


def _forward_returns(ctx: Context, name: str, depth: int) -> str | None:
    """A module of the file whose ``forward`` ends in ``return F.log_softmax(x)`` (every return of
    it the same activation): calling it gives that activation's output."""
    klass = ctx.local_classes.get(name)
    forward = next((f for f in klass.body if f.__class__ is ast.FunctionDef and f.name == "forward"), None) if klass else None
    if forward is None:
        return None
    kinds = {activation_of(ctx, r.value, r, depth) if r.value is not None else None
             for r in ctx.walk_body(forward.body) if r.__class__ is ast.Return}
    return kinds.pop() if len(kinds) == 1 else None


def loss_kind(ctx: Context, call: ast.Call) -> str | None:
    """``"ce"`` for cross-entropy, ``"nll"`` for NLL loss calls, else None."""
    q = ctx.qualname(call.func)
    if q is not None:
        if q == "torch.nn.functional.cross_entropy":
            return "ce"
        if q == "torch.nn.functional.nll_loss":
            return "nll"
        return None
    func = call.func
    built = ctx._call_target(func) if func.__class__ is ast.Call else ctx.constructed_from(func, call)
    if built == "torch.nn.CrossEntropyLoss":
        return "ce"
    if built == "torch.nn.NLLLoss":
        return "nll"
    return None


def loss_call_candidates(ctx: Context) -> list[ast.Call]:
    """Calls that may be cross-entropy/NLL: by name, and calls of names bound to such objects."""
    found: dict[int, ast.Call] = {}
    for c in ctx.calls_named("cross_entropy", "nll_loss"):
        found[id(c)] = c
    names: set[str] = set()
    for ctor in ctx.calls_to("torch.nn.CrossEntropyLoss", "torch.nn.NLLLoss"):
        parent = ctx.parent(ctor)
        if parent.__class__ is ast.Call and parent.func is ctor:
            found[id(parent)] = parent
        elif parent.__class__ in (ast.Assign, ast.AnnAssign):
            targets = parent.targets if parent.__class__ is ast.Assign else [parent.target]
            for t in targets:
                n = last_name(t)
                if n:
                    names.add(n)
    params = _param_names(ctx)
    for name, calls in ctx.calls_by_name.items():
        if name in names or name in params or _looks_like_loss_fn(name):
            for call in calls:
                found[id(call)] = call
    return sorted(found.values(), key=lambda c: (c.lineno, c.col_offset))


def _param_names(ctx: Context) -> set[str]:
    """Parameter names of the file's functions (a loss object may be passed in as one)."""
    out: set[str] = set()
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef):
        for f in ctx.nodes.get(kind, ()):
            out.update(a.arg for a in [*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs])
    return out


def _looks_like_loss_fn(name: str) -> bool:
    low = name.lower()
    return "criterion" in low or "loss" in low


def _negated(ctx: Context, call: ast.Call) -> bool:
    """``-F.nll_loss(probs, targets, reduction='none')``: nll_loss of probabilities negated is a
    gather of each target's probability (``probs[range(n), targets]``), no loss."""
    parent = ctx.parent(call)
    return parent.__class__ is ast.UnaryOp and parent.op.__class__ is ast.USub


class SoftmaxIntoCrossEntropy(Rule):
    code = "TW102"
    name = "softmax-into-cross-entropy"
    triggers = ("softmax", "Softmax")
    doc = """\
What it flags
  The output of a softmax handed to cross-entropy (`F.cross_entropy`, an `nn.CrossEntropyLoss`
  instance), and softmax probabilities handed to `nll_loss`/`NLLLoss`; also a `log_softmax`
  in front of cross-entropy, which is redundant. It follows names (`probs = out.softmax(1)`),
  loss objects (`crit = nn.CrossEntropyLoss()`) and an `nn.Sequential` ending in `nn.Softmax`,
  and the output of a module of the file whose `forward` returns one (`out = model(x)` with
  `return F.log_softmax(self.fc(h))` the only return of `forward`).
  Not flagged: `-F.nll_loss(probs, targets, reduction='none')`, negated - the idiom that picks each
  target's probability out of the rows, not a loss.

Why it matters
  Cross-entropy takes raw scores and applies log-softmax internally (it is LogSoftmax followed
  by NLLLoss). Probabilities passed in get squashed a second time: the loss still decreases,
  but gradients shrink and training slows or stalls. NLL loss expects log-probabilities, so
  plain probabilities give a wrong loss altogether.

Example
  probs = F.softmax(logits, dim=1)
  loss = F.cross_entropy(probs, target)        # TW102

Fix
  Pass the logits: `F.cross_entropy(logits, target)`. To keep log-probabilities around, use
  `F.log_softmax` with `F.nll_loss`.

Lint and the doctor
  Lint sees a softmax or sigmoid written in front of a cross-entropy/NLL loss in the same file
  (the call, or a name bound to it). The doctor checks the tensor the loss really receives: rows
  that are non-negative and sum to 1 for cross-entropy, inputs that are not log-probabilities
  for NLL - wherever the softmax happened (inside the model's forward, in another module).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in loss_call_candidates(ctx):
            kind = loss_kind(ctx, call)
            if kind is None:
                continue
            first = argument(call, "input", 0)
            act = activation_of(ctx, first, call)
            if act is None:
                continue
            if kind == "ce" and act == "softmax":
                yield ctx.finding(
                    self.code, first,
                    "cross-entropy applies log-softmax itself; it is given softmax probabilities here",
                    suggestion="pass the raw logits to cross_entropy",
                )
            elif kind == "ce" and act == "log_softmax":
                yield ctx.finding(
                    self.code, first,
                    "log_softmax before cross-entropy is redundant (cross-entropy applies it itself)",
                    suggestion="pass the raw logits to cross_entropy, or use nll_loss on log-probabilities",
                )
            elif kind == "nll" and act == "softmax" and not _negated(ctx, call):
                yield ctx.finding(
                    self.code, first,
                    "nll_loss expects log-probabilities; it is given softmax probabilities here",
                    suggestion="use log_softmax instead of softmax, or cross_entropy on the logits",
                )


RULE = SoftmaxIntoCrossEntropy()
