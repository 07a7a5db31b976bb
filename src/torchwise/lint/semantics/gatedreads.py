"""Branches that a training step does not run every step although no modulo test guards them
where they are (TW207):

* a **logging sink handed on only at intervals**: ``storer = self._pre_call(is_train, storer)``
  with a helper that keeps the sink on every N-th step and gives ``None`` otherwise (``if
  self.n_steps % self.record_every == 1: ... else: storer = None``), ``log = {} if step % 50 ==
  0 else None``, ``do_log = it % 100 == 0``; then ``if storer is not None: storer["loss"].append(
  loss.item())``, also in a helper that receives the sink as a parameter (``def
  _kl_loss(mean, logvar, storer=None)``) when every call of it in the file hands on such a sink,
  ``None``, or nothing;
* a **flag a forward never gets while training**: ``def forward(self, pts, vis=False)`` with
  ``if vis:`` selecting points for a plot, where every call in the project that passes ``vis=``
  lies in a file that runs no backward pass (a visualisation script);
* a **value cached on the first call**: ``if self._ready is None: self._ready =
  bool(self._flag.item())`` - read once, then kept on the host.
"""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context, argument, param_default
from torchwise.lint.semantics.steps import modulo_test
from torchwise.lint.semantics.values import local_function


def _off(expr: AST | None) -> bool:
    """``None`` or ``False``."""
    return expr.__class__ is ast.Constant and (expr.value is None or expr.value is False)


def _sink_name(test: AST) -> ast.Name | None:
    """The name a test asks for a sink or flag: ``x is not None``, ``x``."""
    if test.__class__ is ast.Name:
        return test
    if test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.IsNot \
            and test.left.__class__ is ast.Name and _off(test.comparators[0]):
        return test.left
    return None


def interval_gated_test(ctx: Context, test: AST) -> bool:
    """Does the ``if`` test hold only on the steps a sink or flag is handed on at intervals?"""
    if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And:
        return any(interval_gated_test(ctx, v) for v in test.values)
    name = _sink_name(test)
    return name is not None and gated_name(ctx, name, test, 2)


def gated_name(ctx: Context, name: ast.Name, use: AST, depth: int) -> bool:
    """``name`` holds a value only on interval steps: bound from a modulo test, from ``x if step
    % n == 0 else None``, from a helper of this file that gives ``None`` off the interval, or a
    parameter every call of whose function in this file hands on such a value (or nothing)."""
    b = ctx.binding_at(name.id, use)
    if b is None:
        return False
    if b.kind == "param":
        return depth > 0 and _param_gated(ctx, ctx.scope_of(use), name.id, depth - 1)
    if b.kind != "assign" or b.value is None:
        return False
    value = b.value
    if value.__class__ is ast.IfExp:
        return _interval_value(ctx, value)
    if value.__class__ in (ast.Compare, ast.BoolOp):
        return modulo_test(ctx, value)
    if value.__class__ is ast.Call:
        helper = local_function(ctx, value)
        return helper is not None and helper.__class__ is not ast.Lambda and _gates(ctx, helper)
    if value.__class__ is ast.Name and depth > 0:
        return gated_name(ctx, value, b.node, depth - 1)
    return False


def _gates(ctx: Context, func: AST) -> bool:
    """A helper whose result is ``None`` (or ``False``) in one arm of a modulo test: ``if not
    is_train or self.n % self.every == 1: storer = storer`` / ``else: storer = None``."""
    key = ("sem:gates", id(func))
    found = ctx._cache.get(key)
    if found is None:
        found = False
        for node in ast.walk(func):
            if node.__class__ is ast.If and modulo_test(ctx, node.test):
                on = _on_interval(node.test)
                off_arm = node.orelse if on is True else node.body if on is False else []
                found = any(s.__class__ in (ast.Assign, ast.Return) and _off(s.value) for s in off_arm)
            elif node.__class__ is ast.Return and node.value.__class__ is ast.IfExp:
                found = _interval_value(ctx, node.value)
            if found:
                break
        ctx._cache[key] = found
    return found


def _interval_value(ctx: Context, value: ast.IfExp) -> bool:
    """``x if step % n == 0 else None`` (or ``None if step % n else x``): ``None`` off the interval."""
    if not modulo_test(ctx, value.test):
        return False
    on = _on_interval(value.test)
    return on is True and _off(value.orelse) or on is False and _off(value.body)


