"""Hand-written gradient-norm helpers that read every parameter's gradient norm on the host
(``math.pow(p.grad.data.norm(), 2)``, ``p.grad.norm().item()`` in a loop over the parameters),
and whether a training step calls them: one host read per parameter per step (TW207)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.rarely import runs_rarely
from torchwise.lint.semantics.steps import hot_region_of, optimizer_steps, runs_periodically
from torchwise.lint.semantics.values import local_function

_READ_FUNCS = frozenset({"float", "int"})
_ORDER_TESTS = (ast.Lt, ast.Gt, ast.LtE, ast.GtE)  # (not `dp is None`: no tensor value is read)


def per_parameter_reads(ctx: Context) -> dict[int, tuple[AST, list[ast.Call]]]:
    """The host reads of a parameter's gradient in the file's loops over parameters, by function:
    ``x.item()`` / ``float(x)`` / ``math.pow(x, 2)`` where ``x`` involves ``p.grad`` of the loop's
    ``p`` (directly, or through a name bound from it in the loop)."""
    lines = [i for i, line in enumerate(ctx.source.splitlines(), 1) if ".grad" in line]
    out: dict[int, tuple[AST, list[ast.Call]]] = {}
    for loop in ctx.nodes.get(ast.For, ()):
        var = _parameter_variable(loop)
        if var is None or not any(loop.lineno <= n <= (loop.end_lineno or 0) for n in lines):
            continue
        func = ctx.function_of(loop)
        if func is None or func.__class__ is ast.Lambda:
            continue
        derived: set[str] = set()
        for node in ast.walk(loop):
            if node.__class__ is ast.Assign and len(node.targets) == 1 and node.targets[0].__class__ is ast.Name \
                    and _mentions_grad(node.value, var, derived):
                derived.add(node.targets[0].id)  # param_norm = p.grad.data.norm(2)
        for node in ast.walk(loop):
            if node.__class__ is not ast.Call:
                continue
            f = node.func
            if f.__class__ is ast.Attribute and f.attr == "item" and not node.args and _mentions_grad(f.value, var, derived) \
                    or node.args and _mentions_grad(node.args[0], var, derived) and (
                        f.__class__ is ast.Name and f.id in _READ_FUNCS or (ctx.qualname(f) or "").startswith("math.")):
                out.setdefault(id(func), (func, []))[1].append(node)
        for node in ast.walk(loop):  # if clip_coef < 1: with clip_coef = clip / (p.grad.norm() + eps)
            if node.__class__ is ast.If and node.test.__class__ is ast.Compare and derived \
                    and all(op.__class__ in _ORDER_TESTS for op in node.test.ops) and _mentions_grad(_without_metadata(node.test), "", derived):
                out.setdefault(id(func), (func, []))[1].append(node.test)
    if "any(" in ctx.source or "all(" in ctx.source:
        for call in ctx.calls_named("any", "all"):
            func = ctx.function_of(call)
            if func is not None and _tests_each_gradient(call):
                out.setdefault(id(func), (func, []))[1].append(call)
    return out


def _parameter_variable(loop: ast.For) -> str | None:
    """The loop's parameter: ``p`` of ``for p in params`` or ``for name, p in m.named_parameters()``."""
    target = loop.target
    if target.__class__ is ast.Name:
        return target.id
    it = loop.iter
    if target.__class__ is ast.Tuple and len(target.elts) == 2 and target.elts[1].__class__ is ast.Name \
            and it.__class__ is ast.Call and last_name(it.func) == "named_parameters":
        return target.elts[1].id
    return None


def _tests_each_gradient(call: ast.Call) -> bool:
    """``any(not torch.isfinite(p.grad).all() for p in params)``: the builtin ``any``/``all``
    takes each parameter's tensor test to a Python bool, one host read per parameter."""
    if call.func.__class__ is not ast.Name or len(call.args) != 1 or call.args[0].__class__ is not ast.GeneratorExp:
        return False
    gen = call.args[0]
    if len(gen.generators) != 1 or gen.generators[0].target.__class__ is not ast.Name:
        return False
    var = gen.generators[0].target.id
    return _mentions_grad(gen.elt, var, set()) and any(
        n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr in ("all", "any") for n in ast.walk(gen.elt))


