"""What a model's output is, from its class's ``forward``: a module of the project whose every
``return`` ends in a sigmoid or softmax (``return self.sig(out)`` with ``self.sig = nn.Sigmoid()``)
gives probabilities when called (``output = model(x).squeeze(0)``). The class is found in this
file or, by its imported name, in the one other file of the project that defines it (parsed on
demand, once per process)."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import parsed_file

# methods that keep the values (only the shape, dtype or device changes)
SHAPE_ONLY = frozenset({"squeeze", "unsqueeze", "view", "reshape", "contiguous", "float", "double", "half", "cpu",
                        "cuda", "to", "t", "transpose", "permute", "flatten", "detach", "clone", "view_as", "reshape_as"})

Kind = Callable[[Context, AST, AST, int], "str | None"]


def model_output(ctx: Context, call: ast.Call, kind_of: Kind, depth: int) -> str | None:
    """The kind ``kind_of`` gives every return of the ``forward`` of the class that built the
    called object (``model(x)`` with ``model = TCN(...)``), when all agree; else None."""
    if depth <= 0 or call.func.__class__ not in (ast.Name, ast.Attribute):
        return None
    built = ctx.constructed_from(call.func, call)
    if built == "torch.load" and call.func.__class__ is ast.Name:
        built = _global_class(ctx, call.func.id)
    if built is None:
        return None
    found = _class_def(ctx, built)
    if found is None:
        return None
    other, klass = found
    forward = next((f for f in klass.body if f.__class__ is ast.FunctionDef and f.name == "forward"), None)
    if forward is None:
        return None
    kinds = {kind_of(other, r.value, r, depth - 1) if r.value is not None else None
             for r in other.walk_body(forward.body) if r.__class__ is ast.Return}
    return kinds.pop() if len(kinds) == 1 else None


def _global_class(ctx: Context, name: str) -> str | None:
    """The one class a module-level name is built from, its reloads aside: ``model = TCN(...)`` then,
    after training, ``model = torch.load(f)`` (the model the script saved)."""
    kinds = {ctx._call_target(b.value) for b in ctx.bindings(ctx.tree).get(name, ())
             if b.kind == "assign" and b.value is not None}
    kinds.discard("torch.load")
    return kinds.pop() if len(kinds) == 1 else None


def _class_def(ctx: Context, built: str) -> tuple[Context, ast.ClassDef] | None:
    if built.startswith("local:"):
        klass = ctx.local_classes.get(built[6:])
        return (ctx, klass) if klass is not None else None
    if built.startswith("torch") or not ctx.project.files:
        return None
    name = built.rsplit(".", 1)[-1]
    key = ("outputkinds:defined", name)
    files = ctx.project.answers.get(key)
    if files is None:
        files = [(p, t) for p, t in ctx.project.files if f"class {name}(" in t and "def forward" in t]
        ctx.project.answers[key] = files
    files = _by_module(files, built.split(".")[:-1]) if len(files) > 1 else files
    if len(files) != 1 or files[0][0] == ctx.path:
        return None
    other = parsed_file(ctx.project, *files[0])
    klass = other.local_classes.get(name) if other is not None else None
    return (other, klass) if klass is not None else None


def _by_module(files: list[tuple[str, str]], module: list[str]) -> list[tuple[str, str]]:
    """The one file of several defining the class whose path ends in the imported module's path
    (``TCN.poly_music.model`` -> ``.../poly_music/model.py``), the longest such ending first."""
    for k in range(len(module), 0, -1):
        tail = "/".join(module[-k:]) + ".py"
        hits = [(p, t) for p, t in files if p.replace("\\", "/") == tail or p.replace("\\", "/").endswith("/" + tail)]
        if len(hits) == 1:
            return hits
        if hits:
            return []
    return []
