"""What runs a node every training step (TW207) - the hot loop or step function around it, the
``step()`` of an ``Optimizer`` subclass, a loop that hands each step to a call, a method that
runs its class's step methods once per call - and the calls there that read their tensor
arguments on the host (a helper of the file or project, ``writer.add_scalar(tag, loss, step)``)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.delegation import delegated_loop_of, delegating_function_of
from torchwise.lint.semantics.gradnorm import optimizer_step_method
from torchwise.lint.semantics.hostconsumers import feeds_its_sampler
from torchwise.lint.semantics.hostcopies import host_copy
from torchwise.lint.semantics.hostreads import (
    LOGGING_READERS, holds_device_values, host_reader, read_arguments, read_in_own_loop,
)
from torchwise.lint.semantics.halfsteps import backward_helper_of
from torchwise.lint.semantics.hostmade import host_made
from torchwise.lint.semantics.hostnumbers import host_number
from torchwise.lint.semantics.steps import backward_calls, hot_region_of, step_functions
from torchwise.lint.semantics.stepvalues import step_device_value
from torchwise.lint.semantics.values import local_function


def step_region(ctx: Context, node: AST) -> AST | None:
    """What runs ``node`` every training step: the hot loop or step function around it, the
    ``step()`` of an ``Optimizer`` subclass, a loop that hands each step to a call
    (``loss_scaler(loss, optimizer, ...)``, ``update_params(batch)``: semantics.delegation), or a
    method that calls its class's step methods once per call (an agent's ``update()``), or a
    method running the backward pass whose caller's loop steps the optimizer (semantics.halfsteps)."""
    return hot_region_of(ctx, node) or optimizer_step_method(ctx, node) or delegated_loop_of(ctx, node) \
        or delegating_function_of(ctx, node) or (backward_helper_of(ctx, node) if backward_calls(ctx) else None)


# generation called by a training step (an RL rollout, a GRPO group of samples): what it reads on the host -
# stop tests, token lists for a tokenizer or an inference server - the decoding needs there (R1, R9)
_DECODING = frozenset({"rollout", "generate", "sample", "decode", "beam_search", "greedy_decode", "sample_sequence"})


def host_reader_calls(ctx: Context, only: str | None = None) -> Iterator[tuple[ast.Call, str, str]]:
    """``(call, name, how it reads)`` for each call in a step region that hands a device value to
    a function reading its arguments on the host: a helper of this file or of the project
    (``reduce_loss_dict(losses)``), a metric object, ``writer.add_scalar(tag, loss, step)``; not
    the sampler of the step's inputs, nor a step method an agent's ``update()`` runs (its reads
    are reported where they are). ``only``: the calls of that name alone."""
    names = set(LOGGING_READERS) | set(ctx.project.host_read_blocks)
    local = {f.name for kind in (ast.FunctionDef, ast.AsyncFunctionDef) for f in ctx.nodes.get(kind, ())}
    metrics = "__call__" in ctx.project.host_read_blocks
    for name, calls in ctx.calls_by_name.items() if only is None else [(only, ctx.calls_by_name.get(only, ()))]:
        metric = metrics and "metric" in name.lower()
        if name in _DECODING or name not in names and name not in local and not metric:
            continue
        for call in calls:
            target = local_function(ctx, call)
            if name not in names and not metric and target is None:
                continue
            region = step_region(ctx, call)
            if region is None or feeds_its_sampler(ctx, call, region):
                continue  # not run every step, or the sampler of the step's inputs
            if target is not None and id(target) in step_functions(ctx) and region is delegating_function_of(ctx, call):
                continue  # update() calling self.update_critic(...)
            where = host_reader(ctx, call) if not any(map(host_copy, read_arguments(ctx, call))) else None
            if where is not None and any((holds_device_values(ctx, a, call) or step_device_value(ctx, a, call)) and not _legacy_read(a)
                                         and not host_number(ctx, a, call) and not host_made(ctx, a, call)  # a float, a CPU tensor
                                         for a in read_arguments(ctx, call)) \
                    and not (target is not None and read_in_own_loop(ctx, target, call)):
                yield call, name, where  # (not a helper training in a loop of its own: judged at its read)


def _legacy_read(expr: AST) -> bool:
    """``loss.data[0]``: the pre-0.4 ``.item()``, a number already read (reported as such)."""
    return expr.__class__ is ast.Subscript and expr.value.__class__ is ast.Attribute and expr.value.attr == "data" \
        and expr.slice.__class__ is ast.Constant and expr.slice.value == 0
