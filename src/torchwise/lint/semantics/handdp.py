"""DataParallel written by hand (TW201): a function that calls ``torch.nn.parallel.replicate``
and ``parallel_apply`` (with ``scatter``/``gather`` around them), and the calls of such functions
of the file or of the project in code that trains."""

from __future__ import annotations

import ast
from typing import Callable, Iterator

from torchwise.lint.engine import Context
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.steps import training_calls


def _hand_dp(where: Context, func: ast.AST) -> bool:
    """A function that runs a module on several GPUs by hand: ``torch.nn.parallel.replicate``
    and ``parallel_apply`` (with ``scatter``/``gather`` around them) - DataParallel written out."""
    names = {where.qualname(n.func) for n in ast.walk(func) if n.__class__ is ast.Call}
    return "torch.nn.parallel.replicate" in names and "torch.nn.parallel.parallel_apply" in names


def _hand_dp_names(ctx: Context) -> set[str]:
    """Names of the hand-written DataParallel functions of this file and of the project
    (the project's files are searched for them once per process)."""
    key = "tw201:hand-dp"
    found = ctx.project.answers.get(key)
    if found is None:
        found = set()
        for path, text in ctx.project.files:
            other = parsed_file(ctx.project, path, text) if "parallel_apply(" in text and "replicate(" in text else None
            if other is not None:
                found |= {f.name for f in other.nodes.get(ast.FunctionDef, ()) if _hand_dp(other, f)}
        ctx.project.answers[key] = found
    if "parallel_apply(" in ctx.source:
        return found | {f.name for f in ctx.nodes.get(ast.FunctionDef, ()) if _hand_dp(ctx, f)}
    return found


def hand_dp_steps(ctx: Context, without_cuda: Callable[[Context, ast.Call], bool]) -> Iterator[ast.Call]:
    """Calls of a hand-written DataParallel function in a function (or script) that trains -
    it runs a backward pass or an optimizer step - outside ``no_grad`` and the no-GPU branch
    (``without_cuda`` tells that branch)."""
    names = _hand_dp_names(ctx)
    if not names:
        return
    trainers = {id(ctx.function_of(c)) for c in training_calls(ctx)}
    for call in ctx.calls_named(*names):
        func = ctx.function_of(call)
        if id(func) in trainers and (func is None or func.name not in names) and not under_no_grad(ctx, call) and not (
                without_cuda(ctx, call)):
            yield call
