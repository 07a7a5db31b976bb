"""TW215: gradient accumulation under DDP that all-reduces on every micro-step."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.ddpwrap import DDPS, inner_accumulation, wraps_through_helper
from torchwise.lint.semantics.delegation import backward_helper
from torchwise.lint.semantics.steps import backward_calls, modulo_test, optimizer_steps
from torchwise.lint.semantics.unwrappedforward import forward_bypasses_wrapper
from torchwise.lint.semantics.values import local_function


def _conditional_step(ctx: Context, step: ast.Call, loop: ast.AST) -> bool:
    """Is this optimizer step under an ``if`` with a modulo test inside ``loop`` (every N passes)?"""
    for if_node, _ in ctx.enclosing_ifs(step):
        if not ctx.contains(loop, if_node):
            break
        if any(n.__class__ is ast.BinOp and n.op.__class__ is ast.Mod for n in ast.walk(if_node.test)):
            return True
    return False


def _other_arm(ctx: Context, step: ast.Call, bw: ast.Call, loop: ast.AST) -> bool:
    """Is ``step`` in the other arm of an ``if`` inside ``loop`` than ``bw`` (``if accum > 1:
    ... backward() ... else: ... step()``): the two never run in the same pass."""
    arms = {id(node): in_body for node, in_body in ctx.enclosing_ifs(bw) if node.__class__ is ast.If and ctx.contains(loop, node)}
    return any(id(node) in arms and arms[id(node)] != in_body for node, in_body in ctx.enclosing_ifs(step))


def _helper_calls(ctx: Context) -> list[ast.Call]:
    """``loss_scaler(loss, optimizer, ..., update_grad=(idx + 1) % accum == 0)`` in a loop: a
    helper that runs the backward pass on every call and the optimizer step only when a
    keyword's modulo test holds."""
    out = []
    for call in ctx.nodes.get(ast.Call, ()):
        first = call.args[0] if call.keywords and call.args else None
        if first.__class__ is ast.Name and "loss" in first.id.lower() and ctx.enclosing_loops(call) \
                and any(modulo_test(ctx, k.value) for k in call.keywords) and backward_helper(ctx, call):
            out.append(call)
    return out


