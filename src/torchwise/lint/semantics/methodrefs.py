"""Which mentions of a method's name can reach that method (for :mod:`.deadmethods`): a text
count of a common name (``load``, ``locationed_memory``) counts ``torch.load(...)``,
``json.load(f)`` and other classes' own ``def locationed_memory`` / ``self.locationed_memory(...)``.
Read from the syntax of the files that name it, none of these is a use of this method:

- an attribute of a module the file imports (``import json`` ... ``json.load``): a module's
  attribute is never a method of a class;
- ``self.name`` inside a class that defines ``name`` itself (another class than the method's):
  Python finds that class's own method first;
- a ``def name`` of another class or function (a definition, no use) - unless the class is a base
  or a subclass of the method's class and a library base of the hierarchy may call it by that
  name (:mod:`.owninterfaces`: ``reset_parameters`` under ``nn.Linear``); an interface only the
  project's own classes declare (``full_rank`` of every recommender) is called by its callers,
  which name it.

Every other mention counts: a bare name, an attribute of any other object, a string naming it
(``getattr(obj, "load")``), an import of the name."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.deadtext import words
from torchwise.lint.semantics.owninterfaces import class_bases, project_only


def method_uses(ctx: Context, func: ast.FunctionDef | ast.AsyncFunctionDef, limit: int = 1, others: bool = False) -> int:
    """How many mentions in the project's Python files (with ``others``, in files other than its
    own) may reach the method ``func`` (a def directly in a class body), counting up to ``limit``;
    ``limit`` when a file cannot be parsed."""
    cls = ctx.parent(func)
    if cls.__class__ is not ast.ClassDef:
        return limit
    key = ("methodrefs", ctx.path, func.lineno, limit, others)
    found = ctx.project.answers.get(key)
    if found is None:
        found = 0
        name = func.name
        for path, text in ctx.project.files:
            if name not in text or others and path == ctx.path or not words(text, name, 1, code=True):
                continue
            other = ctx if path == ctx.path else parsed_file(ctx.project, path, text)
            found += limit if other is None else _mentions(other, name, func if other is ctx else None, cls, limit - found)
            if found >= limit:
                found = limit
                break
        ctx.project.answers[key] = found
    return found


def _module_names(ctx: Context) -> set[str]:
    """Names the file binds with ``import x`` / ``import x.y as z``: modules, never classes."""
    found = ctx._cache.get("methodrefs:modules")
    if found is None:
        found = set()
        for node in ctx.nodes.get(ast.Import, ()):
            for alias in node.names:
                found.add(alias.asname or alias.name.split(".")[0])
        ctx._cache["methodrefs:modules"] = found
    return found


def _defines(cls: AST, name: str) -> bool:
    return any(s.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and s.name == name for s in cls.body)


def _ancestors(ctx: Context, cls: ast.ClassDef) -> set[str]:
    """The names of ``cls``'s base classes, their bases and so on, through every class of the
    project of that name (read from the text): a ``self.name(...)`` in one of them may dispatch
    to ``cls``'s override."""
    table = class_bases(ctx)
    found: set[str] = set()
    todo = [b.attr if b.__class__ is ast.Attribute else getattr(b, "id", "") for b in cls.bases]
    while todo:
        name = todo.pop()
        if name and name not in found:
            found.add(name)
            todo.extend(table.get(name, ()))
    return found


def _mentions(ctx: Context, name: str, own: AST | None, owner: ast.ClassDef, limit: int) -> int:
    modules = _module_names(ctx)
    ancestors = _ancestors(ctx, owner)
    home = owner if own is not None else None  # the method's own class node, in its own file
    count = 0
    for node in ctx.nodes.get(ast.Attribute, ()):
        if node.attr != name:
            continue
        value = node.value
        if value.__class__ is ast.Name:
            if value.id in modules:
                continue  # json.load, torch.load: a module's attribute
            if value.id == "self":
                cls = ctx.class_of(node)
                if cls is not None and cls is not home and _defines(cls, name) and cls.name not in ancestors:
                    continue  # another class's own method of that name (not a base class's call of its override)
        count += 1
        if count >= limit:
            return count
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef):
        for node in ctx.nodes.get(kind, ()):
            cls = ctx.parent(node)
            if node.name == name and node is not own and cls.__class__ is ast.ClassDef and (
                    cls.name in ancestors or owner.name in _ancestors(ctx, cls)) and not project_only(ctx, name, owner.name, cls.name):
                count += 1  # an override in the same hierarchy: an interface method its framework calls
                if count >= limit:
                    return count
    for node in ctx.nodes.get(ast.Name, ()):
        if node.id == name:
            count += 1
            if count >= limit:
                return count
    word = re.compile(r"[\w.]*\b" + re.escape(name))
    for node in ctx.nodes.get(ast.Constant, ()):
        if isinstance(node.value, str) and name in node.value and word.fullmatch(node.value.strip()):
            count += 1
            if count >= limit:
                return count
    for kind in (ast.ImportFrom, ast.Import):
        for node in ctx.nodes.get(kind, ()):
            if any(a.name.split(".")[-1] == name or a.asname == name for a in node.names):
                count += 1
    return min(count, limit)
