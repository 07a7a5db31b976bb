"""Loader settings kept in a config module (for TW203): a settings dict named for the loader
(``loader=dict(batch_size=64, num_workers=4, pin_memory=False)``) that another module of the
project splats into a DataLoader (``DataLoader(dataset, **cfg.loader)``)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.callers import parsed_file

DATALOADER = "torch.utils.data.DataLoader"


def _settings_key(ctx: Context, holder: AST) -> str | None:
    """The name a settings dict (``dict(...)`` or ``{...}``) is stored under: the keyword of an
    enclosing call (``loader=dict(...)``), the string key of an enclosing dict literal
    (``{"loader": {...}}``), or the name it is assigned to (``loader = dict(...)``)."""
    parent = ctx.parent(holder)
    if parent.__class__ is ast.keyword:
        return parent.arg
    if parent.__class__ is ast.Dict:
        for key, value in zip(parent.keys, parent.values):
            if value is holder and key.__class__ is ast.Constant and isinstance(key.value, str):
                return key.value
        return None
    if parent.__class__ is ast.Assign and len(parent.targets) == 1:
        return last_name(parent.targets[0])
    return None


def false_pin_settings(ctx: Context) -> Iterator[tuple[AST, str]]:
    """``(the False value, the settings' name)`` for every ``pin_memory=False`` (or
    ``"pin_memory": False``) written in a settings dict of this file that is not itself a
    DataLoader call."""
    for kw in ctx.nodes.get(ast.keyword, ()):
        if kw.arg != "pin_memory" or kw.value.__class__ is not ast.Constant or kw.value.value is not False:
            continue
        holder = ctx.parent(kw)
        if holder.__class__ is ast.Call and holder.func.__class__ is ast.Name and holder.func.id == "dict":
            key = _settings_key(ctx, holder)
            if key:
                yield kw.value, key
    for node in ctx.nodes.get(ast.Dict, ()):
        for key, value in zip(node.keys, node.values):
            if key.__class__ is ast.Constant and key.value == "pin_memory" and value.__class__ is ast.Constant \
                    and value.value is False:
                name = _settings_key(ctx, node)
                if name:
                    yield value, name


def _splats(call: ast.Call, key: str) -> bool:
    """``**cfg.<key>`` or ``**cfg["<key>"]`` among the call's keywords."""
    for kw in call.keywords:
        if kw.arg is None:
            v = kw.value
            if v.__class__ is ast.Attribute and v.attr == key:
                return True
            if v.__class__ is ast.Subscript and v.slice.__class__ is ast.Constant and v.slice.value == key:
                return True
    return False


def splatting_loaders(ctx: Context, key: str) -> list[tuple[Context, ast.Call]]:
    """DataLoader calls of the other modules of the project that splat a setting named ``key``
    (``DataLoader(dataset, **cfg.loader)``), each with its file's context."""
    out = []
    for path, text in ctx.project.files:
        if path == ctx.path or "DataLoader(" not in text or "**" not in text or key not in text:
            continue
        other = parsed_file(ctx.project, path, text)
        if other is not None:
            out += [(other, call) for call in other.calls_to(DATALOADER) if _splats(call, key)]
    return out
