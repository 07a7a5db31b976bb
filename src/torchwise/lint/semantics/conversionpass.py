"""One-time conversion passes (for TW202): a loader of single items (``batch_size=1`` or unset)
that a data set-up function walks once to gather every sample into lists, which it then stacks
into tensors (``torch.stack``, ``torch.cat``) or saves - ``for image, target in loader:
data["x"].append(image)`` then ``torch.stack(data["x"])``. Training then slices those tensors
and never iterates a loader; the pass runs once per run (often cached to disk), not per epoch.

The loop body must only gather: container and tensor-reshaping methods, functions of NumPy,
torch (not ``torch.nn``), scikit-learn or the standard library - no model call, no copy to a
device, no backward pass (an evaluation loop that collects predictions is no conversion)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, argument, last_name

_GATHER = frozenset({"append", "extend", "insert", "update", "add"})
_PURE_METHODS = _GATHER | frozenset({
    "numpy", "item", "tolist", "view", "reshape", "squeeze", "unsqueeze", "flatten", "float", "long",
    "int", "double", "clone", "detach", "cpu", "permute", "transpose", "astype", "copy", "format", "flush", "write",
    "keys", "values", "items", "size", "byte", "contiguous", "expand", "repeat",
})
_PURE_MODULES = ("numpy.", "torch.", "sklearn.", "sys.", "os.", "math.", "random.", "PIL.", "json.")
_BUILTINS = frozenset({"print", "int", "float", "len", "str", "list", "tuple", "range", "enumerate", "zip", "dict",
                       "min", "max", "abs", "round", "isinstance", "sorted"})
_COLLECT = frozenset({"stack", "cat", "concatenate", "vstack", "hstack", "save", "savez", "savez_compressed"})


def conversion_pass(ctx: Context, call: ast.Call) -> bool:
    """``name = DataLoader(ds, batch_size=1, ...)`` whose every use is a ``for`` loop over it that
    only gathers items, in a function that stacks or saves what it gathered."""
    size = argument(call, "batch_size", 1)
    if size is not None and not (size.__class__ is ast.Constant and size.value == 1):
        return False
    parent = ctx.parent(call)
    func = ctx.function_of(call)
    if func is not None and parent.__class__ is ast.For and parent.iter is call:  # for img, lab in DataLoader(ds):
        return _gathers_only(ctx, parent) and _collects_after(ctx, func, parent)
    if func is None or parent.__class__ is not ast.Assign or len(parent.targets) != 1 \
            or parent.targets[0].__class__ is not ast.Name:
        return False
    name = parent.targets[0].id
    loops = []
    for node in ctx.walk_body(func.body):
        if node.__class__ is ast.Name and node.id == name and node.ctx.__class__ is ast.Load:
            b = ctx.binding_at(name, node)
            if b is None or b.node is not parent:
                continue
            loop = ctx.parent(node)
            if loop.__class__ is not ast.For or loop.iter is not node:
                return False  # handed on, or drawn from otherwise: not a plain walk over the items
            loops.append(loop)
    return bool(loops) and all(_gathers_only(ctx, loop) for loop in loops) and _collects_after(ctx, func, loops[0])


def _gathers_only(ctx: Context, loop: ast.For) -> bool:
    gathered = False
    for node in ctx.walk_body(loop.body):
        if node.__class__ is not ast.Call:
            continue
        f = node.func
        if f.__class__ is ast.Attribute and f.attr in _PURE_METHODS and not (f.value.__class__ is ast.Name and f.value.id == "self"):
            gathered = gathered or f.attr in _GATHER
            continue
        qual = ctx.qualname(f) or ""
        if qual.startswith(_PURE_MODULES) and not qual.startswith(("torch.nn", "torch.cuda", "torch.autograd", "torch.distributed")):
            continue
        if f.__class__ is ast.Name and f.id in _BUILTINS and not qual:
            continue
        return False
    return gathered


def _collects_after(ctx: Context, func: AST, loop: ast.For) -> bool:
    end = loop.end_lineno or loop.lineno
    return any(node.__class__ is ast.Call and node.lineno > end and last_name(node.func) in _COLLECT
               for node in ctx.walk_body(func.body))
