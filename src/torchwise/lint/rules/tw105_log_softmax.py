"""TW105: the log of softmax/sigmoid probabilities, which turns into -inf and NaN."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.outputkinds import SHAPE_ONLY, model_output
from torchwise.lint.semantics.probcombos import combined_probability, unpacked_probability
from torchwise.lint.semantics.values import producing_call

_PROB_FUNCS = {
    "torch.softmax": "softmax", "torch.nn.functional.softmax": "softmax", "torch.special.softmax": "softmax",
    "torch.sigmoid": "sigmoid", "torch.nn.functional.sigmoid": "sigmoid", "torch.special.expit": "sigmoid",
}
_LOGS = {"torch.log", "torch.special.log", "torch.Tensor.log"}


def probability_of(ctx: Context, expr: ast.AST | None, use: ast.AST | None = None, depth: int = 4) -> str | None:
    """``"softmax"``/``"sigmoid"`` when ``expr`` evidently is such an output, else None: also
    ``1 - p`` of such ``p``, after shape-only methods (``.squeeze(0)``, ``.float()``), and the output
    of a module of the project whose ``forward`` returns one (``output = model(x)``)."""
    if expr.__class__ is ast.BinOp and expr.op.__class__ is ast.Sub and expr.left.__class__ is ast.Constant \
            and expr.left.value == 1:
        return probability_of(ctx, expr.right, use, depth)  # log(1 - p): as small as p is close to 1
    if expr.__class__ is ast.Subscript and depth > 0:
        return probability_of(ctx, expr.value, use, depth - 1)  # log(p[label]): one of the probabilities
    if expr.__class__ is ast.Name and depth > 0:
        b = ctx.binding_at(expr.id, use or expr)
        if b is not None and b.kind == "assign" and b.value.__class__ is ast.Subscript and b.node is not (use or expr):
            return probability_of(ctx, b.value.value, b.node, depth - 1)  # p = probs[label]; log(p)
        if b is not None and b.kind == "unpack":
            return unpacked_probability(ctx, expr, use or expr, depth, probability_of)  # pos, neg = probs[:, 0], probs[:, 1:]
    if expr.__class__ is ast.BinOp:
        return combined_probability(ctx, expr, use or expr, depth, probability_of)  # p * w of two probabilities
    expr = producing_call(ctx, expr, use, depth)
    while expr is not None and expr.func.__class__ is ast.Attribute and expr.func.attr in SHAPE_ONLY \
            and ctx.qualname(expr.func) is None:
        expr = producing_call(ctx, expr.func.value, expr, depth)
    if expr is None:
        return None
    if (combined := combined_probability(ctx, expr, use or expr, depth, probability_of)) is not None:
        return combined  # torch.where(mask, p, torch.ones_like(p)), (p * w).sum(-1) (semantics.probcombos)
    func = expr.func
    q = ctx.qualname(func)
    if q is not None:
        return _PROB_FUNCS.get(q)
    if func.__class__ is ast.Attribute:
        if func.attr == "softmax" and (expr.args or any(k.arg == "dim" for k in expr.keywords)):
            return "softmax"
        if func.attr == "sigmoid" and not expr.args and not expr.keywords:
            return "sigmoid"
    built = ctx._call_target(func) if func.__class__ is ast.Call else ctx.constructed_from(func, expr)
    if built == "torch.nn.Softmax":
        return "softmax"
    if built == "torch.nn.Sigmoid":
        return "sigmoid"
    if built is not None and depth > 0 and (not built.startswith("torch") or built == "torch.load"):
        return model_output(ctx, expr, probability_of, depth - 1)
    return None


# what makes a bound value safe to take the log of: a floor, an exp (of log-probabilities), the top-k (largest) values
_GUARDS = frozenset({"clamp", "clamp_min", "clip", "clamp_", "clamp_min_", "max", "maximum", "exp", "add", "add_", "softplus",
                     "log_softmax", "float", "int", "tensor", "full", "ones", "rand", "uniform_", "topk"})
_REDUCE = frozenset({"mean", "sum", "squeeze", "unsqueeze", "view", "reshape", "cpu", "detach", "float", "double", "to"})


def returned_probabilities(ctx: Context, arg: ast.AST, call: ast.AST) -> str | None:
    """The name of the probabilities ``arg`` holds when they come back from another function or
    method (``probs = self.predict_prob(data)``, ``pb = probs.mean(0)``, ``dist, h = decoder(...)``
    with the log stored as ``log_probs``) with no floor on the way: their zeros give -inf."""
    names = []
    for _ in range(3):
        if arg.__class__ is not ast.Name:
            return None
        names.append(arg.id)
        b = ctx.binding_at(arg.id, call)
        if b is None or b.kind not in ("assign", "unpack") or b.value.__class__ is not ast.Call:
            return None
        func = b.value.func
        callee = func.attr if func.__class__ is ast.Attribute else getattr(func, "id", "")
        if callee in _GUARDS or "softmax" in callee or "sigmoid" in callee:
            return None  # floored, or a softmax/sigmoid the plain check judges
        if b.kind == "assign" and callee in _REDUCE and func.__class__ is ast.Attribute:
            arg, call = func.value, b.node  # pb = probs.mean(0): follow the receiver
            continue
        stored = ctx.parent(call)
        while stored.__class__ in (ast.UnaryOp, ast.BinOp):
            stored = ctx.parent(stored)
        target = " ".join(t.id for t in getattr(stored, "targets", ()) if t.__class__ is ast.Name).lower()
        said = any("prob" in n.lower() and not any(w in n.lower() for w in ("drop", "keep")) for n in names)
        if said or "log_prob" in target or "logprob" in target:
            return f"{names[0]}, from {callee}()"
        return None
    return None


def _shown_beside_log_softmax(ctx: Context, arg: ast.AST, call: ast.Call) -> bool:
    """The same function takes ``log_softmax`` of the very logits the softmax got
    (``ls = F.log_softmax(x, 1)`` ... ``torch.log(F.softmax(x, 1))``): a demonstration that the two
    agree, not a loss that relies on the log of probabilities."""
    soft = producing_call(ctx, arg, call)
    func = ctx.function_of(call)
    if soft is None or not soft.args or func is None or "log_softmax" not in ctx.text(func):
        return False
    logits = ctx.text(soft.args[0])
    return any(c.args and ctx.text(c.args[0]) == logits and ctx.contains(func, c) for c in ctx.calls_named("log_softmax"))


_PICKS = frozenset({"gather", "index_select", "take_along_dim"})


def _picked_from(ctx: Context, arg: ast.AST) -> ast.AST:
    """The probabilities an entry is picked from: ``probs.gather(1, actions)``,
    ``torch.gather(probs, 1, a)``, ``probs[range(n), actions]`` -> ``probs`` (the picked entry is
    as small as the smallest); anything else as it is."""
    if arg.__class__ is ast.Subscript:
        return arg.value
    if arg.__class__ is ast.Call and arg.func.__class__ is ast.Attribute and arg.func.attr in _PICKS:
        if ctx.qualname(arg.func) is None:
            return arg.func.value  # the tensor method
        if arg.args and ctx.qualname(arg.func) in ("torch.gather", "torch.index_select", "torch.take_along_dim"):
            return arg.args[0]
    return arg


class LogOfProbabilities(Rule):
    code = "TW105"
    per_call = True
    name = "log-of-probabilities"
    triggers = ("log",)
    doc = """\