def _mentions_grad(expr: ast.AST, var: str, derived: set[str]) -> bool:
    for node in ast.walk(expr):
        if node.__class__ is ast.Name and node.id in derived:
            return True
        if node.__class__ is ast.Attribute and node.attr == "grad" and node.value.__class__ is ast.Name and node.value.id == var:
            return True
    return False


_METADATA = frozenset({"numel", "nelement", "size", "dim", "ndimension", "shape", "ndim", "is_sparse", "dtype", "device"})


def _without_metadata(expr: ast.AST) -> ast.AST:
    """``expr`` with its reads of a tensor's metadata dropped (``grad_values.numel() > 0``,
    ``g.size(0)``, ``g.shape[0]``): shapes live on the host, testing them reads no value."""
    if expr.__class__ is ast.Compare:
        return ast.Tuple(elts=[_without_metadata(e) for e in (expr.left, *expr.comparators)], ctx=ast.Load())
    if expr.__class__ is ast.BinOp:
        return ast.Tuple(elts=[_without_metadata(expr.left), _without_metadata(expr.right)], ctx=ast.Load())
    if expr.__class__ is ast.Subscript:
        return _without_metadata(expr.value) if expr.value.__class__ is ast.Attribute and expr.value.attr in _METADATA else expr
    if expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in _METADATA \
            or expr.__class__ is ast.Attribute and expr.attr in _METADATA:
        return ast.Tuple(elts=[], ctx=ast.Load())
    return expr


def _steps_optimizer(ctx: Context, func: AST) -> bool:
    """``func`` steps an optimizer itself, outside any loop of its own (``optimize_normal()``:
    once per training step)."""
    return any(ctx.function_of(c) is func and not ctx.enclosing_loops(c) for c in optimizer_steps(ctx))


def step_call_of(ctx: Context, func: AST) -> str | None:
    """Where a training step calls ``func`` every step: ``"every optimizer step"`` for a ``step()``
    method (a wrapper optimizer) or a method that steps the optimizer itself, ``"caller(), line N"``
    for a method that such a method (or a training loop) calls on ``self``, else ``"file:line"`` of
    a call in a training loop of this file or of a module of the project that imports it; None when
    no step calls it."""
    if ctx.parent(func).__class__ is ast.ClassDef:
        if func.name == "step" or _steps_optimizer(ctx, func):
            return "every optimizer step"
        for call in ctx.calls_named(func.name):  # self._log_grad_norm() in the method that steps the optimizer
            caller = ctx.function_of(call)
            if call.func.__class__ is ast.Attribute and last_name(call.func.value) == "self" and caller is not None \
                    and ctx.parent(caller) is ctx.parent(func) and not runs_periodically(ctx, call) and not runs_rarely(ctx, call) \
                    and (hot_region_of(ctx, call) is not None or _steps_optimizer(ctx, caller)):
                return f"{caller.name}(), line {call.lineno}"
        return None
    for call in ctx.calls_named(func.name):
        if local_function(ctx, call) is func and hot_region_of(ctx, call) is not None and not runs_rarely(ctx, call):
            return f"line {call.lineno}"
    if ctx.parent(func) is ctx.tree:
        for other, call in project_calls(ctx, func.name):
            if last_name(call.func) == func.name and hot_region_of(other, call) is not None and not runs_rarely(other, call):
                return f"{other.path}:{call.lineno}"
    return None


def optimizer_step_method(ctx: Context, node: AST) -> AST | None:
    """The ``step()`` of a ``torch.optim.Optimizer`` subclass of this file around ``node``: it runs
    once per training step (a FROMP or LARS optimizer computing its update by hand)."""
    func = ctx.function_of(node)
    klass = ctx.parent(func) if func is not None and func.name == "step" else None
    if klass.__class__ is not ast.ClassDef:
        return None
    return func if any(b in _OPTIMIZER_BASES for b in ctx.local_class_bases(klass.name)) else None


_OPTIMIZER_BASES = frozenset({"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"})


def has_optimizer_steps(ctx: Context) -> bool:
    """Does the file define the ``step()`` of an ``Optimizer`` subclass (asked once per file)?"""
    found = ctx._cache.get("sem:optimizer-steps")
    if found is None:
        found = ctx._cache["sem:optimizer-steps"] = "Optimizer" in ctx.source and any(
            f.name == "step" and optimizer_step_method(ctx, f.body[0]) is not None for f in ctx.nodes.get(ast.FunctionDef, ()))
    return found
