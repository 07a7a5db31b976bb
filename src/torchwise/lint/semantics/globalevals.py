"""Global networks of an inference script (TW104): a model the script builds or restores at module
level and puts in eval mode there - ``srresnet = torch.load(ckpt)['model'].to(device)`` then
``srresnet.eval()``, or ``C = D_VECTOR(dim=80).eval().cuda()`` in one chain - and then runs in the
script's own functions (``def visualize_sr(img): sr = srresnet(lr)``) or in a module-level loop, with
autograd on. The script trains nothing and takes no gradients, so every such run builds a graph
nobody uses.

Not a function another module of the project calls (a perceptual-loss helper of a ``utils`` file
with a global eval-mode network, called from a training script), nor one handed on as a value,
nor one every way in passes under no_grad; not a script that goes back to training mode, asks for
gradients (``requires_grad``, ``autograd``) or steps an optimizer."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.evalcallers import reached_only_under_no_grad
from torchwise.lint.semantics.frozen import eval_calls
from torchwise.lint.semantics.steps import training_calls

_GRAD_TEXT = ("requires_grad", "autograd.grad", "autograd.backward", "autograd.Function", "autograd.functional", ".train(", "backward", "set_grad_enabled", "enable_grad")
_CHAIN = frozenset({"eval", "cuda", "to", "cpu", "float", "half", "double"})


def _chained_eval(value: ast.AST) -> bool:
    """``D_VECTOR(dim=80).eval().cuda()``: a built module put in eval mode in the same chain."""
    node = value
    while node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in _CHAIN:
        if node.func.attr == "eval" and not node.args and not node.keywords:
            return node.func.value.__class__ is ast.Call  # (on a constructor or a load, not on a name)
        node = node.func.value
    return False


def _evaluated_globals(ctx: Context) -> dict[str, tuple[tuple[int, int], bool]]:
    """Module-level names put in eval mode at module level: name -> (where, by a chain)."""
    out: dict[str, tuple[tuple[int, int], bool]] = {}
    for node in _top_statements(ctx.tree.body):
        if node.__class__ is ast.Assign and len(node.targets) == 1 and node.targets[0].__class__ is ast.Name \
                and _chained_eval(node.value):
            out.setdefault(node.targets[0].id, ((node.lineno, node.col_offset), True))
    evals = [c for c in ctx.calls_named("eval") if not c.args and not c.keywords and ctx.function_of(c) is None
             and c.func.__class__ is ast.Attribute and c.func.value.__class__ is ast.Name]
    known = {id(c) for c in eval_calls(ctx, evals)}
    for call in evals:  # (or a name the file also calls with arguments: `srresnet.eval()`, then `srresnet(lr)`)
        name = call.func.value.id
        if id(call) in known or any(c.func.__class__ is ast.Name and (c.args or c.keywords) for c in ctx.calls_named(name)):
            out.setdefault(name, ((call.lineno, call.col_offset), False))
    return out


def global_model_runs(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(call, message)`` for runs of a global eval-mode network of a script that trains nothing:
    in a module-level function of the file that only this file calls, or (for a network put in eval
    mode in its building chain) in a module-level loop."""
    if ".eval()" not in ctx.source or any(w in ctx.source for w in _GRAD_TEXT) or training_calls(ctx):
        return
    models = _evaluated_globals(ctx)
    if not models:
        return
    checked: dict[int, bool] = {}
    for name, (where, chained) in models.items():
        for call in ctx.calls_named(name):
            if call.func.__class__ is not ast.Name or not (call.args or call.keywords) or under_no_grad(ctx, call):
                continue
            func = ctx.function_of(call)
            if func is None:
                if chained and (call.lineno, call.col_offset) > where and (ctx.enclosing_loops(call) or _restored(ctx, name, call)):
                    yield call, f"{name} (put in eval mode where it is built) runs in the script's {'loop' if ctx.enclosing_loops(call) else 'code'} with autograd recording; inference needs no graph"
                continue
            if func.__class__ is ast.Lambda or ctx.parent(func) is not ctx.tree or name in ctx.bindings(func):
                continue
            if id(func) not in checked:
                checked[id(func)] = _own_function(ctx, func)
            if checked[id(func)]:
                yield call, (f"{func.name}() runs the global {name} (in eval mode since module level) with autograd "
                             "recording; the script trains nothing, so the graph is never used")


def _top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's statements, also those of its top-level ``if`` blocks (``if __name__ == "__main__":``)."""
    for node in body:
        yield node
        if node.__class__ is ast.If:
            yield from _top_statements(node.body)
            yield from _top_statements(node.orelse)


def _restored(ctx: Context, name: str, call: ast.Call) -> bool:
    """``model.load_state_dict(...)`` at module level before ``call``: the single run is inference with trained weights."""
    return any(ctx.text(c.func) == f"{name}.load_state_dict" and ctx.function_of(c) is None
               and (c.lineno, c.col_offset) < (call.lineno, call.col_offset) for c in ctx.calls_named("load_state_dict"))


def _own_function(ctx: Context, func: ast.FunctionDef) -> bool:
    """Only this file calls ``func`` (and it is not handed on as a value), and some way in runs with
    autograd on."""
    if any(last_name(d) in ("no_grad", "inference_mode") for d in func.decorator_list):
        return False
    calls = [c for c in ctx.calls_named(func.name) if c.func.__class__ is ast.Name]
    if not calls:
        return False
    named = sum(1 for n in ctx.nodes.get(ast.Name, ()) if n.id == func.name and n.ctx.__class__ is ast.Load)
    if named != len(calls) or any(True for _ in project_calls(ctx, func.name)):
        return False  # handed on as a value (`pool.map(f, ...)` is read by another pass), or called elsewhere
    return not reached_only_under_no_grad(ctx, func)
