"""Tensors made on the GPU inside a function that is handed its device (TW403): ``def
train(self, opts, loader, device='cpu'):`` moves its batches with ``.to(device)`` (or hands
``device`` on), yet makes its labels with ``torch.ones(d_real.size()).cuda()``. The parameter's
default is the CPU, so the function is meant to run there; the factory's bare ``.cuda()``
ignores the device it was handed and fails on that CPU run."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.semantics.factorynames import COMMON, LIKE

# the torch factories a device parameter is handed to: the common ones, eye, and the *_like ones
_FACTORIES = COMMON | {"eye"} | LIKE


def _cpu_default_device(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name of a parameter named for a device whose default is ``"cpu"``."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    for arg, default in pairs:
        if "device" in arg.arg and default.__class__ is ast.Constant and default.value == "cpu":
            return arg.arg
    return None


def factories_ignoring_device(ctx: Context) -> Iterator[ast.Call]:
    """``torch.<factory>(...).cuda()`` in a function whose device parameter defaults to ``"cpu"``
    and that uses that parameter (a move, a call handing it on)."""
    if "'cpu'" not in ctx.source and '"cpu"' not in ctx.source:
        return
    for call in ctx.calls_named("cuda"):
        func = call.func
        if func.__class__ is not ast.Attribute or call.args or call.keywords or func.value.__class__ is not ast.Call:
            continue
        q = ctx.qualname(func.value.func) or ""
        if not (q.startswith("torch.") and q.count(".") == 1 and last_name(func.value.func) in _FACTORIES):
            continue
        owner = ctx.function_of(call)
        name = _cpu_default_device(owner) if owner is not None and owner.__class__ is not ast.Lambda else None
        if name is not None and any(n.__class__ is ast.Name and n.id == name and n.ctx.__class__ is ast.Load
                                    for n in ast.walk(owner)):
            yield call
