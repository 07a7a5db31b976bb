"""Loads at a script's top level (its ``__main__`` block) in a project that may run on the CPU,
where the device is chosen in another module (``DEVICE = torch.device("cuda" if ... else "cpu")``
imported from the model module, then ``.to(DEVICE)`` in the script's functions): the file names
no CUDA itself, yet what it restores is what the project's training wrote from the device.

A load there counts as a checkpoint's when what it reads evidently is one:

- restored into a model (``load_state_dict``), or an entry the project saves with device data;
- a key of a saved dict that also holds a device entry (``status["best_epoch"]`` of
  ``torch.save({"best_epoch": e, "optimizer": optimizer}, ...)``) and of no dict of host data
  only - deserialising reads every entry, also the ones nobody asks for;
- a whole pickled model: the loaded name used as a module (``m.eval()``,
  ``m.encoder.rnn.flatten_parameters()``) or handed to a function of the file for its
  ``model`` parameter.

Not a vocabulary or other pickled object that is none of these. Also :func:`model_built_from`: a
model built from a checkpoint (``make(torch.load(p)["model"]).cuda()``), which an evaluation script
restores like one fed to ``load_state_dict``.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.checkpoints import loaded_keys
from torchwise.lint.semantics.devices import file_moves_to_device
from torchwise.lint.semantics.loadsites import reads_device_keys, restored_into
from torchwise.lint.semantics.models import is_model_name
from torchwise.lint.semantics.savefacts import dict_key_facts

_MODULE_METHODS = frozenset({"eval", "train", "parameters", "named_parameters", "state_dict", "modules", "children",
                             "flatten_parameters", "cuda", "to", "forward", "zero_grad"})


def script_level_checkpoint(ctx: Context, load: ast.Call) -> bool:
    """``load`` lies at the top level of a script that moves data to a device in its functions,
    in a project that names CUDA, and reads a checkpoint (see the module doc)."""
    if ctx.function_of(load) is not None or not ctx.project.targets_gpu:
        return False
    src = ctx.source
    if "__main__" not in src and "parse_args(" not in src and "parse_known_args(" not in src:
        return False
    if not file_moves_to_device(ctx):
        return False
    return restored_into(ctx, load) is not None or reads_device_keys(ctx, load) or co_saved_with_device(ctx, load) \
        or _used_as_model(ctx, load)


def co_saved_with_device(ctx: Context, load: ast.Call) -> bool:
    """Every key read from the loaded dict is a key of a dict the project saves with a device
    entry beside it, and of no dict it saves with host data only."""
    keys = loaded_keys(ctx, load)
    if not keys or not ctx.project.save_files:
        return False
    mixed, plain = dict_key_facts(ctx.project)
    return keys <= mixed and not keys & plain


def _used_as_model(ctx: Context, load: ast.Call) -> bool:
    parent = ctx.parent(load)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    name = parent.targets[0].id
    for node in ctx.walk_body(getattr(ctx.scope_of(load), "body", [])):
        if node.__class__ is not ast.Call or node.lineno < load.lineno:
            continue
        func = node.func
        if func.__class__ is ast.Attribute and func.attr in _MODULE_METHODS:
            base = func.value
            while base.__class__ is ast.Attribute:
                base = base.value
            if base.__class__ is ast.Name and base.id == name:
                return True
        defined = next((f for f in ctx.tree.body if f.__class__ is ast.FunctionDef and f.name == getattr(func, "id", None)),
                       None) if func.__class__ is ast.Name else None
        if defined is not None:
            params = [a.arg for a in defined.args.args]
            for i, a in enumerate(node.args):
                if a.__class__ is ast.Name and a.id == name and i < len(params) and is_model_name(params[i]):
                    return True
    return False


_MOVES = frozenset({"cuda", "to"})


def model_built_from(ctx: Context, load: ast.Call) -> bool:
    """The checkpoint (or an entry of it) builds the model that is then moved to a device:
    ``models.make(torch.load(p)["model"], load_sd=True).cuda()``, or ``spec = torch.load(p)["model"]``
    and ``net = make(spec, load_sd=True).cuda()`` in the same scope. Not a torch or builtin
    call (``torch.tensor(torch.load(p)).cuda()`` is data)."""
    node = load
    parent = ctx.parent(node)
    if parent.__class__ is ast.Subscript and parent.value is node:
        node, parent = parent, ctx.parent(parent)
    if parent.__class__ is ast.Assign and len(parent.targets) == 1 and parent.targets[0].__class__ is ast.Name:
        name = parent.targets[0].id
        scope = ctx.scope_of(load)
        uses = [n for n in ctx.walk_body(getattr(scope, "body", [])) if n.__class__ is ast.Name and n.id == name
                and n.lineno > load.lineno and n.ctx.__class__ is ast.Load]
        return len(uses) == 1 and _builds_moved(ctx, uses[0])
    return _builds_moved(ctx, node)


def _builds_moved(ctx: Context, arg: ast.AST) -> bool:
    call = ctx.parent(arg)
    if call.__class__ is not ast.Call or not call.args or call.args[0] is not arg:
        return False
    if (ctx.qualname(call.func) or "").startswith(("torch.", "builtins.")) or call.func.__class__ not in (ast.Name, ast.Attribute):
        return False
    moved = ctx.parent(ctx.parent(call))
    return ctx.parent(call).__class__ is ast.Attribute and ctx.parent(call).attr in _MOVES and moved.__class__ is ast.Call \
        and moved.func is ctx.parent(call)
