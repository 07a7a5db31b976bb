"""Runs of a restored model in an inference script that never says it evaluates (TW104): a script
that trains nothing and asks for no gradient restores trained weights (``model.load_state_dict(
torch.load(path))``, ``model = torch.load(path)["model"]``, ``net = Tagger.load_from_checkpoint(ckpt)``)
and runs the model over its data, with no ``.eval()`` and no ``torch.no_grad()`` anywhere - a
super-resolution test script upscaling a folder of images, an NER inference script. Restoring
weights and running them is the evidence of inference when nothing in the file trains."""

from __future__ import annotations

import ast
import os
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.semantics.evalsingle import shape_probe
from torchwise.lint.semantics.steps import training_calls

# anything of these in the file: it trains, takes gradients, switches grad mode, or hands the model on
_GRAD_WORDS = ("no_grad", "inference_mode", "set_grad_enabled", "requires_grad", "backward", "autograd.grad",
               ".grad", "zero_grad", "optim", ".train(", ".fit(", "trainer.", "Trainer(", "perturb", "attack",
               "grad_fn", "functorch", "torch.func", "detect_anomaly")
_RESTORES = ("load_state_dict(", "torch.load(", "load_from_checkpoint(", "jit.load(")
_LOADERS = frozenset({"torch.load", "torch.jit.load"})
_MOVES = frozenset({"to", "cuda", "cpu", "float", "half", "double"})
_MEMBERS = frozenset({"model", "module", "forward", "net"})  # `restored.model(x)`: the wrapper's network


def _loaded_value(ctx: Context, value: ast.AST) -> bool:
    """``torch.load(path)``, ``torch.load(path)["model"]``, ``Tagger.load_from_checkpoint(...)``
    (possibly followed by ``.to(device)``/``.cuda()``)."""
    while value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr in ("to", "cuda", "cpu", "float"):
        value = value.func.value
    if value.__class__ is ast.Subscript:
        value = value.value
    if value.__class__ is not ast.Call:
        return False
    if value.func.__class__ is ast.Attribute and value.func.attr == "load_from_checkpoint":
        return True
    return ctx.qualname(value.func) in _LOADERS


def _restored(ctx: Context) -> tuple[dict[tuple[int, str], list[tuple[int, int]]], set[int]]:
    """Where each scope restores weights into a name (``name.load_state_dict(torch.load(...))``:
    (id of scope, name) -> positions), and the assignments that bind a loaded model."""
    loads: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for call in ctx.calls_named("load_state_dict"):
        f = call.func
        if f.__class__ is ast.Attribute and f.value.__class__ is ast.Name and call.args and "load" in ctx.text(call.args[0]):
            loads.setdefault((id(ctx.scope_of(call)), f.value.id), []).append((call.lineno, call.col_offset))
    assigns = {id(n) for n in ctx.nodes.get(ast.Assign, ())
               if len(n.targets) == 1 and n.targets[0].__class__ is ast.Name and _loaded_value(ctx, n.value)}
    return loads, assigns


def _moved(b, name: str) -> bool:
    """``model = model.cuda()``, ``net = net.to(device)``: the same model moved."""
    v = b.value
    return (b.kind == "assign" and v.__class__ is ast.Call and v.func.__class__ is ast.Attribute
            and v.func.attr in _MOVES and v.func.value.__class__ is ast.Name and v.func.value.id == name)


def _sees_restore(ctx: Context, name: str, call: ast.Call, loads, assigns) -> bool:
    """The binding of ``name`` the run sees (through moves to a device) holds restored weights: it
    is a loaded model, or the scope loads a state dict into it after binding it and before the run."""
    pos = (call.lineno, call.col_offset)
    b = ctx.binding_at(name, call)
    while b is not None and _moved(b, name):
        b = ctx.binding_at(name, b.node)
    if b is None or b.kind != "assign" or ctx.scope_of(b.node) is not ctx.scope_of(call):
        return False
    if id(b.node) in assigns:
        return True
    return any(b.pos <= at < pos for at in loads.get((id(ctx.scope_of(call)), name), ()))


def _imported_elsewhere(ctx: Context, func: ast.AST) -> bool:
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    head = f"{func.name}("
    return any(text is not ctx.source and text != ctx.source and stem in text and head in text for _, text in ctx.project.files)


def restored_runs(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(call, message)`` for each run of a restored model, after the restore in the same scope,
    in a file with no training, no gradient API, no grad switch and no ``.eval()`` (other passes
    read files that say they evaluate). Not in a function other files call (they set grad mode)."""
    src = ctx.source
    if not any(r in src for r in _RESTORES) or ".eval()" in src or any(w in src for w in _GRAD_WORDS):
        return
    if training_calls(ctx):
        return
    loads, assigns = _restored(ctx)
    if not loads and not assigns:
        return
    for call in ctx.nodes.get(ast.Call, ()):
        f = call.func
        if not (call.args or call.keywords):
            continue
        if f.__class__ is ast.Name:
            name = f.id
        elif f.__class__ is ast.Attribute and f.attr in _MEMBERS and f.value.__class__ is ast.Name:
            name = f.value.id
        else:
            continue
        if not _sees_restore(ctx, name, call, loads, assigns) or shape_probe(ctx, call):
            continue  # (a model file's smoke test on `torch.zeros(1, 3, 224, 224)` prints shapes: no inference)
        scope = ctx.scope_of(call)
        if scope.__class__ is not ast.Module and (scope.__class__ is ast.Lambda or _imported_elsewhere(ctx, scope)):
            continue
        yield call, (f"{ctx.text(f)} runs the restored model with autograd recording in a script that trains nothing; "
                     "inference needs no graph")
