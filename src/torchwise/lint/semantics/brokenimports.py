"""Modules that fail at import (for :mod:`.deadcode`): a top-level ``from X import a, b`` whose
names moved to a renamed module beside the file - a left-over script of another version of the
project (``from utils import batchify, get_batch`` after ``utils.py`` became ``utils_lm.py``).
Nothing in such a module ever runs: it raises ImportError on its first lines.

Only where the answer is plain, read from the text (which folder Python searches depends on the
entry script and on ``PYTHONPATH``, so no search path is guessed):

* the import sits at the module's top level, outside any ``try``/``if`` (a guarded import has a
  fallback), absolute (no dots), and the file does not change ``sys.path`` nor import by a
  computed name;
* no module of the project named ``X`` (``X.py`` or ``X/__init__.py`` in any folder) names any
  of the imported names or hands out names it does not spell (``import *``, ``__getattr__``), and
  no ``X/a.py`` exists;
* a module beside the file whose name contains ``X``'s (``utils_lm`` for ``utils``) defines every
  imported name at its top level: where the names went.

A module ``X`` that the project lacks and no renamed module explains is a third-party package: no
answer.
"""

from __future__ import annotations

import ast
import os

from torchwise.lint.engine import Context
from torchwise.lint.semantics.deadtext import words


def fails_at_import(ctx: Context) -> bool:
    """The module raises ImportError at its top (module doc)."""
    found = ctx._cache.get("brokenimports")
    if found is None:
        found = bool(ctx.project.files) and "import" in ctx.source and _fails(ctx)
        ctx._cache["brokenimports"] = found
    return found


def _fails(ctx: Context) -> bool:
    source = ctx.source
    if "sys.path" in source or "import_module(" in source or "__import__(" in source:
        return False
    files = ctx.project.answers.get("brokenimports:files")
    if files is None:
        files = {os.path.abspath(p): t for p, t in ctx.project.files}
        ctx.project.answers["brokenimports:files"] = files
    for stmt in ctx.tree.body:
        if stmt.__class__ is not ast.ImportFrom or stmt.level or not stmt.module or any(a.name == "*" for a in stmt.names):
            continue
        if _missing(ctx, files, stmt.module, [a.name for a in stmt.names]):
            return True
    return False


def _missing(ctx: Context, files: dict[str, str], module: str, names: list[str]) -> bool:
    rel = module.replace(".", os.sep)
    last = module.rsplit(".", 1)[-1]
    for p, text in files.items():
        if p.endswith((os.sep + rel + ".py", os.sep + rel + os.sep + "__init__.py")) and (
                not _lacks(text) or any(name in text and words(text, name, 1) for name in names)):
            return False  # a module of that name that has (or may hand out) one of the names
        if any(p.endswith(os.sep + rel + os.sep + name + ".py") or os.sep + rel + os.sep + name + os.sep in p for name in names):
            return False  # X/a.py: a submodule
    return _moved_beside(ctx, files, names, last)


def _lacks(text: str) -> bool:
    """The module cannot hand out names it does not spell: no ``import *``, no ``__getattr__``, no
    names made at run time."""
    return "import *" not in text and "__getattr__" not in text and "globals()" not in text and "exec(" not in text


def _moved_beside(ctx: Context, files: dict[str, str], names: list[str], module: str) -> bool:
    """A module in the file's own folder, named after ``module`` but not ``module`` itself
    (``utils_lm.py`` for ``utils``), defines every one of ``names`` at its top level."""
    folder = os.path.dirname(os.path.abspath(ctx.path))
    own = os.path.abspath(ctx.path)
    for p, text in files.items():
        stem = os.path.basename(p)[:-3]
        if p != own and os.path.dirname(p) == folder and module in stem and stem != module and all(_defines(text, n) for n in names):
            return True
    return False


def _defines(text: str, name: str) -> bool:
    return any(f"\n{head}{name}{tail}" in "\n" + text for head in ("def ", "class ") for tail in ("(", ":")) or f"\n{name} =" in "\n" + text
