"""Helpers of another module of the project that move the tensor they are given to the device
(TW205): ``scores = torch.zeros(...); scores = async_copy_to(scores, gpu)`` with ``async_copy_to``
defined in a utilities package (``obj.cuda(dev, non_blocking=True)``) and re-exported by its
``__init__.py``. The new CPU tensor handed to one is copied across on every call."""

from __future__ import annotations

import ast
import os
import re
from typing import Callable, Iterator, TypeVar

from torchwise.lint.engine import AST, DEF_TYPES, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.starnames import module_file, star_imported_files
from torchwise.lint.semantics.stored import stored_then_moved
from torchwise.lint.semantics.values import local_function

T = TypeVar("T")


def handed_to_movers(ctx: Context, made: Callable[[AST | None], T | None]) -> Iterator[tuple[ast.Call, T]]:
    """``(the helper call, what made says of the new tensor)`` for each new CPU tensor passed as
    the first argument of a module-level function of another project module that moves it."""
    if not ctx.project.files:
        return
    local = {name for name, q in ctx.imports.items() if _project_module(ctx, q.split(".", 1)[0])}
    starred = _star_functions(ctx)  # tensor2var from `from utils import *`
    if not local and not starred:
        return
    for call in ctx.nodes.get(ast.Call, ()):
        func = call.func
        root = func.id if func.__class__ is ast.Name else func.value.id if func.__class__ is ast.Attribute \
            and func.value.__class__ is ast.Name else None
        if not call.args or root not in local and (func.__class__ is not ast.Name or root not in starred):
            continue  # only names imported from the project: async_copy_to, utils.to_gpu
        q = ctx.qualname(func) if root in local else starred[root] if ctx.binding_at(root, call) is None else None
        if q is None or "." not in q or q.startswith(("torch.", "numpy.")) or local_function(ctx, call) is not None \
                or not _may_move(ctx, q):
            continue
        arg = call.args[0]
        found = made(arg)
        if found is None and arg.__class__ is ast.Name:
            found = made(ctx.resolve(arg, call))
            found = found if found is not None and stored_then_moved(ctx, arg, call) else None
        if found is not None and _mover(ctx, q):  # (the helper's module is read only for a new CPU tensor)
            yield call, found


_TOP_DEF = lazy_compile(r"^def (\w+)\(", re.M)


def _star_functions(ctx: Context) -> dict[str, str]:
    """Name -> ``module.name`` for the module-level functions of the project modules this file
    star-imports by absolute name (``from utils import *``), that it does not import otherwise."""
    found = ctx._cache.get("sem:star-functions")
    if found is None:
        found = ctx._cache["sem:star-functions"] = {}
        if "import *" in ctx.source:
            for node, _, text in star_imported_files(ctx, absolute=True):
                for name in _TOP_DEF.findall(text):
                    if name not in ctx.imports:
                        found.setdefault(name, f"{node.module}.{name}")
    return found


def _project_module(ctx: Context, top: str) -> bool:
    """``top`` (the first part of an imported name) is a module or package of the project."""
    tops = ctx.project.answers.get("sem:project-tops")
    if tops is None:
        root = ctx.project.root
        tops = set()
        for p, _ in ctx.project.files:
            rel = p[len(root):] if root and p.startswith(root) else p
            parts = rel.replace(os.sep, "/").strip("/").split("/")
            tops.update(parts[:-1])
            tops.add(parts[-1][:-3] if parts[-1].endswith(".py") else parts[-1])
        ctx.project.answers["sem:project-tops"] = tops
    return top in tops


def _may_move(ctx: Context, q: str) -> bool:
    """A text test before anything is parsed: the module of ``q`` defines the function and moves
    something, or is a package ``__init__.py`` that names it (a re-export)."""
    key = ("sem:may-move", q)
    found = ctx.project.answers.get(key)
    if found is None:
        module, name = q.rsplit(".", 1)
        tail = module.replace(".", "/")
        found = False
        for path, text in ctx.project.files:
            norm = path.replace(os.sep, "/")
            stem = norm[:-3] if norm.endswith(".py") else norm
            stem = stem[: -len("/__init__")] if stem.endswith("/__init__") else stem
            if (stem == tail or stem.endswith("/" + tail)) and name in text:
                found = _text_may_move(ctx, path, text, name, 3)
                break
        ctx.project.answers[key] = found
    return found


_FROM_IMPORT = lazy_compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([^)\n]*)", re.M)


