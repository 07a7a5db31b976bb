"""The values every call in the project passes for one parameter of a function (for
:mod:`.unrunbranches`): ``def loss(self, pred, label, type='softmax')`` called as
``model.loss(ypred, label)`` and ``super().loss(pred, label)`` always gets ``'softmax'``, so an
``if type == 'margin':`` in it never runs.

The calls are found by the function's name: ``name(...)`` for a module-level function,
``x.name(...)`` for a method. A call whose arguments do not fit the signature (more positional
arguments than it takes, a keyword it lacks) goes to another function of that name and is left
out. Nothing is known (None) when the name is used other than in a call or its ``def`` (handed
on as a callback, looked up in a registry), a call passes ``*args``/``**kwargs``, no call is
seen, the name occurs in too many files or in a config, or the function is public in a module
its package exports (``__all__``) or in an installable package: callers outside the project.
"""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import Context, argument, has_star_args
from torchwise.lint.semantics.callers import MAX_CALLER_FILES, parsed_file
from torchwise.lint.semantics.deadmodules import named_in_references

UNKNOWN = object()
_PACKAGE_FILES = ("setup.py", "pyproject.toml", "setup.cfg")


def parameter_values(ctx: Context, func: ast.FunctionDef, param: str) -> list | None:
    """The constant each call of ``func`` in the project passes for ``param`` (its default where
    a call leaves it out; ``UNKNOWN`` for a value that is no constant), or None (module doc)."""
    key = ("callvalues", id(func), param)
    if key in ctx._cache:
        return ctx._cache[key]
    found = _values(ctx, func, param)
    ctx._cache[key] = found
    return found


def _values(ctx: Context, func: ast.FunctionDef, param: str) -> list | None:
    args = func.args
    if args.vararg or args.kwarg or func.decorator_list or func.name.startswith("__"):
        return None
    owner = ctx.parent(func)
    method = owner.__class__ is ast.ClassDef
    if not (owner is ctx.tree or method and ctx.parent(owner) is ctx.tree):
        return None
    names = [a.arg for a in [*args.posonlyargs, *args.args]][1 if method else 0:]
    if param not in names and param not in [a.arg for a in args.kwonlyargs]:
        return None
    if _exported(ctx, func.name) or named_in_references(ctx, func.name):
        return None
    word = re.compile(rf"(?<![\w]){re.escape(func.name)}(?![\w])")
    others = [(p, t) for p, t in ctx.project.files if p != ctx.path and func.name in t and word.search(t)]
    if len(others) > MAX_CALLER_FILES:
        return None
    defaults = dict(zip(reversed(names), reversed(args.defaults)))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    keywords = set(names) | {a.arg for a in args.kwonlyargs}
    out: list = []
    for where in [ctx, *(parsed_file(ctx.project, p, t) for p, t in others)]:
        if where is None:
            return None
        kinds = (ast.Attribute,) if method else (ast.Name, ast.Attribute)  # (utils.helper(...) reaches a function too)
        for node in [n for k in kinds for n in where.nodes.get(k, ())]:
            if (node.attr if node.__class__ is ast.Attribute else node.id) != func.name or node.ctx.__class__ is not ast.Load:
                continue  # (self.loss = nn.L1Loss(), loss = ...: another object under that name)
            call = where.parent(node)
            if call.__class__ is not ast.Call or call.func is not node:
                return None  # handed on, looked up: calls we cannot see
            if has_star_args(call):
                return None
            if len(call.args) > len(names) or any(k.arg not in keywords for k in call.keywords):
                continue  # does not fit: another function of that name
            value = argument(call, param, names.index(param) if param in names else None)
            value = value if value is not None else defaults.get(param)
            out.append(value.value if value is not None and value.__class__ is ast.Constant else UNKNOWN)
    return out or None


def _exported(ctx: Context, name: str) -> bool:
    """A public name whose callers may be outside the project: listed in ``__all__``, or in a
    module of an installable package."""
    if "__all__" in ctx.source and (f"'{name}'" in ctx.source or f'"{name}"' in ctx.source):
        return True
    if name.startswith("_"):
        return False
    return installable(ctx)


def extension_only(setup_text: str) -> bool:
    """A ``setup.py`` that only builds a compiled extension (``ext_modules=[CppExtension(...)]``)
    and installs no Python module (no ``packages``, ``py_modules``, ``package_dir``, ``scripts``,
    ``entry_points``, no ``**kwargs``): the scripts beside it are no API."""
    return "ext_modules" in setup_text and not any(w in setup_text for w in (
        "packages", "py_modules", "package_dir", "scripts", "entry_points", "**"))


def _extension_setup_at(folder: str) -> bool:
    """``folder`` holds a ``setup.py`` that only builds an extension, and no other package file."""
    if any(os.path.isfile(os.path.join(folder, f)) for f in _PACKAGE_FILES if f != "setup.py"):
        return False
    try:
        with open(os.path.join(folder, "setup.py"), encoding="utf-8", errors="replace") as fh:
            return extension_only(fh.read())
    except OSError:
        return False


def installable(ctx: Context) -> bool:
    """The file lies in an installable package: ``setup.py``, ``pyproject.toml`` or ``setup.cfg``
    at or above its folder (found once per file) - not a ``setup.py`` that only compiles an
    extension (:func:`extension_only`)."""
    found = ctx._cache.get("neverruns:package")
    if found is None:
        folder = os.path.dirname(os.path.abspath(ctx.path))
        found = any(os.path.basename(p) in _PACKAGE_FILES and folder.startswith(os.path.dirname(os.path.abspath(p)))
                    and not extension_only(t) for p, t in ctx.project.files)
        if not found:
            here = folder
            for _ in range(6):  # setup.py / pyproject.toml are not Python files of the project: look on disk
                if any(os.path.isfile(os.path.join(here, f)) for f in _PACKAGE_FILES) and not _extension_setup_at(here):
                    found = True
                    break
                root = ctx.project.root
                if not root or os.path.abspath(here) == os.path.abspath(root) or os.path.dirname(here) == here:
                    break
                here = os.path.dirname(here)
        ctx._cache["neverruns:package"] = found
    return found
