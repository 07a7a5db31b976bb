"""Functions of a CPU-driven module that no CPU run calls (TW403, ruling R17 per function).

:mod:`torchwise.lint.project.cpudriven` marks whole modules: every project module a CPU-capable
entry point imports. A module holds several functions, though, and a CPU-capable script often
imports one of them and leaves the other to a GPU-only sibling (``from test import NN, kNN`` in
``cifar.py``, which only ever calls ``kNN``; ``NN`` runs only from GPU-only ``main.py``). Here a
module-level function of such a module (not an entry point itself) is *reached* when another
CPU-driven file names it beyond an import line or a comment (a call, a reference, a string
that picks it), when the module's own top-level code or a class body names it, or when a
reached function of the module names it (transitively). A decorated function (a registry entry
picked by a name from a config) always counts as reached. Text and one AST walk per file,
cached in ``ctx._cache``."""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.deadtext import commented, import_spans

_KEY = "cpureach.unreached"
_DYNAMIC = lazy_compile(r"(?<![.\w])(?:eval|vars)\(|globals\(\)|locals\(\)")


def _named(text: str, word: re.Pattern[str]) -> bool:
    """``word`` occurs in ``text`` beyond an import statement and a comment (a call, a reference,
    a string naming it; a re-export under another name, ``import NN as nn_eval``, counts too)."""
    spans = None
    for m in word.finditer(text):
        spans = import_spans(text) if spans is None else spans
        if any(a <= m.start() < b for a, b in spans):
            if re.match(r"[ \t]+as[ \t]+\w", text[m.end():m.end() + 40]):
                return True
            continue
        if not commented(text, m.start()):
            return True
    return False


def _names(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        if n.__class__ is ast.Name:
            out.add(n.id)
        elif n.__class__ is ast.Attribute:
            out.add(n.attr)
        elif n.__class__ is ast.Constant and isinstance(n.value, str) and n.value.isidentifier():
            out.add(n.value)
    return out


def cpu_unreached_spans(ctx: Context) -> tuple[tuple[int, int], ...]:
    """Line spans of the module-level functions of this CPU-driven module that no CPU run reaches
    (see the module doc); empty where the rule of the module holds whole."""
    found = ctx._cache.get(_KEY)
    if found is None:
        found = ctx._cache[_KEY] = _spans(ctx)
    return found


def _spans(ctx: Context) -> tuple[tuple[int, int], ...]:
    project, path = ctx.project, ctx.path
    if len(project.files) < 2 or path not in project.cpu_driven or os.path.basename(path) == "__init__.py" \
            or _script(ctx):
        return ()
    funcs = {s.name: s for s in ctx.tree.body
             if s.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and not s.decorator_list}
    if not funcs:
        return ()
    others = [(p, t) for p, t in project.files if p != path and p in project.cpu_driven]
    stem = os.path.splitext(os.path.basename(path))[0]
    if any(_DYNAMIC.search(t) or "getattr(" in t and ("import_module" in t or "getattr(" + stem in t) for _, t in others):
        return ()  # a name picked at run time (eval(name), globals()[name], getattr(module, name)) may be any of them
    reached: set[str] = set()
    for name in funcs:
        word = re.compile(r"\b%s\b" % name)
        if any(name in t and _named(t, word) for _, t in others):
            reached.add(name)
    # the module's own top-level code and class bodies run (or may run) when a CPU run imports it
    for s in ctx.tree.body:
        if s.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
            reached |= _names(s) & funcs.keys()
        elif s.decorator_list:
            reached |= _names(s) & funcs.keys()
    frontier = list(reached)
    while frontier:
        for name in _names(funcs[frontier.pop()]) & funcs.keys():
            if name not in reached:
                reached.add(name)
                frontier.append(name)
    return tuple((f.lineno, f.end_lineno or f.lineno) for n, f in funcs.items() if n not in reached)


def _script(ctx: Context) -> bool:
    """An entry point (``if __name__ == "__main__":``, a top-level ``parse_args(``): it runs itself."""
    src = ctx.source
    return "__main__" in src and any(s.__class__ is ast.If and "__name__" in _names(s.test) for s in ctx.tree.body) \
        or "parse_args(" in src and any(s.__class__ in (ast.Assign, ast.Expr) and "parse_args" in _names(s) for s in ctx.tree.body)


def cpu_unreached(ctx: Context, line: int) -> bool:
    """``line`` lies in a module-level function that no CPU run of the project calls."""
    return any(a <= line <= b for a, b in cpu_unreached_spans(ctx))


__all__ = ["cpu_unreached", "cpu_unreached_spans"]
