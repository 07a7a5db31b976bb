"""Loader settings kept as attributes of a config tree (for TW203): a defaults module that sets
``config.train.dataloader.pin_memory = False`` (a yacs ``CfgNode``, an ``ml_collections``
config, ``_C.DATA_LOADER.PIN_MEMORY = False``) which a module of the project passes to a loader as
``DataLoader(..., pin_memory=config.train.dataloader.pin_memory)``. The default is what every run
gets that does not override it."""

from __future__ import annotations

import ast
import re
from typing import Callable, Iterator

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.configfiles import shipped_values
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.loaderconfig import false_pin_settings, splatting_loaders

DATALOADER = "torch.utils.data.DataLoader"


def setting_path(node: AST) -> tuple[str, ...] | None:
    """``("train", "dataloader", "pin_memory")`` for ``config.train.dataloader.pin_memory``: the
    attributes below a plain name (not ``self``), at least two; else None."""
    parts: list[str] = []
    while node.__class__ is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if node.__class__ is not ast.Name or node.id in ("self", "cls") or len(parts) < 2:
        return None
    return tuple(reversed(parts))


def false_pin_defaults(ctx: Context) -> Iterator[tuple[AST, tuple[str, ...]]]:
    """``(the False value, its setting path)`` for every unconditional ``cfg.a.b.pin_memory = False``
    of this file: at module level or at the top of a function body (a ``get_cfg()``). One under an
    ``if`` (``if not torch.cuda.is_available(): cfg.data.pin_memory = False``) is a decision for
    that case and is left alone."""
    for node in ctx.nodes.get(ast.Assign, ()):
        value = node.value
        if len(node.targets) != 1 or value.__class__ is not ast.Constant or value.value is not False:
            continue
        target = node.targets[0]
        if target.__class__ is not ast.Attribute or target.attr.lower() != "pin_memory":
            continue
        holder = ctx.parent(node)
        if holder is not ctx.tree and holder.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
            continue
        path = setting_path(target)
        if path is not None:
            yield value, path


def loaders_reading(ctx: Context, path: tuple[str, ...]) -> list[tuple[Context, ast.Call]]:
    """DataLoader calls of the project (this file included) that take ``pin_memory`` from the
    setting ``path`` of a config tree (``pin_memory=cfg.train.dataloader.pin_memory``)."""
    out = []
    needle = f".{path[-2]}.{path[-1]}"
    for file_path, text in ctx.project.files:
        if "DataLoader(" not in text or needle not in text:
            continue
        other = ctx if file_path == ctx.path else parsed_file(ctx.project, file_path, text)
        if other is None:
            continue
        for call in other.calls_to(DATALOADER):
            pin = next((k.value for k in call.keywords if k.arg == "pin_memory"), None)
            if pin is not None and setting_path(pin) == path:
                out.append((other, call))
    return out


def default_off(ctx: Context, pin: AST) -> bool:
    """``pin_memory=config.test.dataloader.pin_memory`` where a module of the project sets that
    setting's default to False (unconditionally): the loader is unpinned unless a run overrides it."""
    if shipped_off(ctx, pin) is not None:
        return True
    path = setting_path(pin) if pin.__class__ is ast.Attribute else None
    if path is None or path[-1].lower() != "pin_memory" or not ctx.project.files:
        return False
    key = ("config-default-off", path)
    found = ctx.project.answers.get(key)
    if found is None:
        found = False
        needle = ".".join(path[-2:])
        for file_path, text in ctx.project.files:
            if needle not in text or "False" not in text:
                continue
            other = ctx if file_path == ctx.path else parsed_file(ctx.project, file_path, text)
            if other is not None and any(p == path for _, p in false_pin_defaults(other)):
                found = True
                break
        ctx.project.answers[key] = found
    return found


def _setting_name(pin: AST) -> str | None:
    """``PIN_MEMORY`` for ``config.PIN_MEMORY`` / ``opt['loader']['pin_memory']`` (read from a
    config object of a plain name, not ``self`` nor ``args``); else None."""
    last = pin.attr if pin.__class__ is ast.Attribute else \
        pin.slice.value if pin.__class__ is ast.Subscript and pin.slice.__class__ is ast.Constant else None
    node = pin
    while node.__class__ in (ast.Attribute, ast.Subscript):
        node = node.value
    if not isinstance(last, str) or last.lower() != "pin_memory" or node.__class__ is not ast.Name or node.id in ("self", "cls", "args"):
        return None
    return last


def shipped_off(ctx: Context, pin: AST) -> str | None:
    """``pin_memory=config.PIN_MEMORY`` where every config file the project ships that sets that key
    (YAML/JSON, read as text) sets it to false, and no module of the project sets it to True or
    offers it as a command-line option: the first such file (``lib/config/OWN_config.yaml``); else None."""
    name = _setting_name(pin) if ctx.project.files and ctx.project.root else None
    if name is None:
        return None
    shipped = shipped_values(ctx.project.root, name, ctx.project.answers)
    if not shipped or any(True in v for v in shipped.values()):
        return None
    needle = name.lower()
    for _, text in ctx.project.files:
        low = text.lower()
        if needle in low and ("--" + needle in low or "--pin-memory" in low or
                              re.search(r"[.'\"]%s['\"]?\]?\s*=\s*true" % needle, low)):
            return None
    return sorted(shipped)[0]


Loaders = Callable[[], list[tuple[Context, ast.Call]]]


def false_pin_sources(ctx: Context) -> Iterator[tuple[AST, str, Loaders, str]]:
    """Every ``pin_memory=False`` of this file that loaders elsewhere take: ``(the False value, what
    it is, the loaders that take it, the fix)`` - a settings dict named for the loader that another
    module splats (``loader=dict(..., pin_memory=False)``, ``DataLoader(ds, **cfg.loader)``), and a
    config tree's default read by name (:func:`false_pin_defaults`, :func:`loaders_reading`)."""
    for value, key in false_pin_settings(ctx):
        yield (value, f"loader settings '{key}' set pin_memory=False for a DataLoader feeding a GPU",
               lambda key=key: splatting_loaders(ctx, key), "set pin_memory=True")
    for value, path in false_pin_defaults(ctx):
        yield (value, f"the default {'.'.join(path)} = False leaves a DataLoader feeding a GPU unpinned",
               lambda path=path: loaders_reading(ctx, path), "default to pin_memory=True (or torch.cuda.is_available())")
