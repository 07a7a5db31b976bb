"""Code that nothing runs: a function or method whose name occurs nowhere in the project but in
its own ``def`` (no call, no reference, not even a string or a comment). Per-call rules (TW402,
TW403) stay quiet there: what it would load or allocate never happens. Only with the project's
files in view (a file linted alone may be called from anywhere)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

# names that frameworks or Python call without the project naming them
_HOOKS = frozenset({"forward", "main", "run", "setup", "teardown", "configure_optimizers", "training_step",
                    "validation_step", "test_step", "predict_step"})


def in_dead_function(ctx: Context, node: AST) -> bool:
    """``node`` sits in a function (or a method, or a function nested in one) that nothing in the
    project calls or names."""
    if not ctx.project.files or not any(p == ctx.path for p, _ in ctx.project.files):
        return False
    func = ctx.function_of(node)
    while func is not None:
        if func.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and _unnamed_elsewhere(ctx, func):
            return True
        func = ctx.function_of(func)
    return False


def _unnamed_elsewhere(ctx: Context, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    name = func.name
    if func.decorator_list or name.startswith("__") or name.startswith("on_") or name in _HOOKS:
        return False
    key = ("dead:uses", name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = 0
        for _, text in ctx.project.files:
            if name in text:
                found += _words(text, name, 2 - found)
                if found > 1:
                    break
        ctx.project.answers[key] = found
    return found == 1


def _words(text: str, name: str, limit: int) -> int:
    """How often ``name`` occurs in ``text`` as a whole word (counting stops at ``limit``)."""
    n, size = 0, len(name)
    pos = text.find(name)
    while pos >= 0 and n < limit:
        before = text[pos - 1] if pos else " "
        after = text[pos + size] if pos + size < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            n += 1
        pos = text.find(name, pos + 1)
    return n


def dead_ranges(ctx: Context) -> list[tuple[int, int]]:
    """``(first, last)`` lines of every function of the file that nothing in the project calls or
    names (empty when the file is linted alone)."""
    if not ctx.project.files or not any(p == ctx.path for p, _ in ctx.project.files):
        return []
    return [(f.lineno, f.end_lineno or f.lineno) for kind in (ast.FunctionDef, ast.AsyncFunctionDef)
            for f in ctx.nodes.get(kind, ()) if _unnamed_elsewhere(ctx, f)]