class AccumulationWithoutNoSync(Rule):
    code = "TW215"
    per_call = True
    name = "ddp-accumulation-without-no-sync"
    triggers = ("DistributedDataParallel", "backward(", "scaler(")
    doc = """\
What it flags
  A file that wraps its model in `DistributedDataParallel` and accumulates gradients - in a
  loop, `backward()` runs every pass while the optimizer `step()` runs only under a test such
  as `if (i + 1) % accum_steps == 0:` - without ever using `no_sync()` (or
  `require_backward_grad_sync`). An optimizer step in the other arm of an `if` than the
  backward pass (`if accum > 1: ... backward() ... else: ... scaler.step(opt)`) never runs in
  the same pass and does not count, nor does a loop whose forward bypasses the wrapper
  (`raw = model.module if isinstance(model, DistributedDataParallel) else model` ... `raw(x)`,
  or `model.module(x)`, the wrapper itself never called there): its backward pass all-reduces
  nothing. Also a helper handed the loss first and the optimizer that
  runs the backward pass on every call and steps only when a keyword's modulo test holds
  (`loss_scaler(loss, optimizer, ..., update_grad=(idx + 1) % accum == 0)`), reported at the call.
  The loop may live in another file than the wrapping: a module-level `train_one_epoch(model,
  ...)` that a file of the project calls after `DistributedDataParallel(model, ...)` (and that
  file uses no `no_sync()` either). The wrapper may be apex's (`from apex.parallel import
  DistributedDataParallel as DDP`; quiet where the file calls `disable_allreduce()`) or built by
  a helper of the project the file calls (`model = apply_wrapper(config, model)`). Also a
  backward pass on every chunk of the batch in an inner loop over what the pass took
  (`for x, y in zip(data_chunks, target_chunks): ... loss.backward()`) with one optimizer step
  after that loop, or a function of the file that runs the backward pass called once per part
  of the batch in such a loop (`for i in range(batch_split): _train_step(model, X[part], ...)`,
  then one `optimizer.step()` after it; the file that wraps may call it through other functions of
  this file). One finding per accumulating loop, at its last backward call (`optimizer.backward(loss)`
  in the fp16 arm and `loss.backward()` in the other are one pitfall).

Why it matters
  DDP all-reduces the gradients across processes during every backward pass. With
  accumulation only the last micro-step's all-reduce is needed; the others send the whole
  gradient over the network for nothing, which can dominate the step time on slower links.

Example
  ddp_model = DistributedDataParallel(model, device_ids=[rank])
  for i, (x, y) in enumerate(loader):
      loss_fn(ddp_model(x), y).backward()          # TW215: all-reduce on every micro-step
      if (i + 1) % accum == 0:
          opt.step(); opt.zero_grad()

Fix
  Skip the synchronisation on non-final micro-steps:
  `ctx = ddp_model.no_sync() if (i + 1) % accum else contextlib.nullcontext()` and run the
  forward and backward inside `with ctx:`. The torchwise Trainer does this.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        if "no_sync" in ctx.source or "require_backward_grad_sync" in ctx.source or "disable_allreduce" in ctx.source:
            return
        here = "DistributedDataParallel" in ctx.source and bool(ctx.calls_to(*DDPS))
        if not here and not _project_wraps_in_ddp(ctx):
            return
        found: list[tuple[ast.Call, str]] = []
        per_loop: dict[int, tuple[ast.Call, str]] = {}  # one finding per accumulating loop, at its last backward
        for bw in backward_calls(ctx):
            loops = ctx.enclosing_loops(bw)
            if not loops:
                continue
            loop = loops[0]
            if _conditional_step(ctx, bw, loop):
                continue
            steps = [c for c in optimizer_steps(ctx) if loop in ctx.enclosing_loops(c) and not _other_arm(ctx, c, bw, loop)]
            if steps and all(_conditional_step(ctx, s, loop) for s in steps):
                per_loop[id(loop)] = (bw, "gradient accumulation under DistributedDataParallel all-reduces on every micro-step")
            elif not steps and inner_accumulation(ctx, bw, loops):
                per_loop[id(loop)] = (bw, "gradient accumulation over the chunks of a batch under DistributedDataParallel "
                                          "all-reduces on every chunk's backward pass")
        for call, bw in _chunk_helper_calls(ctx):  # reported at the helper's backward pass, once
            per_loop.setdefault(id(bw), (bw, f"gradient accumulation over the parts of a batch under DistributedDataParallel: "
                                             f"{ctx.text(call.func)}() (line {call.lineno}) runs this backward pass, an "
                                             "all-reduce, for each part"))
        found += [v for k, v in per_loop.items() if not forward_bypasses_wrapper(ctx, v[0], k)]
        for call in _helper_calls(ctx):
            found.append((call, f"gradient accumulation under DistributedDataParallel: {ctx.text(call.func)}() runs the "
                                "backward pass (an all-reduce) on every micro-step and steps only every N"))
        here = here or bool(found) and wraps_through_helper(ctx)  # model = apply_wrapper(config, model)
        for node, message in found:
            where = None if here else _ddp_caller(ctx, node)
            if here or where is not None:
                yield ctx.finding(self.code, node, message + (f" (called at {where}, in a file that wraps the model)" if where else ""),
                                  suggestion="run non-final micro-steps inside model.no_sync()")


def _chunk_helper_calls(ctx: Context) -> list[tuple[ast.Call, ast.Call]]:
    """``for i in range(batch_split): ... _train_step(model, X[part], ...)`` where ``_train_step``,
    a function of this file, runs ``backward()``, and the function steps the optimizer once after
    that loop (no step inside it): a backward pass per part of the batch, one step. With the
    helper's (last) backward call."""
    helpers = {id(f): bw for bw in backward_calls(ctx) if (f := ctx.function_of(bw)) is not None}
    steps = optimizer_steps(ctx)
    out = []
    for call in ctx.nodes.get(ast.Call, ()) if helpers else ():
        if call.func.__class__ is not ast.Name:
            continue
        target = local_function(ctx, call)
        loops = ctx.enclosing_loops(call) if target is not None and id(target) in helpers else []
        if not loops or loops[0].__class__ is not ast.For:
            continue
        loop, scope = loops[0], ctx.scope_of(call)
        if any(loop in ctx.enclosing_loops(st) for st in steps):
            continue
        end = loop.end_lineno or loop.lineno
        if any(ctx.scope_of(st) is scope and st.lineno > end and ctx.enclosing_loops(st)[:1] == loops[1:2] for st in steps):
            out.append((call, helpers[id(target)]))
    return out


def _project_wraps_in_ddp(ctx: Context) -> bool:
    """Does some file of the project wrap a model in ``DistributedDataParallel`` (asked once per project)?"""
    facts = ctx.project
    if "tw215:ddp" not in facts.answers:
        facts.answers["tw215:ddp"] = any("DistributedDataParallel(" in t for _, t in facts.files)
    return facts.answers["tw215:ddp"]


def _ddp_caller(ctx: Context, node: ast.AST) -> str | None:
    """``"path:line"`` of a call of the module-level function around ``node`` from another file
    of the project that wraps the model in ``DistributedDataParallel`` (and never uses
    ``no_sync``): ``train_one_epoch(model, ...)`` in a ``main.py`` that wrapped ``model`` first."""
    func = ctx.function_of(node)
    if func is None or ctx.parent(func) is not ctx.tree:
        return None
    frontier, seen = [func], {id(func)}
    for _ in range(3):  # a helper of the file: follow its callers here (_train_batch <- train_iteration <- main.py)
        callers = []
        for func in frontier:
            for other, call in project_calls(ctx, func.name):
                if "DistributedDataParallel(" in other.source and "no_sync" not in other.source:
                    return f"{other.path}:{call.lineno}"
            for c in ctx.calls_named(func.name):
                f = ctx.function_of(c) if local_function(ctx, c) is func else None
                if f is not None and ctx.parent(f) is ctx.tree and id(f) not in seen:
                    seen.add(id(f))
                    callers.append(f)
        frontier = callers[:4]
    return None


RULE = AccumulationWithoutNoSync()
