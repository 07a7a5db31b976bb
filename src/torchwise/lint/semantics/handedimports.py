"""Torch names a file gets from the project's own modules, made part of the file's imports.

A project module often imports torch once and hands it on: ``from network import *`` where
``network.py`` did ``from module import *`` and ``module.py`` did ``import torch as t`` and ``import
torch.nn as nn`` (the script then writes ``nn.DataParallel(...)`` and ``t.ones(n).cuda()`` with no
import of its own), or ``from preprocess import DataLoader`` where ``preprocess.py`` imported
``DataLoader`` from ``torch.utils.data``. :func:`hand_on_imports` adds those names to
``ctx.imports`` (``t`` -> ``torch``, ``DataLoader`` -> ``torch.utils.data.DataLoader``), so that every
rule resolves them as it resolves the file's own imports. Only files given to lint together are
read; names the file imports itself are kept as they are. :mod:`.starnames` works out what each
module hands on (module level, ``__all__`` respected, names the module rebinds dropped).
"""

from __future__ import annotations

import ast
import os

from torchwise.lint.engine import Context
from torchwise.lint.semantics.starnames import _DEPTH, _exports, _files, _star_names, module_file, star_names


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
            if not text or alias.name not in text or "import" not in text:
                continue
            q = _exports(facts, path, _DEPTH, frozenset({ctx.path})).get(alias.name)
            if q is not None:
                added[local] = q
    if added:
        ctx.imports.update(added)
        ctx._import_aliases = None
