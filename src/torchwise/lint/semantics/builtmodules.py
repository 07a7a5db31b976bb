"""Modules of the project built where they are used and moved right away (TW205): a data
augmentation's ``forward`` that makes ``dsp.LowPassFilters([low, high]).to(wav.device)`` every
call, the filter bank's ``__init__`` computing its window and sinc filters with torch on the CPU
and registering them as buffers - all of them copied to the device each time. Only classes of
the project (this file, or the module a qualified name points to) whose ``__init__`` makes
tensors with torch factories and no device.
"""

from __future__ import annotations

import ast
import os

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.factorynames import SHAPED, WINDOWS
from torchwise.lint.semantics.once import called_per_call
from torchwise.lint.semantics.steps import hot_region_of

# the torch calls that make a tensor in an __init__: the shaped factories, windows, and from_numpy
# and stack of data; narrower than factorynames.COMMON (no randint) and kept so, as findings rest on it
_FACTORIES = SHAPED | {"arange", "linspace", "eye", "tensor", "from_numpy", "stack"} | WINDOWS


def built_module(ctx: Context, expr: AST) -> tuple[ast.Call, str] | None:
    """``(the construction, the factory its __init__ uses)`` when ``expr`` builds a module class of
    the project that makes CPU tensors in its ``__init__``, in a forward pass or a training step
    (a model built once before training is not)."""
    if expr.__class__ is not ast.Call or expr.func.__class__ not in (ast.Name, ast.Attribute):
        return None
    func = ctx.function_of(expr)
    if func is None or func.__class__ is ast.Lambda or hot_region_of(ctx, expr) is None and not (
            func.name in ("forward", "__call__") or called_per_call(ctx, func)):
        return None  # not in a training loop, a forward pass or a helper of one
    found = _project_class(ctx, expr)
    if found is None:
        return None
    where, cls = found
    key = ("builtmodule", id(cls))
    factory = where._cache.get(key, False)
    if factory is False:
        factory = where._cache[key] = _init_factory(where, cls)
    return (expr, factory) if factory else None


def _project_class(ctx: Context, call: ast.Call) -> tuple[Context, ast.ClassDef] | None:
    name = last_name(call.func)
    if call.func.__class__ is ast.Name:
        local = [n for n in ctx.tree.body if n.__class__ is ast.ClassDef and n.name == name]
        if local:
            return (ctx, local[0]) if len(local) == 1 else None
    q = ctx.qualname(call.func) or _relative(ctx, call.func)
    if q is None or q.startswith(("torch.", "numpy.")) or "." not in q:
        return None
    module = q.rsplit(".", 1)[0]
    tail = module.replace(".", "/") + ".py"
    if q.startswith("./"):  # from . import dsp: a module beside this one
        tail = os.path.join(os.path.dirname(ctx.path), module[2:] + ".py").replace(os.sep, "/")
    for path, text in ctx.project.files:
        norm = path.replace(os.sep, "/")
        if (norm.endswith("/" + tail) or norm == tail) and f"class {name}(" in text:
            other = parsed_file(ctx.project, path, text)
            found = [n for n in other.tree.body if n.__class__ is ast.ClassDef and n.name == name] if other else []
            return (other, found[0]) if len(found) == 1 else None
    return None


def _relative(ctx: Context, func: AST) -> str | None:
    """``dsp.LowPassFilters`` with ``from . import dsp``: ``"./dsp.LowPassFilters"``."""
    if func.__class__ is not ast.Attribute or func.value.__class__ is not ast.Name:
        return None
    for node in ctx.nodes.get(ast.ImportFrom, ()):
        if node.level == 1 and not node.module and any((a.asname or a.name) == func.value.id for a in node.names):
            name = next(a.name for a in node.names if (a.asname or a.name) == func.value.id)
            return f"./{name}.{func.attr}"
    return None


def _init_factory(where: Context, cls: ast.ClassDef) -> str | None:
    """The torch factory the class's ``__init__`` makes a tensor with, on the CPU (no ``device=``,
    no move); None when it has none, moves anything itself, or is not a module."""
    if not any(last_name(b) == "Module" for b in cls.bases):
        return None
    init = next((n for n in cls.body if n.__class__ is ast.FunctionDef and n.name == "__init__"), None)
    if init is None:
        return None
    text = where.text(init)
    if "device" in text or ".cuda(" in text or ".to(" in text or "register_buffer" not in text and "Parameter(" not in text:
        return None
    for node in where.walk_body(init.body):
        if node.__class__ is ast.Call:
            q = where.qualname(node.func) or ""
            if q.startswith("torch.") and q.count(".") == 1 and last_name(node.func) in _FACTORIES:
                return last_name(node.func)
    return None
