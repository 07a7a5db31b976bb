"""A test pass that reuses the training loop (TW104): ``def test(self, epoch):
self.iteration(epoch, self.test_data, train=False)`` - or, after ``self.model.eval()`` in any
method, ``self._run_one_epoch(epoch, cross_valid=True)`` - where the loop runs the model with no
``no_grad`` of its own (the backward sits under ``if train:``) and the call is not under no_grad
either. Reported at the loop's forward pass."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.evalregions import eval_flag
from torchwise.lint.semantics.frozen import eval_calls
from torchwise.lint.semantics.models import is_module_instance
from torchwise.lint.semantics.steps import is_eval_name
from torchwise.lint.semantics.values import local_function

_GRAD_SWITCHES = ("no_grad", "set_grad_enabled", "inference_mode")


def _plain_callee(func: ast.AST) -> bool:
    """``model``, ``self.model``: not an arbitrary attribute chain like ``solver.model``."""
    if func.__class__ is ast.Name:
        return True
    return func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self"


def shared_loop_runs(ctx: Context, scopes: dict[int, ast.AST]) -> Iterator[tuple[ast.Call, str, str]]:
    """``(forward pass, message, suggestion)`` for each evaluation scope of ``scopes`` (functions
    named for evaluation, and scopes - a script's module-level code too - that call ``X.eval()``)
    that runs the shared loop this way: every forward pass of the loop outside the branches only
    training takes (``if training: ... backward ...`` when ``training=False`` is passed)."""
    flagged = _flag_calls(ctx)
    if not flagged:
        return
    for scope in scopes.values():
        calls = [c for c in flagged if ctx.scope_of(c) is scope]
        if not calls:
            continue
        is_module = scope.__class__ is ast.Module
        named = not is_module and is_eval_name(scope.name)
        evals = [] if named else [(c.lineno, c.col_offset) for c in eval_calls(ctx, list(ctx.walk_body(scope.body)))]
        if not named and not evals:
            continue
        where = "the script" if is_module else f"{scope.name}()"
        done: set[int] = set()
        for call in calls:
            flag = eval_flag(call)
            if not named and not any(e < (call.lineno, call.col_offset) for e in evals) \
                    or under_no_grad(ctx, call):
                continue  # (outside an evaluation function: only after model.eval(); the pass run under no_grad)
            callee = local_function(ctx, call)
            if callee is None or id(callee) in scopes or id(callee) in done or any(w in ctx.text(callee) for w in _GRAD_SWITCHES):
                continue
            done.add(id(callee))
            skipped = _training_branches(callee, flag)
            for node in ctx.walk_body(callee.body):
                if node.__class__ is ast.Call and (node.func.__class__ is ast.Attribute and node.func.attr == "forward"
                                                   and is_module_instance(ctx, node.func.value, node) or
                                                   _plain_callee(node.func) and is_module_instance(ctx, node.func, node)) \
                        and not any(a <= node.lineno <= b for a, b in skipped):
                    yield node, (f"{where} runs {callee.name}(..., {flag}), whose {ctx.text(node.func)} records "
                                 "autograd; evaluation needs no graph"), (
                        f"run it under `with torch.no_grad():` in {where} (and call model.eval()), or "
                        "torch.set_grad_enabled(train) in the loop")


def _training_branches(callee: ast.AST, flag: str) -> list[tuple[int, int]]:
    """Line ranges of ``callee`` that run only in training under ``flag`` (``training=False``: the
    body of ``if training:``, the ``else`` of ``if not training:``; ``cross_valid=True``: the
    ``else`` of ``if cross_valid:``)."""
    name, value = flag.split("=")
    params = {a.arg for a in [*callee.args.args, *callee.args.kwonlyargs]}
    if name not in params:
        return []
    out = []
    for node in ast.walk(callee):
        if node.__class__ is not ast.If:
            continue
        test, negated = node.test, False
        if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
            test, negated = test.operand, True
        if test.__class__ is not ast.Name or test.id != name:
            continue
        true_branch_trains = (value == "False") != negated  # the branch taken when the flag has its training value
        branch = node.body if true_branch_trains else node.orelse
        if branch:
            out.append((branch[0].lineno, branch[-1].end_lineno or branch[-1].lineno))
    return out


def _flag_calls(ctx: Context) -> list[ast.Call]:
    """The calls that pass a flag running a shared loop as evaluation (:func:`eval_flag`), in
    source order: found from the file's index of calls once."""
    found = ctx._cache.get("sem:eval-flag-calls")
    if found is None:
        found = ctx._cache["sem:eval-flag-calls"] = sorted(
            (c for c in ctx.nodes.get(ast.Call, ()) if c.keywords and eval_flag(c) is not None), key=lambda c: (c.lineno, c.col_offset))
    return found


__all__ = ["shared_loop_runs"]
