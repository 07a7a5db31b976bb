"""A method that runs the model with autograd on beside methods of its class that run the same
model under ``torch.no_grad()`` (TW104): a visualiser or predictor class (no ``nn.Module``, in a
file that trains nothing) whose ``reconstruct()`` wraps ``self.model(x)`` in no_grad while its
``_decode_latents()`` returns ``self.model.decoder(z).cpu()`` bare - its output taken to the host
on the spot (``.cpu()``, ``.numpy()``, ``.tolist()``, ``.item()``), in a class with no method named
for training (``train``, ``learn``, ``update``, ``step``...: an agent's passes may feed an update
made elsewhere). The class itself shows that its passes need no graph; the bare one keeps a
graph nobody uses."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.models import is_module_instance
from torchwise.lint.semantics.projectclasses import is_module_class_def
from torchwise.lint.semantics.steps import training_calls

# methods of a module that do not run it
_NOT_RUNS = frozenset({"state_dict", "load_state_dict", "parameters", "named_parameters", "to", "cuda", "cpu", "eval", "train",
                       "apply", "modules", "children", "zero_grad", "requires_grad_", "half", "float", "double", "buffers",
                       "named_modules", "register_forward_hook", "register_buffer", "add_module", "get_submodule"})
_GRAD = ("backward(", "autograd.grad(", "autograd.functional", "enable_grad", "set_grad_enabled", "requires_grad = True", "requires_grad_()")


def _model_run(node: ast.AST) -> str | None:
    """``self.model(x)`` -> "model"; ``self.model.decoder(z)`` -> "model" (a call with arguments of
    a submodule or method of ``self.model`` that runs it); else None."""
    if node.__class__ is not ast.Call or not (node.args or node.keywords):
        return None
    func = node.func
    if func.__class__ is not ast.Attribute:
        return None
    owner = func.value
    if owner.__class__ is ast.Name and owner.id == "self":
        return func.attr  # self.model(x)
    if owner.__class__ is ast.Attribute and owner.value.__class__ is ast.Name and owner.value.id == "self" \
            and func.attr not in _NOT_RUNS and not func.attr.startswith("_"):
        return owner.attr  # self.model.decoder(z)
    return None


_TRAINING = ("train", "learn", "update", "fit", "optimi", "step", "compute_loss", "calculate")
_HOST = frozenset({"cpu", "numpy", "tolist", "item"})


def _to_host(ctx: Context, call: ast.Call) -> bool:
    """The run's output goes to the host on the spot: ``self.model.decoder(z).cpu()``."""
    parent = ctx.parent(call)
    return parent.__class__ is ast.Attribute and parent.attr in _HOST and ctx.parent(parent).__class__ is ast.Call


def peer_runs(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(call, message)``: the first bare run of a model in a method whose class runs that model
    under no_grad elsewhere (see the module doc)."""
    src = ctx.source
    if "no_grad" not in src or "class " not in src or any(g in src for g in _GRAD) or training_calls(ctx):
        return
    for klass in ctx.nodes.get(ast.ClassDef, ()):
        text = ctx.text(klass)
        if "no_grad" not in text or ".cpu()" not in text and ".numpy()" not in text and ".tolist()" not in text \
                and ".item()" not in text or is_module_class_def(ctx, klass):
            continue  # (a module's own methods are parts of some forward pass)
        methods = [m for m in klass.body if m.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and m.name != "__init__"]
        if any(m.name.lower().lstrip("_").startswith(_TRAINING) for m in methods):
            continue  # an agent or trainer: its passes may feed an update made elsewhere
        runs = [(m, n, _model_run(n)) for m in methods for n in ast.walk(m)]
        guarded = {name for _, n, name in runs if name is not None and under_no_grad(ctx, n)}
        attrs = {name for _, n, name in runs if name is not None and n.func.value.__class__ is ast.Name}
        guarded &= {a for a in attrs}  # a model the class calls itself somewhere (not only a helper object)
        done = set()
        for method, node, name in runs:
            if name not in guarded or id(method) in done or under_no_grad(ctx, node) or not _to_host(ctx, node):
                continue
            if any(under_no_grad(ctx, c) for c in ctx.calls_named(method.name)):
                continue  # a helper the class calls under no_grad (a caller may still call it bare: not judged here)
            done.add(id(method))
            yield node, (f"{method.name}() runs {ctx.text(node.func)} with autograd recording, while other methods of "
                         f"{klass.name} run self.{name} under no_grad; this pass needs no graph either")


def mixed_function_runs(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """A module-level function of a file that trains nothing (a benchmark entry such as ``def
    test():`` that parses its own arguments) that runs part of its model passes under
    ``torch.no_grad()`` and one bare (``out = demucs(x[None])[0]``, only compared and printed):
    the function shows the passes need no graph. Not when the bare result is returned (a caller
    may backpropagate through it)."""
    src = ctx.source
    if "no_grad" not in src or any(g in src for g in _GRAD) or training_calls(ctx):
        return
    for func in ctx.tree.body:
        if func.__class__ is not ast.FunctionDef or "no_grad" not in ctx.text(func):
            continue
        calls = [n for n in ast.walk(func) if n.__class__ is ast.Call]
        if not any(under_no_grad(ctx, c) for c in calls):
            continue
        returned = {n.id for r in ast.walk(func) if r.__class__ is ast.Return and r.value is not None
                    for n in ast.walk(r.value) if n.__class__ is ast.Name}
        for call in calls:
            if not (call.args or call.keywords) or call.func.__class__ is not ast.Name or under_no_grad(ctx, call) \
                    or ctx.enclosing_loops(call):
                continue
            stmt = ctx.statement_of(call)
            bound = {n.id for t in getattr(stmt, "targets", ()) for n in ast.walk(t) if n.__class__ is ast.Name}
            if stmt.__class__ is not ast.Assign or bound & returned or not is_module_instance(ctx, call.func, call, by_name=False):
                continue
            yield call, (f"{func.name}() runs {ctx.text(call.func)} with autograd recording while its other passes run "
                         "under no_grad; this one needs no graph either")
            break
    yield from _script_feeds(ctx)


def _script_feeds(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """The top-level code of an inference script (the file trains nothing) that runs a model bare
    (``sF = vgg(styleV)``, in its loop or before it) and hands the result to the passes it runs
    under ``torch.no_grad()`` (``feature = matrix(cF, sF)``): the features need no graph either."""
    top = [n for n in ctx.walk_body(ctx.tree.body) if n.__class__ is ast.Call]
    guarded = [c for c in top if under_no_grad(ctx, c)]
    if not guarded:
        return
    read = {n.id for c in guarded for a in [*c.args, *(k.value for k in c.keywords)] for n in ast.walk(a)
            if n.__class__ is ast.Name}
    for call in top:
        if not call.args or call.func.__class__ is not ast.Name or under_no_grad(ctx, call):
            continue
        stmt = ctx.statement_of(call)
        if stmt.__class__ is not ast.Assign or stmt.value is not call:
            continue
        bound = {n.id for t in stmt.targets for n in ast.walk(t) if n.__class__ is ast.Name}
        if bound & read and is_module_instance(ctx, call.func, call, by_name=False):
            yield call, (f"{ctx.text(call.func)}(...) runs with autograd recording, and its result feeds the passes this "
                         "script runs under no_grad: it needs no graph either")


__all__ = ["mixed_function_runs", "peer_runs"]