def _on_interval(test: AST) -> bool | None:
    """Does the modulo test hold on the interval's steps (``n % k == 1``, ``not training or n % k
    == 0``: True) or off them (``n % k != 0``, ``n % k``: False)? None when it cannot tell."""
    cls = test.__class__
    if cls is ast.UnaryOp and test.op.__class__ is ast.Not:
        inner = _on_interval(test.operand)
        return None if inner is None else not inner
    if cls is ast.BoolOp:
        found = {v for v in map(_on_interval, test.values) if v is not None}
        return found.pop() if len(found) == 1 else None
    if cls is ast.BinOp and test.op.__class__ is ast.Mod:
        return False  # `if step % k:` holds off the interval
    if cls is ast.Compare and len(test.ops) == 1 and any(
            n.__class__ is ast.BinOp and n.op.__class__ is ast.Mod for n in (test.left, *test.comparators)):
        op = test.ops[0].__class__
        return True if op is ast.Eq else False if op is ast.NotEq else None
    return None


def _param_gated(ctx: Context, func: AST, param: str, depth: int) -> bool:
    """Every call of ``func`` in this file (there is one at least) hands on for ``param`` a gated
    value, ``None``/``False``, or nothing while the parameter defaults to one of those."""
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    calls = [c for c in ctx.calls_named(func.name) if local_function(ctx, c) is func]
    return bool(calls) and all(gated_argument(ctx, c, func, param, depth) for c in calls)


def gated_argument(ctx: Context, call: ast.Call, func: AST, param: str, depth: int = 2) -> bool:
    """Does ``call`` of ``func`` hand on for ``param`` nothing (a ``None``/``False`` default),
    ``None``/``False``, or a value held only on interval steps?"""
    if any(k.arg is None for k in call.keywords):
        return False
    args = func.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    index = positional.index(param) if param in positional else None
    if index is not None and positional[0] in ("self", "cls") and call.func.__class__ is ast.Attribute:
        index -= 1
    value = argument(call, param, index)
    if value is None and any(a.__class__ is ast.Starred for a in call.args):
        # _kl_loss(*latent_dist, storer): after a star, only a name spelled like the parameter is known
        value = next((a for a in call.args if a.__class__ is ast.Name and a.id == param), None)
        if value is None:
            return False
    if value is None:
        return _off(param_default(args, param))
    if value.__class__ in (ast.Compare, ast.BoolOp):
        return modulo_test(ctx, value)  # verbose=it % 200 == 0
    return _off(value) or (value.__class__ is ast.Name and gated_name(ctx, value, call, depth))


def opt_in_branch(ctx: Context, node: AST, func: AST) -> bool:
    """``node`` lies under ``if flag:`` for a parameter of ``func`` that defaults to ``False``,
    and every ``flag=`` the project passes lies in a file that runs no backward pass."""
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    args = func.args
    params = [*args.posonlyargs, *args.args]
    defaults = {a.arg: d for a, d in zip(reversed(params), reversed(args.defaults))}
    defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
    for if_node, in_body in ctx.enclosing_ifs(node):
        test = if_node.test
        if in_body and test.__class__ is ast.Name and test.id in defaults and _false(defaults[test.id]) \
                and ctx.binding_at(test.id, test).kind == "param" and not _enabled_in_training(ctx, test.id):
            return True
    return False


def _false(expr: AST) -> bool:
    return expr.__class__ is ast.Constant and expr.value is False


def _enabled_in_training(ctx: Context, flag: str) -> bool:
    """Does a file of the project that runs a backward pass pass ``flag=`` (other than ``False``)?"""
    key = ("sem:flag-enabled", flag)
    found = ctx.project.answers.get(key)
    if found is None:
        passed = re.compile(r"[(,]\s*" + re.escape(flag) + r"\s*=\s*(?!False\b)")
        texts = [t for _, t in ctx.project.files] or [ctx.source]
        found = any(".backward(" in t and passed.search(t) is not None for t in texts)
        ctx.project.answers[key] = found
    return found


def first_call_cache(ctx: Context, node: AST) -> bool:
    """``if self.x is None: self.x = <read>``: the read runs on the first call only."""
    for if_node, in_body in ctx.enclosing_ifs(node):
        test = if_node.test
        if not in_body or if_node.__class__ is not ast.If or test.__class__ is not ast.Compare or len(test.ops) != 1 \
                or test.ops[0].__class__ is not ast.Is or not _off(test.comparators[0]):
            continue
        attr = test.left
        if attr.__class__ is ast.Attribute and attr.value.__class__ is ast.Name and attr.value.id == "self" and any(
                s.__class__ is ast.Assign and any(t.__class__ is ast.Attribute and t.attr == attr.attr
                                                  and t.value.__class__ is ast.Name and t.value.id == "self" for t in s.targets)
                for s in if_node.body):
            return True
    return False
