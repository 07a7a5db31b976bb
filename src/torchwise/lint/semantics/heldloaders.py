"""Loaders a wrapper class builds and keeps on ``self`` for the project's scripts (for TW203):
``class DepthDataLoader`` whose ``__init__`` builds ``self.data = DataLoader(...)`` per mode
(``if mode == 'online_eval':``), and scripts of other modules that take ``DepthDataLoader(args,
'online_eval').data`` and move its batches to the GPU. The loader's file names no device; its
users do.
"""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import Context
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.devices import gpu_evident


def held_for_gpu_scripts(ctx: Context, call: ast.Call) -> bool:
    """The loader is kept as ``self.<attr>`` by a class's method, and every other module of the
    project that builds the class (in the loader's mode, when the loader is built under ``if mode
    == "<mode>":`` and the module passes that mode) and reads ``.<attr>`` evidently uses a GPU;
    there is at least one."""
    parent = ctx.parent(call)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or not ctx.project.files:
        return False
    target = parent.targets[0]
    if target.__class__ is not ast.Attribute or target.value.__class__ is not ast.Name or target.value.id != "self":
        return False
    klass = ctx.class_of(call)
    if klass is None:
        return False
    modes = _modes(ctx, call)
    built = re.compile(rf"\b{klass.name}\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
    users = []
    for path, text in ctx.project.files:
        if path == ctx.path or f"{klass.name}(" not in text or f".{target.attr}" not in text:
            continue
        if modes and not any(any(f"'{m}'" in args or f'"{m}"' in args for m in modes) for args in built.findall(text)):
            continue
        other = parsed_file(ctx.project, path, text)
        if other is None:
            continue
        users.append(gpu_evident(other))
    return bool(users) and all(users)


def _modes(ctx: Context, call: ast.Call) -> set[str]:
    """The string constants the ``if`` tests around the loader compare a name with (``mode == 'test'``)."""
    out: set[str] = set()
    for node, in_body in ctx.enclosing_ifs(call):
        test = node.test
        if in_body and test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.Eq \
                and test.comparators[0].__class__ is ast.Constant and isinstance(test.comparators[0].value, str):
            out.add(test.comparators[0].value)
    return out
