"""Module-level functions a command-line wrapper exposes by name: ``fire.Fire()`` called without
a component turns every function of the module into a sub-command (``python main.py
gen_acrostic --start_words=...``), so none of them is dead code though nothing in the project
calls it. A text test first; confirmed on the tree, cached per file."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context


def cli_exposed(ctx: Context, top: AST | None) -> bool:
    """``top`` (a module-level def) runs as a sub-command of a bare ``Fire()`` call of its file."""
    if top is None or top.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef) or "Fire()" not in ctx.source:
        return False
    found = ctx._cache.get("cliexposed:fire")
    if found is None:
        found = ctx._cache["cliexposed:fire"] = any(
            not c.args and not c.keywords and ctx.qualname(c.func) in ("fire.Fire", "fire.core.Fire")
            for c in ctx.calls_named("Fire"))
    return found
