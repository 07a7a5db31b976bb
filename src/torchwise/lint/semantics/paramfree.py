"""Modules without parameters (TW104): a feature front end built from torchaudio transforms
(``self.mel = MelspectrogramStretch(norm='db')``, a class of the project deriving from
``torchaudio.transforms.MelSpectrogram`` whose ``__init__`` adds ``Spectrogram``, ``ComplexNorm``,
a ``nn.Module`` that wraps ``AmplitudeToDB``). Such a module holds buffers only: run on a fresh
tensor, it records no graph, and ``no_grad`` would change nothing.

Known free: torchaudio's transforms, torch's activation, dropout and shape modules, and classes
of the project (found by name in its files, once) whose bases are such classes or ``nn.Module``
and whose ``__init__`` builds nothing but such modules (``super().__init__``, distributions and a
few builtins besides). Anything else - a layer, ``nn.Parameter``, a call of a helper that might
build layers - and the module is not known to be free."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.projectclasses import project_class_named

_FREE_PREFIXES = ("torchaudio.transforms.", "torch.distributions.")
_FREE_TORCH = frozenset({"ReLU", "LeakyReLU", "ELU", "GELU", "SiLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Dropout",
                         "Identity", "Flatten", "Upsample", "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d"})
_BUILTINS = frozenset({"super", "int", "float", "bool", "str", "len", "list", "dict", "tuple", "range", "min", "max", "abs"})
_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


def parameter_free_run(ctx: Context, call: ast.Call) -> bool:
    """``call`` runs a module (``self.mel(sig)``, ``mel(sig)``) that every construction in its
    scope builds from a class without parameters."""
    func = call.func
    if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self":
        klass = ctx.class_of(call)
        values = ctx.self_attr_values(klass, func.attr) if klass is not None else []
    elif func.__class__ is ast.Name:
        b = ctx.binding_at(func.id, call)
        values = [b.value] if b is not None and b.kind == "assign" and b.value is not None else []
    else:
        return False
    return bool(values) and all(v.__class__ is ast.Call and _free_construction(ctx, v, 3) for v in values) \
        and not _fed_on(ctx, call)


def _fed_on(ctx: Context, call: ast.Call) -> bool:
    """The output goes on into another call that may run a network (``inception(upsample(x))``: the
    run reported there is the network's); torch's and NumPy's own functions are no networks."""
    child: AST = call
    for anc in ctx.ancestors(call):
        if anc.__class__ is ast.Call and child is not anc.func:
            if (ctx.qualname(anc.func) or "").split(".", 1)[0] not in ("torch", "numpy", "math", "builtins"):
                return True
        if isinstance(anc, ast.stmt):
            return False
        child = anc
    return False


def _free_construction(ctx: Context, call: ast.Call, depth: int) -> bool:
    q = ctx.qualname(call.func) or ""
    if q.startswith(_FREE_PREFIXES) or q.startswith("torch.nn.") and last_name(call.func) in _FREE_TORCH:
        return True
    name = last_name(call.func)
    if depth <= 0 or not name or q.startswith(("torch.", "numpy.")):
        return False
    local = ctx.local_classes.get(name) if call.func.__class__ is ast.Name else None
    found = (ctx, local) if local is not None else _project_class(ctx, name)
    return found is not None and _free_class(found[0], found[1], depth - 1)


def _project_class(ctx: Context, name: str) -> tuple[Context, ast.ClassDef] | None:
    """The one class of the project named ``name`` (None when none or several)."""
    key = ("paramfree:class", name)
    if key not in ctx.project.answers:
        ctx.project.answers[key] = project_class_named(ctx, name, "line(", top_level=True)
    return ctx.project.answers[key]


def _free_class(where: Context, cls: ast.ClassDef, depth: int) -> bool:
    """Free, and evidently a transform: torchaudio is among its bases or what its ``__init__``
    builds (a bare ``nn.Module`` subclass that builds nothing is no evidence of anything)."""
    evidence = False
    for base in cls.bases:
        q = where.qualname(base) or ""
        if q.startswith("torchaudio.transforms."):
            evidence = True
            continue
        if q in _MODULE_BASES:
            continue
        local = last_name(base)
        if not (local in where.local_classes and depth > 0 and _free_class(where, where.local_classes[local], depth - 1)):
            return False
        evidence = True
    init = next((n for n in cls.body if n.__class__ is ast.FunctionDef and n.name == "__init__"), None)
    calls = _calls(init) if init is not None else []
    if not all(_free_call(where, c, depth) for c in calls):
        return False
    return evidence or any((where.qualname(c.func) or "").startswith("torchaudio.") or (
        c.func.__class__ is ast.Name and c.func.id in where.local_classes) for c in calls)


def _calls(func: ast.FunctionDef) -> list[ast.Call]:
    """The calls of ``func``'s body, lambdas left out (they run later, in the forward pass)."""
    out, todo = [], list(func.body)
    while todo:
        node = todo.pop()
        if node.__class__ is ast.Lambda:
            continue
        if node.__class__ is ast.Call:
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _free_call(where: Context, call: ast.Call, depth: int) -> bool:
    func = call.func
    if func.__class__ is ast.Attribute and func.attr == "__init__" and func.value.__class__ is ast.Call:
        return True  # super().__init__(...): the bases are checked
    if func.__class__ is ast.Name and func.id in _BUILTINS and where.qualname(func) in (None, func.id, f"builtins.{func.id}"):
        return True
    q = where.qualname(func) or ""
    if q.startswith(_FREE_PREFIXES) or q.startswith("torch.nn.") and last_name(func) in _FREE_TORCH:
        return True
    name = last_name(func)
    local = where.local_classes.get(name) if func.__class__ is ast.Name else None
    return local is not None and depth > 0 and _free_class(where, local, depth - 1)
