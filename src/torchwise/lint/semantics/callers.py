"""Who calls a function, across the project: the call sites of a function defined in one
module, in the other modules that import it (``engine.train(model, train_loader, ...)`` in
``train.py`` for ``def train`` in ``engine.py``), with the argument each passes for a parameter.
The callers' files are parsed only when a rule asks, once per process."""

from __future__ import annotations

import ast
import os
import re
from typing import Callable, Iterator

from torchwise.lint.engine import AST, Context, argument, legacy
from torchwise.lint.facts import ProjectFacts
from torchwise.lint.semantics.projectcode import share_context
from torchwise.lint.semantics.values import local_function

# a function called from more files than this is a library entry point: its callers tell little
MAX_CALLER_FILES = 8


def parsed_file(facts: ProjectFacts, path: str, text: str) -> Context | None:
    """The context of another file of the project (parsed once per process)."""
    key = ("file", path)
    if key not in facts.answers:
        try:
            facts.answers[key] = Context(text, path, legacy.parse(text, path), facts)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            facts.answers[key] = None
        else:
            share_context(facts, facts.answers[key])  # parsed once: its own lint, if still to come, reuses it
    return facts.answers[key]


def imports_module(text: str, stem: str) -> bool:
    """Does this text import the module ``stem`` (``import engine``, ``from pkg import engine``,
    ``from engine import train``, ``from .engine import train``, ``import lib.engine as engine``)? A text test, then confirmed
    on the parsed imports by :func:`_call_sites`."""
    return (f"import {stem}" in text or f" {stem} import" in text or f".{stem} import" in text
            or f", {stem}" in text or f"import {stem}," in text or f".{stem} as " in text)


def module_stem(path: str) -> str:
    """The name a module is imported by: the file's stem, the folder's name for a package's ``__init__.py``."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.basename(os.path.dirname(path)) or stem if stem == "__init__" else stem


def _imports_package(ctx: Context, path: str, text: str) -> bool:
    """``from . import name`` in a module of the package whose ``__init__.py`` ``ctx`` is."""
    return os.path.basename(ctx.path) == "__init__.py" and "from . import" in text \
        and os.path.dirname(path) == os.path.dirname(ctx.path)


def project_calls(ctx: Context, name: str) -> Iterator[tuple[Context, ast.Call]]:
    """``(caller's context, call)`` for every call of ``name`` - a function or class defined at
    the top of this file - from another module of the project that imports it (also a package's
    ``__init__.py``, imported by the package's name or ``from . import``)."""
    facts = ctx.project
    stem = module_stem(ctx.path)
    key = ("callers", ctx.path, name)
    found = facts.answers.get(key)
    if found is None:
        files = [(p, t) for p, t in facts.files if p != ctx.path and f"{name}(" in t
                 and (imports_module(t, stem) or _imports_package(ctx, p, t))]
        found = []
        if len(files) <= MAX_CALLER_FILES:
            for path, text in files:
                other = parsed_file(facts, path, text)
                if other is not None:
                    found.extend((other, call) for call in _call_sites(other, stem, name))
        facts.answers[key] = found
    return iter(found)


def project_arguments(ctx: Context, func: AST, param: str, star: bool = False) -> Iterator[tuple[Context, AST, ast.Call]]:
    """``(caller's context, argument, call)`` for every call of the module-level function ``func``
    of this file made from another module of the project that imports it, passing ``param``
    (with ``star``, also from modules that take it with ``from <this module> import *``).
    Yields nothing when the function is not reachable that way or has too many callers."""
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef) or ctx.parent(func) is not ctx.tree:
        return
    for other, value, call in caller_arguments(ctx, func, param, here=False, elsewhere="importers+star" if star else "importers",
                                               shift="self"):
        if value is not None:
            yield other, value, call


def caller_arguments(ctx: Context, func: AST, param: str, *, here: bool = True, elsewhere: str | None = None,
                     name: str | None = None, keep: Callable[[ast.Call], bool] | None = None,
                     shift: str = "method") -> Iterator[tuple[Context, AST | None, ast.Call]]:
    """``(caller's context, the argument passed for ``param`` or None, call)`` for the calls of the
    function or method ``func`` of this file; each caller tests the arguments its own way.

    ``here``: this file's calls that run ``func`` (:func:`local_function`), or with ``name`` every
    call of this file by that name (``PSPNet(...)`` for ``PSPNet.__init__``); ``keep`` tests them
    further. ``elsewhere``: ``"importers"``, the calls from the modules that import this one
    (:func:`project_calls`, for a module-level function; ``"importers+star"`` adds
    :func:`star_calls`), or ``"methods"``, the calls ``obj.<name>(...)`` of the other files
    (:func:`method_call_sites`). ``shift``: ``"method"``, a method's ``self``/``cls`` is not passed
    by position in ``obj.m(...)``; ``"self"``, a first parameter named ``self``/``cls`` never is."""
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    index = params.index(param) if param in params else None
    selfish = params[:1] in (["self"], ["cls"])
    method = selfish and ctx.parent(func).__class__ is ast.ClassDef

    def position(call: ast.Call) -> int | None:
        if index is None:
            return None
        if shift == "self":
            return index - 1 if selfish else index
        return index - 1 if method and call.func.__class__ is ast.Attribute else index

    if here:
        for call in ctx.calls_named(name or func.name):
            if (name is None and local_function(ctx, call) is not func) or (keep is not None and not keep(call)):
                continue
            yield ctx, argument(call, param, position(call)), call
    if elsewhere in ("importers", "importers+star"):
        if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef) or ctx.parent(func) is not ctx.tree:
            return
        sites = [*project_calls(ctx, func.name), *(star_calls(ctx, func.name) if elsewhere == "importers+star" else ())]
    elif elsewhere == "methods":
        sites = method_call_sites(ctx, func.name)
    else:
        return
    for other, call in sites:
        yield other, argument(call, param, position(call)), call


