"""Whether a host read runs every training step on an accelerator (TW207): the hot loop or step
function around it (semantics.stepregion), not once per log interval nor in a branch that rarely
runs, on a device the code evidently targets, of a value of the step, and none of the reads the
algorithm needs or that add no wait of their own: a value the environment or a host-side
structure consumes, what a full-batch step evaluates every pass anyway, an evaluation block and
what follows it, what an epoch loop runs outside its batch loop, the branch opposite to the step."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.actions import feeds_environment
from torchwise.lint.semantics.epochpasses import outside_batch_loop
from torchwise.lint.semantics.evalblocks import after_evaluation, in_evaluation_block
from torchwise.lint.semantics.hostconsumers import consumed_on_host
from torchwise.lint.semantics.hostlibraries import library_round_trip
from torchwise.lint.semantics.hostmade import host_made
from torchwise.lint.semantics.lossoperands import loss_operand
from torchwise.lint.semantics.ondevice import on_accelerator
from torchwise.lint.semantics.rarely import logged_periodically, runs_rarely
from torchwise.lint.semantics.stepbranches import opposite_to_step
from torchwise.lint.semantics.stepregion import step_region
from torchwise.lint.semantics.steps import evaluated_every_call, full_batch_epochs
from torchwise.lint.semantics.stepvalues import round_trip, step_subject
from torchwise.lint.semantics.syncs import synchronized_before


def every_step_read(ctx: Context, node: AST, subject: AST | None, check_subject: bool = True,
                    hidden: bool = False) -> tuple[AST, AST | None] | None:
    """``(region, synchronize)`` when ``node`` reads on the host every training step: the loop or
    step function that runs it, and the unconditional ``torch.cuda.synchronize()`` before it in
    that loop, if any (where the step waits instead). ``check_subject``: ``subject`` must be a
    device value of the step. ``hidden``: a read inside a library call, where it is even after a
    synchronize. None otherwise."""
    region = step_region(ctx, node)
    if region is None or logged_periodically(ctx, node) or runs_rarely(ctx, node):
        return None  # once per interval, or a branch that rarely or never runs (semantics.rarely)
    looping = region.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef)
    sync = synchronized_before(ctx, region, node) if looping and not hidden else None
    if not on_accelerator(ctx, node):
        return None  # nothing here is evidently on an accelerator
    if check_subject and not (step_subject(ctx, subject, node) or round_trip(ctx, node) or loss_operand(ctx, node)):
        return None
    if subject is not None and host_made(ctx, subject, node):
        return None  # a tensor the function built on the CPU itself (semantics.hostmade)
    if looping and feeds_environment(ctx, node, region):
        return None  # the environment steps on the host with this value: the read is needed
    if check_subject and consumed_on_host(ctx, node):
        return None  # the algorithm works on it on the host (replay priorities): the read is needed
    if evaluated_every_call(ctx, region) if not looping else full_batch_epochs(ctx, region):
        return None  # a full-batch step per pass, and an evaluation each pass: this read adds no wait
    if looping and after_evaluation(ctx, region, node) or in_evaluation_block(ctx, node):
        return None  # the evaluation of each pass (with no_grad(): model.eval() ...), or after its read drained the GPU
    if looping and outside_batch_loop(ctx, region, node):
        return None  # an epoch loop with a step of its own: outside its batch loop, once per epoch
    if opposite_to_step(ctx, node, region):
        return None  # the inference or evaluation branch of `if phase != "inference": <step> else: ...`
    if library_round_trip(ctx, node):
        return None  # a host-only library's work (a QP solver, SLIC, PESQ) whose result the step moves back (R9)
    return region, sync
