"""Loads of reference data that can only hold host tensors: a test or sanity-check script loading
expected outputs (``target = torch.load("./check_data/out.pkl")``) and comparing them with
``target.numpy()`` (or ``target[0].numpy()``) - ``.numpy()`` raises on a CUDA tensor, so the file
holds CPU data - and the other files the script loads from that same data folder
(``enc = torch.load("./check_data/enc.pkl")`` beside it: the inputs shipped with those outputs).

Not a load whose value goes through ``.cpu()`` first (``t.cpu().numpy()`` works on a GPU tensor
too), nor a file of another folder (or with no folder written out) beside it, nor one of that
folder restored into a model (``net.load_state_dict(torch.load("./check_data/net.pt"))``).
"""

from __future__ import annotations

import ast
import posixpath

from torchwise.lint.engine import AST, Context, argument
from torchwise.lint.semantics.loadsites import restored_into


def _leading_text(expr: AST | None) -> str | None:
    """The string a path starts with: ``"a/b.pkl"``, ``"a/{}.pkl".format(i)``, ``f"a/{i}.pkl"``,
    ``"a/" + name``."""
    while expr is not None:
        cls = expr.__class__
        if cls is ast.Constant:
            return expr.value if isinstance(expr.value, str) else None
        if cls is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr == "format":
            expr = expr.func.value
        elif cls is ast.JoinedStr:
            expr = expr.values[0] if expr.values else None
        elif cls is ast.BinOp and expr.op.__class__ is ast.Add:
            expr = expr.left
        else:
            return None
    return None


def _folder(ctx: Context, load: ast.Call) -> str | None:
    text = _leading_text(argument(load, "f", 0))
    if not text or "/" not in text:
        return None
    return posixpath.dirname(text) or None


def _numpy_of(ctx: Context, node: AST) -> bool:
    """``node.numpy()`` or ``node[i].numpy()`` (no ``.cpu()`` in between)."""
    parent = ctx.parent(node)
    while parent.__class__ is ast.Subscript and parent.value is node:
        node, parent = parent, ctx.parent(parent)
    if parent.__class__ is not ast.Attribute or parent.attr != "numpy":
        return False
    call = ctx.parent(parent)
    return call.__class__ is ast.Call and call.func is parent and not call.args


def read_as_numpy(ctx: Context, load: ast.Call) -> bool:
    """The loaded value is read with ``.numpy()`` directly, or through the one name it is bound to."""
    if _numpy_of(ctx, load):
        return True
    parent = ctx.parent(load)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    name = parent.targets[0].id
    scope = ctx.scope_of(load)
    for node in ast.walk(scope):
        if node.__class__ is ast.Name and node.id == name and node.ctx.__class__ is ast.Load and _numpy_of(ctx, node):
            b = ctx.binding_at(name, node)
            if b is not None and b.node is parent:
                return True
    return False


def host_fixture(ctx: Context, load: ast.Call) -> bool:
    """``load`` reads reference data that holds host tensors only (see the module doc)."""
    if ".numpy()" not in ctx.source:
        return False
    folders = ctx._cache.get("hostfixtures:folders")
    if folders is None:
        folders = ctx._cache["hostfixtures:folders"] = {
            f for c in ctx.calls_to("torch.load") if read_as_numpy(ctx, c) and (f := _folder(ctx, c)) is not None}
    if not folders:
        return False
    return read_as_numpy(ctx, load) or _folder(ctx, load) in folders and restored_into(ctx, load) is None
