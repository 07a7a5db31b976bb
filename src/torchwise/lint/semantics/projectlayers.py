"""The class a layer call names, when the project defines it: ``layers.Conv2d(...)`` after
``from Layers import layers`` (or ``from .layers import Conv2d``, ``import models.blocks as mb``)
is the ``class Conv2d(nn.Conv2d)`` of the project's ``layers.py``, not torch's. A pruning or
fast-weight library of a project subclasses ``nn.Conv2d``/``nn.BatchNorm2d`` in one module and
builds every network from them in others.

The defining file is the project file whose module name is the import's last module part and
which defines the class; its text is searched for ``class Name`` before it is parsed (once per
process, :func:`~torchwise.lint.semantics.callers.parsed_file`).
"""

from __future__ import annotations

import ast
import os

from torchwise.lint.engine import Context
from torchwise.lint.semantics.callers import module_stem, parsed_file
from torchwise.lint.semantics.projectclasses import class_in, defines


def project_class(ctx: Context, func: ast.AST) -> tuple[Context, ast.ClassDef] | None:
    """The class ``func`` (a call's callee) names and the context of the file defining it: one of
    this file, or one of another module of the project reached through an import. None for
    torch's and other libraries' classes."""
    if func.__class__ is ast.Name and func.id in ctx.local_classes:
        return ctx, ctx.local_classes[func.id]
    where = _imported(ctx, func)
    if where is None:
        return None
    module, name = where
    stem = module.rsplit(".", 1)[-1]
    if not stem or not name[:1].isupper() or not ctx.project.files:
        return None
    key = ("projectlayers:class", stem, name)
    answers = ctx.project.answers
    if key not in answers:
        answers[key] = _find(ctx, stem, name)
    return answers[key]


def _imported(ctx: Context, func: ast.AST) -> tuple[str, str] | None:
    """(module, class name) of ``mod.Name`` / ``Name`` imported from a module (absolute or
    relative import)."""
    q = ctx.qualname(func)
    if q is not None:
        if q.split(".", 1)[0] in ("torch", "torchvision", "torchaudio") or "." not in q:
            return None
        module, name = q.rsplit(".", 1)
        return module, name
    # relative imports: `from .layers import Conv2d`, `from . import layers`, `from ..x import layers as L`
    base = func.value if func.__class__ is ast.Attribute else func
    if base.__class__ is not ast.Name or func.__class__ is ast.Attribute and func.value.__class__ is not ast.Name:
        return None
    for node in ctx.nodes.get(ast.ImportFrom, ()):
        if not node.level:
            continue
        for alias in node.names:
            if (alias.asname or alias.name) != base.id:
                continue
            if func.__class__ is ast.Attribute:  # from . import layers; layers.Conv2d
                return ".".join(filter(None, [node.module, alias.name])), func.attr
            return node.module or "", alias.name  # from .layers import Conv2d
    return None


def _find(ctx: Context, stem: str, name: str, depth: int = 1) -> tuple[Context, ast.ClassDef] | None:
    for path, text in ctx.project.files:
        if path == ctx.path or module_stem(path) != stem:
            continue
        if not defines(text, name, "word"):
            if depth and text.count(name) and os.path.basename(path) == "__init__.py":
                found = _reexported(ctx, path, text, name, depth)  # from .batchnorm import SynchronizedBatchNorm2d
                if found is not None:
                    return found
            continue
        found = class_in(ctx.project, path, text, name)
        if found is not None:
            return found
    return None


def _reexported(ctx: Context, path: str, text: str, name: str, depth: int) -> tuple[Context, ast.ClassDef] | None:
    """A package's ``__init__.py`` handing on a class of one of its modules
    (``from .batchnorm import SynchronizedBatchNorm2d``): that module's class."""
    init = parsed_file(ctx.project, path, text)
    for node in init.nodes.get(ast.ImportFrom, ()) if init is not None else ():
        if node.level == 1 and node.module and any(a.name == name and a.asname in (None, name) for a in node.names):
            return _find(ctx, node.module.rsplit(".", 1)[-1], name, depth - 1)
    return None
