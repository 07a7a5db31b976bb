"""Grad-free regions: ``no_grad``/``inference_mode`` blocks and decorators (torch's own, or
wrappers named for them), and ``set_grad_enabled(False)``."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.values import local_function


def _is_grad_off(ctx: Context, expr: AST, depth: int = 2) -> bool:
    """A context manager or decorator that turns autograd off: torch's own, a wrapper named for
    one (``smart_inference_mode()``, ``torch_no_grad``), or a function of this file whose body
    uses one (a decorator factory returning ``torch.inference_mode()(fn)``)."""
    call = expr if expr.__class__ is ast.Call else None
    target = call.func if call is not None else expr
    name = last_name(target)
    if name in ("no_grad", "inference_mode"):
        if call is not None and name == "inference_mode" and call.args and _is_false(call.args[0]):
            return False
        return True
    if name == "set_grad_enabled" and call is not None and call.args and _is_false(call.args[0]):
        return True
    if name and ("no_grad" in name or "inference_mode" in name) and not (call is not None and call.args and _is_false(call.args[0])):
        return True
    if depth > 0 and target.__class__ is ast.Name:
        bound = ctx.resolve(target)
        if bound is not target and bound.__class__ is ast.IfExp:
            # context = torch.no_grad if eval_with_no_grad else nullcontext: off whenever it is asked to be
            return _is_grad_off(ctx, bound.body, depth - 1) or _is_grad_off(ctx, bound.orelse, depth - 1)
        func = local_function(ctx, ast.Call(func=target, args=[], keywords=[]))
        if func is not None and func.__class__ is not ast.Lambda:
            for sub in ast.walk(func):
                if sub is not func and sub.__class__ in (ast.Call, ast.Attribute, ast.Name):
                    inner = last_name(sub)
                    if inner in ("no_grad", "inference_mode") and ctx.qualname(sub if sub.__class__ is not ast.Call else sub.func) in (
                        "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad",
                        "torch.autograd.grad_mode.inference_mode",
                    ):
                        return True
    return False


def _is_false(node: AST) -> bool:
    return node.__class__ is ast.Constant and node.value is False


def under_no_grad(ctx: Context, node: AST) -> bool:
    """Is ``node`` inside ``with torch.no_grad()/inference_mode()``, or in a function decorated
    with either (checked up through enclosing functions), or after ``set_grad_enabled(False)``?"""
    child = node
    for anc in ctx.ancestors(node):
        cls = anc.__class__
        if cls in (ast.With, ast.AsyncWith) and getattr(child, "_tw_field", "") == "body":
            if any(_is_grad_off(ctx, item.context_expr) for item in anc.items):
                return True
        elif cls in (ast.FunctionDef, ast.AsyncFunctionDef):
            if any(_is_grad_off(ctx, d) for d in anc.decorator_list):
                return True
        child = anc
    scope = ctx.scope_of(node)
    for call in ctx.calls_named("enter_context"):
        # with ExitStack() as stack: stack.enter_context(torch.no_grad()) ... (detectron2's evaluator)
        if call.args and _is_grad_off(ctx, call.args[0]) and ctx.scope_of(call) is scope:
            w = next((a for a in ctx.ancestors(call) if a.__class__ in (ast.With, ast.AsyncWith)), None)
            if w is not None and ctx.contains(w, node) and (call.lineno, call.col_offset) < (node.lineno, node.col_offset):
                return True
    for call in ctx.calls_named("set_grad_enabled"):
        if call.args and _is_false(call.args[0]) and ctx.scope_of(call) is scope and (call.lineno, call.col_offset) < (node.lineno, node.col_offset):
            if ctx.parent(call).__class__ is ast.Expr:
                return True
    return _switched_off_for_good(ctx, node, scope) if "set_grad_enabled(False" in ctx.source else False


def _switched_off_for_good(ctx: Context, node: AST, scope: AST) -> bool:
    """``torch.set_grad_enabled(False)`` as a statement turns autograd off for the thread until
    something turns it back on. Off for ``node`` when the file never turns it on again (no other
    ``set_grad_enabled`` statement, no ``enable_grad``) and the switch sits in the ``__init__`` of
    the class whose method holds ``node`` (an inference wrapper: every method runs after the
    object is built), or at module level, before any module-level call of the function holding
    ``node`` (a script that switches autograd off, then evaluates)."""
    if scope.__class__ is ast.Module or "enable_grad" in ctx.source:
        return False
    switches = [c for c in ctx.calls_named("set_grad_enabled") if ctx.parent(c).__class__ is ast.Expr]
    if any(not (c.args and _is_false(c.args[0])) for c in switches):
        return False  # (set_grad_enabled(True), or (is_train): switched back on somewhere)
    outer = scope
    while ctx.parent(outer) is not ctx.tree and ctx.parent(outer) is not None:
        outer = ctx.parent(outer)  # the module-level def or class holding node
    for call in switches:
        where = ctx.scope_of(call)
        if where.__class__ is ast.Module:
            name = getattr(outer, "name", None)
            if name is not None and not any(ctx.scope_of(c) is where and c.lineno < call.lineno for c in ctx.calls_named(name)):
                return True
        elif getattr(where, "name", "") == "__init__" and ctx.parent(where).__class__ is ast.ClassDef \
                and ctx.parent(where) is ctx.class_of(node) and scope is not where:
            return True
    return False
