"""Training steps and loops: backward passes, optimizer steps, the loops that run them,
gradient clearing, and code that runs only once per interval or on a recovery path."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, DEF_TYPES, Context, last_name
from torchwise.lint.semantics.values import local_function

_BACKWARD_OWNERS = frozenset({"accelerator", "fabric", "engine", "model_engine", "trainer", "self"})


def is_backward_call(ctx: Context, call: ast.Call) -> bool:
    func = call.func
    if func.__class__ is ast.Attribute:
        return func.attr in ("backward", "manual_backward")
    elif func.__class__ is ast.Name and func.id == "backward":
        return ctx.qualname(func) == "torch.autograd.backward"
    return False


def backward_calls(ctx: Context) -> list[ast.Call]:
    found = ctx._cache.get("sem:backward")
    if found is None:
        found = [c for c in ctx.calls_named("backward", "manual_backward") if is_backward_call(ctx, c)]
        ctx._cache["sem:backward"] = found
    return found


def is_optimizer_step(ctx: Context, call: ast.Call) -> bool:
    """``opt.step()``, ``self.optimizer.step()``, ``scaler.step(opt)``; never a scheduler or env."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.attr != "step":
        return False
    recv = func.value
    built = ctx.constructed_from(recv, call)
    if built is not None:
        if built.startswith("torch.optim.lr_scheduler"):
            return False
        if built.startswith("torch.optim."):
            return True
        if built.endswith("GradScaler"):
            return bool(call.args)
    name = last_name(recv)
    if name is None:
        return False
    low = name.lower()
    if "sched" in low:
        return False
    if "scaler" in low:
        return bool(call.args)
    return "optim" in low or low in ("opt", "optimizer") or low.startswith("opt_") or low.endswith("_opt")


def optimizer_steps(ctx: Context) -> list[ast.Call]:
    found = ctx._cache.get("sem:steps")
    if found is None:
        found = [c for c in ctx.calls_named("step") if is_optimizer_step(ctx, c)]
        ctx._cache["sem:steps"] = found
    return found


def training_calls(ctx: Context) -> list[ast.Call]:
    return backward_calls(ctx) + optimizer_steps(ctx)


def hot_loops(ctx: Context) -> dict[int, AST]:
    """Loops that run a training step each pass: the innermost loop around a backward/step."""
    found = ctx._cache.get("sem:hot")
    if found is None:
        found = {}
        for call in training_calls(ctx):
            loops = ctx.enclosing_loops(call)
            if loops:
                found[id(loops[0])] = loops[0]
        ctx._cache["sem:hot"] = found
    return found


def training_loops(ctx: Context) -> dict[int, AST]:
    """Every loop that contains a training step somewhere in its body (outer loops included)."""
    found = ctx._cache.get("sem:train")
    if found is None:
        found = {}
        for call in training_calls(ctx):
            for loop in ctx.enclosing_loops(call):
                found[id(loop)] = loop
        ctx._cache["sem:train"] = found
    return found


def hot_loop_of(ctx: Context, node: AST) -> AST | None:
    hot = hot_loops(ctx)
    for loop in ctx.enclosing_loops(node):
        if id(loop) in hot:
            return loop
    return None


def backwarded_names(ctx: Context, scope: AST) -> dict[str, list[tuple[int, int]]]:
    """Names a backward pass was started from in ``scope`` -> positions of those calls.

    Understands ``loss.backward()``, ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``,
    ``self.manual_backward(loss)`` and ``torch.autograd.backward(loss)``.
    """
    key = ("sem:bwnames", id(scope))
    found = ctx._cache.get(key)
    if found is None:
        found = {}
        for call in backward_calls(ctx):
            if ctx.scope_of(call) is not scope:
                continue
            target: AST | None = None
            func = call.func
            if (
                func.__class__ is ast.Attribute
                and func.attr == "backward"
                and ctx.qualname(func) is None
                and (last_name(func.value) or "").lower() not in _BACKWARD_OWNERS
            ):
                target = func.value  # loss.backward(), scaler.scale(loss).backward()
                if target.__class__ is ast.Call and last_name(target.func) == "scale" and target.args:
                    target = target.args[0]
            elif call.args:  # torch.autograd.backward(loss), accelerator.backward(loss)
                target = call.args[0]
            if target is not None and target.__class__ is ast.BinOp and target.op.__class__ in (ast.Div, ast.Mult):
                # (loss / accum_steps).backward(), accelerator.backward(loss * scale)
                target = target.left if target.left.__class__ is ast.Name else (
                    target.right if target.left.__class__ is ast.Constant else None)
            if target is not None and target.__class__ is ast.Name:
                found.setdefault(target.id, []).append((call.lineno, call.col_offset))
        for positions in found.values():
            positions.sort()
        ctx._cache[key] = found
    return found


def was_backwarded(ctx: Context, expr: AST, use: AST) -> bool:
    """Was a backward pass started from the name ``expr`` after its last binding before ``use``?"""
    if expr.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(expr.id, use)
    start = b.pos if b is not None else (0, 0)
    positions = backwarded_names(ctx, ctx.scope_of(use)).get(expr.id)
    return bool(positions) and positions[-1] >= start


def is_zero_grad_like(ctx: Context, node: AST) -> bool:
    """``*.zero_grad(...)``, ``p.grad = None``, ``p.grad.zero_()``, ``del p.grad`` and the like."""
    cls = node.__class__
    if cls is ast.Call:
        name = last_name(node.func)
        if name and "zero_grad" in name:
            return True
        func = node.func
        if func.__class__ is ast.Attribute and func.attr in ("zero_", "fill_", "detach_", "requires_grad_"):
            inner = func.value
            while inner.__class__ is ast.Attribute or inner.__class__ is ast.Call:
                if inner.__class__ is ast.Attribute and inner.attr == "grad":
                    return True
                inner = inner.value if inner.__class__ is ast.Attribute else inner.func
        return False
    if cls in (ast.Assign, ast.AnnAssign, ast.Delete):
        targets = node.targets if cls is not ast.AnnAssign else [node.target]
        for t in targets:
            if t.__class__ is ast.Attribute and t.attr == "grad":
                return True
    return False


def _is_modulo_test(ctx: Context, test: AST) -> bool:
    """A test with a modulo (``step % 100 == 0``) or a call to a helper of this file that returns
    one (``divisible_by(step, 100)``, ``def divisible_by(n, d): return n % d == 0``)."""
    for n in ast.walk(test):
        if n.__class__ is ast.BinOp and n.op.__class__ is ast.Mod:
            return True
        if n.__class__ is ast.Call:
            target = local_function(ctx, n)
            if target is not None and target.__class__ is not ast.Lambda:
                for r in ast.walk(target):
                    if r.__class__ is ast.Return and r.value is not None and any(
                        m.__class__ is ast.BinOp and m.op.__class__ is ast.Mod for m in ast.walk(r.value)
                    ):
                        return True
    return False


def runs_periodically(ctx: Context, node: AST) -> bool:
    """Inside ``if step % N == 0`` (or a test calling a local modulo helper): once per interval."""
    return any(_is_modulo_test(ctx, if_node.test) for if_node, _ in ctx.enclosing_ifs(node))


def in_except_handler(ctx: Context, node: AST) -> bool:
    """In the body of an ``except`` clause within its own function: a recovery path, not every step."""
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, DEF_TYPES):
            return False
        if anc.__class__ is ast.ExceptHandler and getattr(child, "_tw_field", "") == "body":
            return True
        child = anc
    return False