def method_call_sites(ctx: Context, name: str) -> list[tuple[Context, ast.Call]]:
    """``(caller's context, call)`` for the calls ``obj.<name>(...)`` (``obj`` not ``self``/``cls``)
    in the other files of the project, when the project defines ``name`` once (no other class or
    function could be the one called) and few files call it; parsed once per process."""
    key = ("methodcalls", ctx.path, name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = []
        define = re.compile(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}\(", re.M)
        defined = sum(len(define.findall(t)) for _, t in ctx.project.files)
        files = [(p, t) for p, t in ctx.project.files if p != ctx.path and f".{name}(" in t]
        if defined == 1 and len(files) <= MAX_CALLER_FILES:
            for path, text in files:
                other = parsed_file(ctx.project, path, text)
                if other is None:
                    continue
                found += [(other, c) for c in other.calls_named(name) if c.func.__class__ is ast.Attribute
                          and not (c.func.value.__class__ is ast.Name and c.func.value.id in ("self", "cls"))]
        ctx.project.answers[key] = found
    return found


def star_calls(ctx: Context, name: str) -> Iterator[tuple[Context, ast.Call]]:
    """``(caller's context, call)`` for the plain calls ``name(...)`` of the project's modules that
    receive the top-level function ``name`` of this file through ``from <this module> import *``
    (and bind no ``name`` of their own)."""
    stem = module_stem(ctx.path)
    key = ("callers:star", ctx.path, name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = []
        star = re.compile(rf"^from[ \t]+[\w.]*\b{re.escape(stem)}[ \t]+import[ \t]+\*", re.M)
        files = [(p, t) for p, t in ctx.project.files if p != ctx.path and f"{name}(" in t and star.search(t)]
        for path, text in files[:MAX_CALLER_FILES]:
            other = parsed_file(ctx.project, path, text)
            if other is not None:
                found += [(other, c) for c in other.calls_named(name)
                          if c.func.__class__ is ast.Name and other.binding_at(name, c) is None]
        ctx.project.answers[key] = found
    return iter(found)


def _call_sites(ctx: Context, stem: str, name: str) -> list[ast.Call]:
    """Calls of ``stem.name(...)`` (``pkg.stem.name(...)``) or of ``name`` imported from the module ``stem``."""
    out = []
    for call in ctx.calls_named(name):
        func = call.func
        if func.__class__ is ast.Attribute:
            owner = func.value
            if owner.__class__ is ast.Name:
                ok = owner.id == stem or (ctx.imports.get(owner.id) or "").rsplit(".", 1)[-1] == stem
            else:
                ok = owner.__class__ is ast.Attribute and owner.attr == stem
        else:
            parts = (ctx.imports.get(name) or "").split(".")
            ok = (len(parts) >= 2 and parts[-2] == stem) or _relative_import(ctx, name, stem) \
                or _relative_import(ctx, name, "") and os.path.basename(os.path.dirname(ctx.path)) == stem
        if ok:
            out.append(call)
    return out


def _relative_import(ctx: Context, name: str, stem: str) -> bool:
    """``from .engine import train`` (relative imports are not in ``ctx.imports``); with ``stem``
    empty, ``from . import train`` (from the package's ``__init__.py``)."""
    for node in ctx.nodes.get(ast.ImportFrom, ()):
        if node.level and (stem or node.level == 1) and (node.module or "").rsplit(".", 1)[-1] == stem and any(
                (a.asname or a.name) == name for a in node.names):
            return True
    return False


def never_called(ctx: Context, func: AST | None) -> bool:
    """``func`` is a module-level helper of a script (``if __name__ == "__main__":`` or
    ``parse_args()``) that nothing runs: its name occurs nowhere else in the file (no call, no
    reference, not even in a comment) and no other module of the project imports the script -
    a helper left behind (``def fliplr(img)`` kept in a training script whose test script has its
    own copy). What it allocates is never allocated."""
    if func is None or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef) or func.decorator_list \
            or ctx.parent(func) is not ctx.tree:
        return False
    src = ctx.source
    if src.count(func.name) != 1 or ("__main__" not in src and "parse_args(" not in src):
        return False
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    imports = re.compile(r"^[ \t]*(?:from[ \t]+(?:\.+[ \t]*)?[\w.]*\b" + re.escape(stem) + r"\b[ \t]+import|(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]"
                         r"[^\n]*\b" + re.escape(stem) + r"\b)", re.M)
    return not any(p != ctx.path and stem in t and imports.search(t) is not None for p, t in ctx.project.files)
