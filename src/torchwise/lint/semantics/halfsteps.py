"""A training step split in two (TW207): the backward pass in a method of the file -
``batch_loss = self._train_step(batch)`` with ``norm_batch_loss.backward()`` in ``_train_step`` -
and the optimizer step in the loop that calls it (after gradient accumulation, ``if (i + 1) %
self.batch_multiplier == 0: self.optimizer.step()``). The method runs once per batch of that
loop: what it reads on the host, it reads every step."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.steps import backward_calls, hot_loop_of, optimizer_steps, runs_periodically
from torchwise.lint.semantics.values import local_function


def backward_helper_of(ctx: Context, node: AST) -> AST | None:
    """The function around ``node`` when it runs a backward pass outside any loop of its own, steps
    no optimizer, and every call of it in this file (one at least) sits in a training loop of the
    file, outside any periodic test."""
    func = ctx.function_of(node)
    if func is None:
        return None
    key = ("sem:backward-helper", id(func))
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = _backward_helper(ctx, func)
    return func if found else None


def _backward_helper(ctx: Context, func: AST) -> bool:
    if not any(ctx.scope_of(c) is func and not ctx.enclosing_loops(c) for c in backward_calls(ctx)):
        return False
    if any(ctx.scope_of(s) is func for s in optimizer_steps(ctx)):
        return False  # a step function of its own (semantics.steps)
    calls = [c for c in ctx.calls_named(func.name) if local_function(ctx, c) is func]
    return bool(calls) and all(ctx.function_of(c) is not func and hot_loop_of(ctx, c) is not None
                               and not runs_periodically(ctx, c) for c in calls)
