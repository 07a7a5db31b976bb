"""TW110: a training loop with backward() and an optimizer step but no zero_grad."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, last_name, root_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.manualupdates import manual_update
from torchwise.lint.semantics.models import is_module_instance
from torchwise.lint.semantics.steps import hot_loops, is_backward_call, is_optimizer_step, is_zero_grad_like
from torchwise.lint.semantics.syncs import timing_benchmark
from torchwise.lint.semantics.values import body_nodes, local_function

_STEP_HELPERS = frozenset({"step", "scale", "unscale_", "update", "clip_grad_norm_", "clip_grad_value_"})


def _may_clear(ctx: Context, arg: ast.AST, call: ast.Call, optimizers: set[str]) -> bool:
    """Could a function we cannot see clear gradients through this argument?"""
    if ctx.text(arg) in optimizers:
        return True
    if arg.__class__ is ast.Call and last_name(arg.func) in ("parameters", "named_parameters"):
        return True
    return arg.__class__ in (ast.Name, ast.Attribute) and is_module_instance(ctx, arg, call)


def _per_context_backward(ctx: Context, call: ast.Call) -> bool:
    """``dist_autograd.backward(context_id, [loss])``: gradients go to the context, not ``.grad``."""
    func = call.func
    if func.__class__ is not ast.Attribute:
        return False
    owner = ctx.qualname(func.value)
    return owner == "torch.distributed.autograd" or (owner is None and "dist_autograd" in ctx.text(func.value))


def _built_in_loop(ctx: Context, step: ast.Call, loop: ast.AST) -> bool:
    """Is the stepped optimizer created anew inside ``loop`` (``opt = SGD(fresh.parameters())``
    each pass)? Then every pass is its own one-step run on what it just built; nothing piles up
    from one pass into the next through this optimizer."""
    recv = step.func.value
    if recv.__class__ is not ast.Name:
        return False
    binding = ctx.binding_at(recv.id, step)
    if binding is None or binding.kind != "assign" or not ctx.contains(loop, binding.node):
        return False
    built = binding.value
    if built.__class__ is not ast.Call or not built.args:
        return False
    params = root_name(built.args[0])  # the parameters come from something built in the same pass
    if params is None:
        return False
    source = ctx.binding_at(params.id, built)
    return source is not None and ctx.contains(loop, source.node)


class MissingZeroGrad(Rule):
    code = "TW110"
    per_call = True
    name = "missing-zero-grad"
    triggers = ("backward",)
    doc = """\
What it flags
  The innermost loop that runs both a `backward()` and an optimizer `step()` when nothing in
  it clears the gradients: no `zero_grad(...)` on an optimizer or model, no `p.grad = None`,
  `p.grad.zero_()` or `del p.grad`, also looking into closures and into helper functions of
  the same file that the loop calls (three calls deep). Left alone: a loop that hands the
  optimizer, the model or its parameters to a function of another module (it may clear the
  gradients), and distributed-autograd loops (`dist_autograd.backward(context_id, ...)`), whose
  gradients live in a fresh context each step, and loops that build a new optimizer every
  pass (a test that trains a fresh module for one step per case), and timing benchmarks - a
  function named `test_*`/`benchmark*`/`time_*`... that reads a timer before and after a
  `for i in range(n):` loop repeating one step on the same inputs (the loop variable unused).
  Likewise a loop that runs `backward()` and then updates the parameters by hand from their
  gradients, with no optimizer (`for name, p in model.named_parameters(): p.data -= lr *
  p.grad`, also from a value derived from `p.grad` such as an all-reduced mean, or
  `p.data.add_(p.grad, alpha=-lr)`): reported at the `backward()`. Not flagged: a loop over
  the parameters that reads no `.grad` (an EMA, a clamp).

Why it matters
  `backward()` adds into `.grad`; it never overwrites it. Without clearing once per optimizer
  step, each step applies the sum of all earlier gradients, the update keeps growing and the
  model diverges or trains erratically. Gradient accumulation is deliberate only when the
  gradients are cleared every N micro-steps.

Example
  optimizer.zero_grad()
  for x, y in loader:                 # TW110
      loss_fn(model(x), y).backward()
      optimizer.step()

Fix
  Call `optimizer.zero_grad()` once per optimizer step, before `backward()` or right after
  `step()` (with accumulation: after every N-th step).

Lint and the doctor
  Lint reads training loops (and the local functions they call) that run `backward()` and an
  optimizer step with no gradient clearing (or a hand-written update over the parameters from
  their `.grad`). The doctor (run time) observes gradients carried
  over from one optimizer step into the next, however the loop is written.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for loop in hot_loops(ctx).values():
            nodes = body_nodes(ctx, loop, follow_calls=3)
            calls = [n for n in nodes if n.__class__ is ast.Call]
            steps = [c for c in calls if is_optimizer_step(ctx, c)]
            backwards = [c for c in calls if is_backward_call(ctx, c)]
            if not backwards:
                continue
            update = manual_update(ctx, nodes) if not steps else None
            if not steps and update is None:
                continue
            if all(_per_context_backward(ctx, c) for c in backwards):
                continue  # distributed autograd: each context holds its own gradients, nothing piles up
            if any(is_zero_grad_like(ctx, n) for n in nodes):
                continue
            if steps and all(_built_in_loop(ctx, s, loop) for s in steps):
                continue  # a fresh optimizer (and model) per pass: one step each, no accumulation
            if timing_benchmark(ctx, loop):
                continue  # a speed/memory benchmark repeating one step: its training result is thrown away
            optimizers = set()
            for s in steps:
                recv = s.func.value
                optimizers.add(ctx.text(s.args[0]) if "scaler" in (last_name(recv) or "").lower() and s.args else ctx.text(recv))
            if any(
                last_name(c.func) not in _STEP_HELPERS and local_function(ctx, c) is None
                and not (ctx.qualname(c.func) or "").startswith("torch.optim.")  # building an optimizer clears nothing
                and any(_may_clear(ctx, a, c, optimizers) for a in [*c.args, *(k.value for k in c.keywords)])
                for c in calls
            ):
                continue  # the optimizer or the model is handed to code we cannot see (it may clear the gradients)
            if update is not None:
                yield ctx.finding(
                    self.code, backwards[0],
                    "backward() adds into .grad every pass and the loop updates the parameters from .grad by hand, "
                    "but never clears it; the gradients pile up across steps",
                    suggestion="set `p.grad = None` (or call model.zero_grad()) after each update")
                continue
            step = steps[0]
            yield ctx.finding(
                self.code, loop,
                f"this loop calls backward() and {ctx.text(step.func)}() but never clears the gradients; they pile up across steps",
                suggestion="call optimizer.zero_grad() once per optimizer step",
                end_node=loop.iter if loop.__class__ is not ast.While else loop.test,
            )


RULE = MissingZeroGrad()