def _text_may_move(ctx: Context, path: str, text: str, name: str, depth: int) -> bool:
    """The module text defines ``name`` and moves something, or (a package ``__init__.py``)
    imports ``name`` from a submodule that may: followed by text, ``depth`` times."""
    if f"def {name}(" in text:
        return ".cuda(" in text or ".to(" in text
    if depth <= 0 or not path.endswith("__init__.py"):
        return False
    for m in _FROM_IMPORT.finditer(text):
        if re.search(r"\b" + re.escape(name) + r"\b", m.group(3)):
            source = module_file(ctx.project, path, m.group(2) or None, len(m.group(1)))
            if source is None:
                return True  # cannot tell: read it later
            return _text_may_move(ctx, source, dict(ctx.project.files).get(source, ""), name, depth - 1)
    return "import *" in text


def _mover(ctx: Context, q: str) -> bool:
    key = ("sem:remote-mover", q)
    found = ctx.project.answers.get(key)
    if found is None:
        module, name = q.rsplit(".", 1)
        hit = _project_def(ctx, module, name)
        found = ctx.project.answers[key] = hit is not None and hit[1].__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) \
            and _moves_first_parameter(*hit)
    return found


def _project_def(ctx: Context, module: str, name: str, depth: int = 3) -> tuple[Context, AST] | None:
    """The module-level ``def name`` of the project module ``module`` (a file, or a package whose
    ``__init__.py`` imports it from a submodule: followed ``depth`` times)."""
    tail = module.replace(".", "/")
    for path, text in ctx.project.files:
        norm = path.replace(os.sep, "/")
        stem = norm[:-3] if norm.endswith(".py") else norm
        if stem.endswith("/__init__"):
            stem = stem[: -len("/__init__")]
        if not (stem == tail or stem.endswith("/" + tail)) or name not in text:
            continue
        if f"def {name}(" in text and ".cuda(" not in text and ".to(" not in text:
            return None  # defined here and moves nothing: not parsed
        if f"def {name}(" not in text and not norm.endswith("__init__.py"):
            return None  # a class, or a name imported from elsewhere: not a helper of this kind
        other = parsed_file(ctx.project, path, text)
        if other is None:
            return None
        for node in other.tree.body:
            if node.__class__ in DEF_TYPES and node.name == name:
                return other, node
            if node.__class__ is ast.ImportFrom and depth > 0 and any((a.asname or a.name) == name for a in node.names):
                source = module_file(ctx.project, path, node.module, node.level)
                real = next(a.name for a in node.names if (a.asname or a.name) == name)
                if source is None:
                    return None
                text = dict(ctx.project.files).get(source, "")
                if f"def {real}(" in text and ".cuda(" not in text and ".to(" not in text:
                    return None
                where = parsed_file(ctx.project, source, text)
                if where is None:
                    return None
                return next(((where, n) for n in where.tree.body if n.__class__ in DEF_TYPES and n.name == real), None) \
                    or _reexported(ctx, source, real, depth - 1)
        return None
    return None


def _reexported(ctx: Context, path: str, name: str, depth: int) -> tuple[Context, AST] | None:
    """``name`` imported by the package ``__init__.py`` at ``path`` from one of its submodules."""
    text = dict(ctx.project.files).get(path, "")
    if depth <= 0 or not path.endswith("__init__.py") or name not in text:
        return None
    where = parsed_file(ctx.project, path, text)
    for node in where.tree.body if where is not None else ():
        if node.__class__ is ast.ImportFrom and any((a.asname or a.name) == name for a in node.names):
            source = module_file(ctx.project, path, node.module, node.level)
            inner = parsed_file(ctx.project, source, dict(ctx.project.files).get(source, "")) if source else None
            if inner is None:
                return None
            real = next(a.name for a in node.names if (a.asname or a.name) == name)
            return next(((inner, n) for n in inner.tree.body if n.__class__ in DEF_TYPES and n.name == real), None) \
                or _reexported(ctx, source, real, depth - 1)
    return None


def _moves_first_parameter(where: Context, func: AST) -> bool:
    """``def async_copy_to(obj, dev): ... obj.cuda(dev, non_blocking=True)``: the function moves its
    first parameter with ``.cuda(...)`` or ``.to(device)``."""
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if not params:
        return False
    first = params[0]
    for node in where.walk_body(func.body):
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.value.__class__ is ast.Name \
                and node.func.value.id == first and (node.func.attr == "cuda" or node.func.attr == "to" and node.args
                                                     and last_name(node.args[0]) not in ("float", "long", "half", "int")):
            return True
    return False