What it flags
  `torch.log(...)` or `.log()` applied directly to a softmax or sigmoid output
  (`torch.log(F.softmax(x, 1))`, `probs.log()` where `probs = x.softmax(1)`), with no epsilon or
  clamp in between, also of the entries picked from them (`torch.log(probs.gather(1, actions))`,
  `torch.log(probs[range(n), actions])`, also when the pick is first stored: `prob = prob[label]`
  then `-torch.log(prob)`), and of `1 - p` for such `p` (a binary cross-entropy
  written by hand: `y * torch.log(p) + (1 - y) * torch.log(1 - p)`), through shape-only methods
  (`output = model(x).squeeze(0)`), unpacked from a tuple (`pos, neg = probs[:, 0], probs[:, 1:]`;
  `pos.log()`, `(1 - neg).log()`), padded by `torch.where` with a constant
  (`p = torch.where(mask == 1, p, torch.ones_like(p))`; `p.log()`), or averaged with
  probabilities as weights (`((pos - neg).sigmoid() * neg.softmax(1)).sum(1).log()`). The output of a module of the project whose `forward`
  returns a sigmoid or softmax on every path (`return self.sig(out)` with `self.sig =
  nn.Sigmoid()`; the class defined in the file or imported from the one project file that defines
  it) counts as probabilities. Also the log of probabilities that come back from another function or
  method, unfloored: a name holding `prob` bound to a call (`probs = self.predict_prob(data)`,
  `pb = probs.mean(0)`), or a call's result whose log is stored as `log_probs`
  (`log_probs = torch.log(final_dist)` after `final_dist, state = decoder(...)`) - entropy and
  BALD scores, beam search. Not flagged: a function that also takes `log_softmax` of the same
  logits (a snippet showing that the two agree), a value floored where it is bound (`.clamp(...)`,
  `.clamp_min(...)`, `torch.max(...)`, `+ eps` in the log's argument), a `torch.where` that tests the
  probabilities themselves (`torch.where(p != 1, p, 0)` before `log(1 - p)`), an `exp(...)`, the top-k
  values (`probs.topk(k)`: the largest), names without `prob` (`dist = model.distance(x)`) and
  `keep_prob`/`drop_prob` settings.

Why it matters
  Softmax and sigmoid underflow to exactly 0 for strongly negative inputs. The log of 0 is
  -inf, the loss becomes inf or NaN, and one such value in a backward pass spreads NaN into
  every weight. The fused functions compute the same quantity without ever forming the tiny
  probability.

Example
  log_probs = torch.log(torch.softmax(logits, dim=-1))     # TW105

Fix
  `F.log_softmax(logits, dim=-1)`, or `F.logsigmoid(x)` for a sigmoid; for other probabilities
  clamp first: `torch.log(p.clamp_min(1e-12))`.

Lint and the doctor
  Lint finds `log(softmax(x))` and `log(sigmoid(x))` written out. The doctor, when a step's
  loss or gradients stop being finite, replays the step to name the first module whose output
  went bad and any `log` taken of zeros, whatever computed them.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_named("log"):
            func = call.func
            q = ctx.qualname(func)
            if q is not None:
                if q not in _LOGS or not call.args:
                    continue
                arg = call.args[0]
            elif func.__class__ is ast.Attribute and not call.args and not call.keywords:
                arg = func.value
            else:
                continue
            arg = _picked_from(ctx, arg)
            kind = probability_of(ctx, arg, call)
            if kind is None:
                source = returned_probabilities(ctx, arg, call)
                if source is not None:
                    yield ctx.finding(
                        self.code, call, f"log of probabilities ({source}) without a floor gives -inf, and NaN in p * log(p), "
                        "wherever a probability is 0", suggestion="take log_softmax of the logits, or clamp first: "
                        "torch.log(p.clamp_min(1e-12))")
                continue
            if kind == "softmax" and _shown_beside_log_softmax(ctx, arg, call):
                continue  # a snippet that computes both to show they agree
            better = "F.log_softmax(x, dim=...)" if kind == "softmax" else "F.logsigmoid(x)"
            yield ctx.finding(
                self.code, call,
                f"log of {kind} probabilities gives -inf/NaN once the {kind} underflows to 0",
                suggestion=f"use {better}, or clamp the probabilities before the log",
            )


RULE = LogOfProbabilities()
