"""A setting made while a class is built, after another module already initialised CUDA.

The experiment classes of many research code bases pick their device in the constructor
(``Exp_Basic.__init__`` -> ``self._acquire_device()`` -> ``os.environ["CUDA_VISIBLE_DEVICES"] = ...``),
while the entry script has already called ``torch.cuda.is_available()`` to decide ``args.use_gpu``
before it builds the experiment (``exp = Exp(args)``, often through an alias or a subclass). Each
file alone looks fine; the order only shows across modules. This finds, for a setting in a method
run by a class's constructor, the first construction of that class (or of a subclass, or through a
plain alias) in another file of the project that comes after a CUDA initialisation in the same scope.
The other files are parsed only when a file has such a setting (rare), once per process.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Callable

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import parsed_file

_MAX_DEPTH = 3  # subclass levels followed


def constructor_runs(ctx: Context, node: AST) -> str | None:
    """The class whose construction runs ``node``: ``node`` is in ``__init__``, or in a method that
    ``__init__`` calls as ``self.method(...)``. None otherwise."""
    func = ctx.function_of(node)
    cls = ctx.class_of(node) if func is not None else None
    if cls is None or ctx.parent(func) is not cls:
        return None
    if func.name == "__init__":
        return cls.name
    for item in cls.body:
        if item.__class__ is ast.FunctionDef and item.name == "__init__":
            for sub in ast.walk(item):
                if sub.__class__ is ast.Call and sub.func.__class__ is ast.Attribute and sub.func.attr == func.name \
                        and sub.func.value.__class__ is ast.Name and sub.func.value.id == "self":
                    return cls.name
    return None


def _subclasses(texts: list[tuple[str, str]], name: str) -> set[str]:
    """``name`` and the classes of the project derived from it (a few levels, by name)."""
    names, frontier = {name}, {name}
    for _ in range(_MAX_DEPTH):
        found = set()
        for base in frontier:
            pattern = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\([^)]*\b" + re.escape(base) + r"\b", re.M)
            for _, text in texts:
                if base in text:
                    found.update(m.group(1) for m in pattern.finditer(text))
        frontier = found - names
        if not frontier:
            break
        names |= frontier
    return names


def _shared_depth(a: str, b: str) -> int:
    """How many leading folders two folder paths share."""
    n = 0
    for x, y in zip(a.replace("\\", "/").split("/") if a else [], b.replace("\\", "/").split("/") if b else []):
        if x != y:
            break
        n += 1
    return n


def _constructions(other: Context, names: set[str]) -> list[ast.Call]:
    """Calls in ``other`` that build one of ``names``, directly or through ``Exp = Exp_Main``."""
    local = set(names)
    for node in other.nodes.get(ast.Assign, ()):
        if node.value.__class__ is ast.Name and node.value.id in names:
            local.update(t.id for t in node.targets if t.__class__ is ast.Name)
    return [call for call in other.nodes.get(ast.Call, ()) if call.func.__class__ is ast.Name and call.func.id in local]


def built_after_init(ctx: Context, class_name: str, is_init: Callable[[Context, ast.Call], bool],
                     other_branch: Callable[[Context, AST, AST], bool]) -> tuple[str, int, int] | None:
    """``(path, init line, construction line)`` of the first file of the project (other than this
    one) that initialises CUDA and later, in the same scope, builds ``class_name`` or a subclass."""
    facts = ctx.project
    texts = [(p, t) for p, t in facts.files if p != ctx.path]
    if not texts:
        return None
    here = os.path.dirname(ctx.path)
    texts.sort(key=lambda pt: -_shared_depth(here, os.path.dirname(pt[0])))  # the nearest files first
    names = _subclasses(list(facts.files), class_name)
    for path, text in texts:
        if not any(n in text for n in names) or "cuda" not in text:
            continue
        other = parsed_file(facts, path, text)
        if other is None:
            continue
        inits = [c for c in other.nodes.get(ast.Call, ()) if is_init(other, c)]
        for call in sorted(_constructions(other, names), key=lambda c: (c.lineno, c.col_offset)):
            scope, pos = other.scope_of(call), (call.lineno, call.col_offset)
            earlier = [c for c in inits if other.scope_of(c) is scope and (c.lineno, c.col_offset) < pos
                       and not other_branch(other, c, call)]
            if earlier:
                return path, min(c.lineno for c in earlier), call.lineno
    return None
