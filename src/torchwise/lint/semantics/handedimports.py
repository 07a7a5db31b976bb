"""Torch names a file gets from the project's own modules, made part of the file's imports.

A project module often imports torch once and hands it on: ``from network import *`` where
``network.py`` did ``from module import *`` and ``module.py`` did ``import torch as t`` and ``import
torch.nn as nn`` (the script then writes ``nn.DataParallel(...)`` and ``t.ones(n).cuda()`` with no
import of its own), or ``from preprocess import DataLoader`` where ``preprocess.py`` imported
``DataLoader`` from ``torch.utils.data``. :func:`hand_on_imports` adds those names to
``ctx.imports`` (``t`` -> ``torch``, ``DataLoader`` -> ``torch.utils.data.DataLoader``), so that every
rule resolves them as it resolves the file's own imports. Only files given to lint together are
read; names the file imports itself are kept as they are. :mod:`.starnames` works out what a star
import hands on (module level, ``__all__`` respected, names the module rebinds dropped); a named
import is looked up in the module's own torch imports, read from its text without parsing it.
"""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import Context, canonical
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.facts import ProjectFacts
from torchwise.lint.semantics.starnames import _files, _star_names, module_file, star_names

_FROM = lazy_compile(r"^from[ \t]+((?:torch|numpy|functorch)(?:\.\w+)*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", re.M)
_AS = lazy_compile(r"^import[ \t]+((?:torch|numpy|functorch)(?:\.\w+)*)[ \t]+as[ \t]+(\w+)", re.M)


def hand_on_imports(ctx: Context) -> None:
    """Add to ``ctx.imports`` the torch (and NumPy) names the file receives from project modules:
    through ``from <project module> import *`` and as ``from <project module> import name`` of a
    name that module imported from torch. Call once, right after the Context is made."""
    facts = ctx.project
    if not facts.files or ctx._cache.get("handedimports") or not ctx.nodes.get(ast.ImportFrom):
        return
    ctx._cache["handedimports"] = True
    star_names(ctx)  # worked out (and kept) on the file's own imports, for the rules that ask for them
    added = {k: v for k, v in _star_names(ctx).items() if k not in ctx.imports}
    table = _files(facts)
    for node in ctx.nodes.get(ast.ImportFrom, ()):
        if node.names[0].name == "*" or node.module and node.module.split(".", 1)[0] in ("torch", "numpy", "functorch"):
            continue
        if ctx.parent(node) is not ctx.tree:
            continue
        path = None
        for alias in node.names:
            local = alias.asname or alias.name
            if local in added or (local in ctx.imports and not ctx.imports[local].startswith(f"{node.module}.")):
                continue
            if path is None:
                path = module_file(facts, ctx.path, node.module, node.level) or ""
            text = table.get(os.path.normpath(path), ("", ""))[1] if path else ""
            q = _imported_names(facts, path, text).get(alias.name) if text and alias.name in text else None
            if q is not None:
                added[local] = q
    if added:
        ctx.imports.update(added)
        ctx._import_aliases = None


def _imported_names(facts: ProjectFacts, path: str, text: str) -> dict[str, str]:
    """Name -> dotted torch name for the module-level torch imports of a project module, read from
    its text (no parsing): ``from torch.utils.data import DataLoader``, ``import torch.nn as nn``."""
    key = ("handedimports:names", path)
    found = facts.answers.get(key)
    if found is None:
        found = {}
        for m in _FROM.finditer(text):
            for part in m.group(2).strip("()").replace("\\", " ").split(","):
                words = part.split()
                if len(words) == 1 or len(words) == 3 and words[1] == "as":
                    found[words[-1]] = canonical(f"{m.group(1)}.{words[0]}")
        for m in _AS.finditer(text):
            found[m.group(2)] = canonical(m.group(1))
        facts.answers[key] = found
    return found
