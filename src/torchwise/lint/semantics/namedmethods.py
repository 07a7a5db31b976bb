"""The method a call names, read in the project class the calling file uses (for TW104):
``model.predict(ex)`` in a training script that imports ``DocReader``, whose ``predict`` runs the
network under ``with torch.no_grad():`` - while another class of the project (a ``Predictor``
the script never names) has a ``predict`` without it. The classes are the project's that define
a method of that name and whose name the calling file mentions."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import Context
from torchwise.lint.semantics.callers import parsed_file


def named_class_method_without_grad(ctx: Context, name: str) -> bool:
    """Every ``name`` method of the project classes this file mentions runs its work under
    ``no_grad()``/``inference_mode()`` (in its body or as a decorator) and backpropagates nothing;
    there is one at least."""
    key = ("namedmethods", name)
    found = ctx._cache.get(key)
    if found is None:
        found = _without_grad(ctx, name)
        ctx._cache[key] = found
    return found


def _without_grad(ctx: Context, name: str) -> bool:
    if not ctx.project.files:
        return False
    needle = f"def {name}("
    bodies = []
    for path, text in ctx.project.files:
        if needle not in text:
            continue
        other = ctx if path == ctx.path else parsed_file(ctx.project, path, text)
        if other is None:
            continue
        for klass in other.nodes.get(ast.ClassDef, ()):
            method = next((m for m in klass.body if m.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and m.name == name), None)
            if method is not None and re.search(rf"\b{klass.name}\b", ctx.source):
                decorated = any("no_grad" in other.text(d) or "inference_mode" in other.text(d) for d in method.decorator_list)
                bodies.append((decorated, other.text(method)))
    return bool(bodies) and all((decorated or "no_grad()" in body or "inference_mode()" in body) and "backward(" not in body
                                for decorated, body in bodies)
