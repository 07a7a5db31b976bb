"""Who reads a loader (for TW203): nothing in its file (evaluation indexes the dataset instead), or
torch_xla (its batches go to a TPU) - unless the loader is a module-level name that another
module of the project imports (``from common.train import *``), where the training runs."""

from __future__ import annotations

import ast
import os

from torchwise.lint.engine import Context
from torchwise.lint.semantics.callers import imports_module, parsed_file
from torchwise.lint.semantics.data import moves_to_device
from torchwise.lint.semantics.handedloaders import device_helper_call
from torchwise.lint.semantics.projecthelpers import project_function

DATALOADER = "torch.utils.data.DataLoader"


def unused_or_xla(ctx: Context, call: ast.Call) -> bool:
    """The loader is stored under a name that nothing in the file reads, beside other loaders that
    it does (evaluation indexes the dataset instead), or that is handed to torch_xla (``pl.ParallelLoader(train_loader, [device])``,
    ``MpDeviceLoader``): its batches go to an XLA device, where pinned host memory does not apply.
    A module-level loader that another module of the project imports is read there (:func:`exported`)."""
    parent = ctx.parent(call)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    name = parent.targets[0].id
    uses = [n for n in ctx.nodes.get(ast.Name, ()) if n.id == name and n.ctx.__class__ is ast.Load]
    if not uses:
        # beside the loaders the file does iterate
        return len(ctx.calls_to(DATALOADER)) > 1 and not exported(ctx, call, name)

    if "torch_xla" not in ctx.source:
        return False
    for use in uses:
        user = ctx.parent(use)
        if user.__class__ is ast.Call and use in user.args and (ctx.qualname(user.func) or "").startswith("torch_xla."):
            return True
    return False


def exported(ctx: Context, node: ast.AST, name: str) -> bool:
    """``name`` is bound at module level (also under an ``if`` there) and another module of the
    project imports this module with a star (``from common.train import *``) or imports the name
    itself (``from data import train_loader``)."""
    if ctx.function_of(node) is not None or ctx.class_of(node) is not None or not ctx.project.files:
        return False
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    for path, text in ctx.project.files:
        if path == ctx.path or stem not in text or not imports_module(text, stem):
            continue
        for line in text.splitlines():
            words = line.split()
            if len(words) >= 4 and words[0] == "from" and words[2] == "import" and words[1].rsplit(".", 1)[-1] == stem \
                    and ("*" in words[3:] or name in line[line.index(" import ") + 8:].replace(",", " ").split()):
                return True
    return False


def handed_to_project_mover(ctx: Context, call: ast.Call) -> bool:
    """The loader, bound to a name, is handed to a module-level function of another module of the
    project that moves data to a device (``train_epoch(epoch, model, train_loader, loss, opt)`` of
    ``utilities/run_model.py``, whose loop does ``batch[0].to(get_device())``)."""
    parent = ctx.parent(call)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name \
            or not ctx.project.files:
        return False
    name, scope, tried = parent.targets[0].id, ctx.scope_of(call), set()
    for use in ctx.nodes.get(ast.Name, ()):
        if use.id != name or use.ctx.__class__ is not ast.Load or ctx.scope_of(use) is not scope:
            continue
        holder = ctx.parent(use)
        if holder.__class__ is ast.keyword:
            holder = ctx.parent(holder)
        if holder.__class__ is not ast.Call or holder.func.__class__ is not ast.Name or holder.func.id in tried:
            continue
        tried.add(holder.func.id)
        found = project_function(ctx, holder)
        if found is not None and found[0] is not ctx and _moves(*found):
            return True
    return False


def _moves(where: Context, func: ast.AST) -> bool:
    """The function moves data to a device: ``.cuda()``/``.to(device)``, or ``.to(get_device())``
    with a helper named for the device (``from utilities.device import get_device``)."""
    if moves_to_device(where, func, follow_calls=0):
        return True
    return any(n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr == "to"
               and len(n.args) == 1 and device_helper_call(n.args[0]) for n in ast.walk(func))


def _stored_attribute(ctx: Context, call: ast.Call) -> str | None:
    """``self.train_loader = DataLoader(...)`` or ``self.data_loader['train'] = DataLoader(...)``:
    the attribute (``train_loader``, ``data_loader``)."""
    parent = ctx.parent(call)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1:
        return None
    target = parent.targets[0]
    if target.__class__ is ast.Subscript:
        target = target.value
    if target.__class__ is ast.Attribute and target.value.__class__ is ast.Name and target.value.id == "self":
        return target.attr
    return None


def subclass_moves(ctx: Context, call: ast.Call) -> bool:
    """The loader is kept on ``self`` by a method of a class (``self.data_loader['train'] =
    DataLoader(...)`` in a base ``Processor``) that a class of another module of the project
    derives from (``class REC_Processor(Processor)``), and a method of that subclass reads the
    attribute and moves data to a device: the subclass runs the training loop."""
    attr = _stored_attribute(ctx, call)
    klass = ctx.class_of(call)
    if attr is None or klass is None or not ctx.project.files:
        return False
    needle, read = f"({klass.name})", f"self.{attr}"
    for path, text in ctx.project.files:
        if path == ctx.path or needle not in text or read not in text:
            continue
        other = parsed_file(ctx.project, path, text)
        if other is None:
            continue
        for sub in other.nodes.get(ast.ClassDef, ()):
            if not any(b.__class__ in (ast.Name, ast.Attribute) and (b.id if b.__class__ is ast.Name else b.attr) == klass.name
                       for b in sub.bases):
                continue
            for method in sub.body:
                if method.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and read in other.text(method) \
                        and _moves(other, method):
                    return True
    return False
