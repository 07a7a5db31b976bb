"""Loaders handed in from elsewhere (for TW204): a loader a class keeps from its constructor
(``self.train_loader = train_loader``), judged by what the project hands in; whether a function
that loops over a handed-in loader runs at all; and copies to a device that the general device
helpers do not name: ``.to(self._device())`` and ``.type(torch.cuda.FloatTensor)``."""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.callers import imports_module, parsed_file
from torchwise.lint.semantics.projectclasses import inherited_classes


def _class_and_bases(ctx: Context, cls: ast.ClassDef, depth: int = 3) -> list[ast.ClassDef]:
    """``cls`` and its base classes defined in this file (up to ``depth`` levels)."""
    out, todo = [], [cls]
    while todo and depth > 0:
        depth -= 1
        nxt = []
        for c in todo:
            if c in out:
                continue
            out.append(c)
            nxt += [b for b in (ctx.local_classes.get(last_name(base) or "") for base in c.bases) if b is not None]
        todo = nxt
    return out


def constructor_loader_params(ctx: Context, expr: AST, use: AST) -> list[str]:
    """For ``self.<attr>`` used in a method: the parameters it is stored from, when every
    assignment of the attribute (in the class or its bases: of this file, or a base class another
    module of the project defines - a base trainer's ``__init__``) stores a parameter of the
    method that assigns it whose name names a loader (``self.dataloader = dataloader``, or one
    part of ``self.train_loader, self.valid_loader = train_loader, valid_loader``): a loader built
    elsewhere and handed in. Empty otherwise."""
    if expr.__class__ is not ast.Attribute or expr.value.__class__ is not ast.Name or expr.value.id != "self":
        return []
    cls = ctx.class_of(use)
    if cls is None:
        return []
    chain = [(ctx, c) for c in _class_and_bases(ctx, cls)]
    if ctx.project.files:
        chain += [pair for _, c in list(chain) for pair in inherited_classes(ctx, c)]
    values = [(where, v) for where, c in chain for v in where.self_attr_values(c, expr.attr)]  # (tuple parts too)
    names = []
    for where, value in values:
        if value.__class__ is not ast.Name or "loader" not in value.id.lower():
            return []
        b = where.binding_at(value.id, value)
        if b is None or b.kind != "param":
            return []
        names.append(value.id)
    return names


def keyword_callers_pinned(ctx: Context, names: list[str], pinned) -> bool:
    """Every call of the project (this file included) that passes a loader by one of ``names`` as
    a keyword (``trainer_class(..., train_dataloader=train_dataloader)``: a class chosen by the
    config, called by keyword) hands in a pinned loader, and there is at least one such call.
    ``pinned(ctx, expr, use)`` tells whether a loader expression is pinned (True/False/None)."""
    verdicts: list[bool | None] = []
    files = [(ctx.path, ctx.source), *((p, t) for p, t in ctx.project.files if p != ctx.path)]
    for path, text in files:
        if not any(f"{n}=" in text for n in names):
            continue
        other = ctx if path == ctx.path else parsed_file(ctx.project, path, text)
        if other is None:
            continue
        for kw in other.nodes.get(ast.keyword, ()):
            if kw.arg in names and other.parent(kw).__class__ is ast.Call:
                verdicts.append(pinned(other, kw.value, other.parent(kw)))
    return bool(verdicts) and all(v is True for v in verdicts)


def runs(ctx: Context, func: AST | None) -> bool:
    """Does anything run ``func``? Not when it is a helper left unused in a module the project
    imports (``utils.compute_loss``): its name occurs nowhere in the project beyond its own
    ``def``, while other files import its module. A module nobody imports is an entry point, or
    called by code not linted with it; code linted alone (no project) is assumed to run too."""
    if func is None or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef) or func.name.startswith("__") \
            or func.decorator_list or not ctx.project.files:
        return True
    word = re.compile(rf"\b{re.escape(func.name)}\b")
    if len(word.findall(ctx.source)) > 1:
        return True
    others = [text for path, text in ctx.project.files if path != ctx.path]
    if any(func.name in text and word.search(text) for text in others):
        return True
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    return not any(stem in text and imports_module(text, stem) for text in others)


# a method or function that hands back the device of a module or tensor: self._device(), get_device(x), dist_util.dev()
_DEVICE_HELPER = lazy_compile(r"^_*(get_|current_|default_|model_)?(device|dev)$")


def device_helper_call(expr: AST | None) -> bool:
    """``self._device()``, ``model._device()``, ``get_device(t)``, ``dist_util.dev()``: a call of a
    helper named for the device (no more than one argument)."""
    return expr.__class__ is ast.Call and len(expr.args) <= 1 and not expr.keywords \
        and _DEVICE_HELPER.match(last_name(expr.func) or "") is not None


def _cuda_tensor_type(ctx: Context, expr: AST | None, use: AST, depth: int = 2) -> bool:
    """``torch.cuda.FloatTensor`` (any ``torch.cuda.*Tensor``), its name as a string, or a name
    bound to one - also chosen by a condition (``torch.cuda.FloatTensor if cuda else
    torch.FloatTensor``: on the GPU when there is one)."""
    if expr is None or depth < 0:
        return False
    if expr.__class__ is ast.Constant:
        return isinstance(expr.value, str) and expr.value.startswith("torch.cuda.") and expr.value.endswith("Tensor")
    if expr.__class__ is ast.IfExp:
        return _cuda_tensor_type(ctx, expr.body, use, depth - 1) or _cuda_tensor_type(ctx, expr.orelse, use, depth - 1)
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, use)
        return b is not None and b.kind == "assign" and _cuda_tensor_type(ctx, b.value, b.node, depth - 1)
    q = ctx.qualname(expr) or ""
    return q.startswith("torch.cuda.") and q.endswith("Tensor")


def copies_to_cuda_type(ctx: Context, call: ast.Call) -> bool:
    """``x.type(torch.cuda.FloatTensor)`` (or ``Tensor`` bound to it): a copy to the GPU."""
    return call.func.__class__ is ast.Attribute and call.func.attr == "type" and len(call.args) == 1 \
        and _cuda_tensor_type(ctx, call.args[0], call)
