"""Methods of the project's metric objects that read what they are handed on the host (TW207),
reported at the reads: ``result = Result(); result.evaluate(pred, target)`` in a training loop of
the project (every step, with the step's device tensors), where ``Result`` is a class of the project
(of the loop's file, or of the module it is imported from) whose ``evaluate`` casts
reductions of its arguments to Python numbers (``float((pred - target).abs().mean())``,
``math.sqrt(...)``), calls ``.item()``/``.cpu()``/``.numpy()`` on them, tests them in an ``if`` or
selects from them with a mask made from them (``output[target > 0]``). The method is not an
evaluation routine: it runs no loop of its own over batches, no ``.eval()``, no ``no_grad``.
Methods whose ``.item()`` the call's own check finds are reported at the call instead
(:mod:`.hostreads`; not those named for evaluation, which that check leaves alone).
The receiver must be built from the class by name (a plain ``Name()`` or ``module.Name()`` call),
so the method resolves to one definition; an object handed in from elsewhere is left alone."""

from __future__ import annotations

import ast
import os

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.argreads import _derived, host_read_of_arguments
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.devices import SYNC_METHODS
from torchwise.lint.semantics.hostreads import holds_device_values
from torchwise.lint.semantics.rarely import runs_rarely
from torchwise.lint.semantics.steps import hot_region_of, is_eval_name, runs_periodically
from torchwise.lint.semantics.stepvalues import step_device_value

_CASTS = frozenset({"float", "int", "bool"})


def metric_method(ctx: Context, call: ast.Call) -> tuple[Context, ast.FunctionDef] | None:
    """The project method ``call`` runs on an object built from a project class, when the call
    is ``obj.method(args)`` with ``obj = Class(...)`` (module doc)."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.value.__class__ is not ast.Name or not call.args:
        return None
    b = ctx.binding_at(func.value.id, call)
    if b is None or b.kind != "assign" or b.value.__class__ is not ast.Call or b.value.func.__class__ not in (ast.Name, ast.Attribute):
        return None
    built = ctx.constructed_from(func.value, call, depth=0)
    if not built:
        return None
    if built.startswith("local:"):
        where, klass = ctx, _class(ctx, built[6:])
    else:
        module, _, name = built.rpartition(".")
        if not module or module.startswith(("torch", "numpy", "collections", "builtins")):
            return None
        where = _module_context(ctx, module, name)
        klass = _class(where, name) if where is not None else None
    if klass is None:
        return None
    methods = [n for n in klass.body if n.__class__ is ast.FunctionDef and n.name == func.attr]
    if len(methods) != 1 or _evaluation_routine(methods[0]):
        return None
    return where, methods[0]


def metric_object_reads(ctx: Context) -> list[tuple[AST, str]]:
    """``(read, message)`` for each read (one per statement) of a method of this file's classes
    that a training loop of the project calls every step on an object built from the class."""
    out: list[tuple[AST, str]] = []
    if "float(" not in ctx.source and "math." not in ctx.source and "[" not in ctx.source:
        return out
    for klass in ctx.tree.body:
        if klass.__class__ is not ast.ClassDef or any(w in (last_name(b) or "") for b in klass.bases for w in ("Module", "Dataset")) \
                or not _built_somewhere(ctx, klass.name):
            continue  # (a model's layers are no metric objects; a class nothing builds by name has no such call)
        for method in klass.body:
            if method.__class__ is not ast.FunctionDef or method.name.startswith("__") or len(method.args.args) < 2 \
                    or not _called_beside(ctx, klass.name, method.name):
                continue
            reads = _reads(method)
            if reads and not is_eval_name(method.name) and host_read_of_arguments(method) is not None:
                continue  # ada.tune(real_pred) calling .item(): reported at the call (semantics.hostreads)
            where = _step_caller(ctx, klass, method) if reads else None
            for node, what in reads if where is not None else ():
                out.append((node, f"{what} in {klass.name}.{method.name}(), which the training loop calls every step ({where}), "
                                  "waits for the GPU"))
    return out


def _built_somewhere(ctx: Context, name: str) -> bool:
    """Some file of the project calls ``name(`` other than in its ``class`` line (a text test)."""
    needle, head = f"{name}(", f"class {name}("
    return any(t.count(needle) > t.count(head) for _, t in ctx.project.files or [(ctx.path, ctx.source)] if needle in t)


def _called_beside(ctx: Context, name: str, method: str) -> bool:
    """Some file of the project both builds ``name(`` and calls ``.method(`` (a text test)."""
    built, called = f"{name}(", f".{method}("
    return any(built in t and called in t for _, t in ctx.project.files or [(ctx.path, ctx.source)])


def _step_caller(ctx: Context, klass: ast.ClassDef, method: ast.FunctionDef) -> str | None:
    """``path:line`` of a call of the method in a training loop, every step, with device tensors."""
    built, called = f"{klass.name}(", f".{method.name}("
    for path, text in ctx.project.files or [(ctx.path, ctx.source)]:
        if built not in text or called not in text:
            continue
        other = ctx if path == ctx.path else parsed_file(ctx.project, path, text)
        for call in other.calls_named(method.name) if other is not None else ():
            found = metric_method(other, call)
            if found is None or found[0].path != ctx.path or found[1].lineno != method.lineno:
                continue
            if hot_region_of(other, call) is None or runs_periodically(other, call) or runs_rarely(other, call):
                continue
            if any(holds_device_values(other, a, call) or step_device_value(other, a, call) for a in call.args):
                return f"{os.path.basename(path)}:{call.lineno}"
    return None


def _reads(method: ast.FunctionDef) -> list[tuple[AST, str]]:
    """The host reads of the method's arguments (module doc), the first of each statement."""
    if not any(n.__class__ in (ast.Call, ast.Subscript) and _read(n, _ANY, _ANY, None) for n in ast.walk(method)) \
            or _evaluation_routine(method):
        return []  # (no cast, math function, sync method or selection by a name at all: no data flow to follow)
    derived = _derived(method)
    masks = {t.id for n in ast.walk(method) if n.__class__ is ast.Assign and n.value.__class__ is ast.Compare
             and _mentions(n.value, derived) for t in n.targets if t.__class__ is ast.Name}
    found: dict[int, tuple[AST, str]] = {}
    for node in ast.walk(method):  # (the first read of each line)
        if node.__class__ in (ast.Call, ast.Subscript) and node.lineno not in found:
            what = _read(node, derived, masks, method)
            if what is not None:
                found[node.lineno] = (node, what)
    return [found[k] for k in sorted(found)]


class _Everything(frozenset):
    def __contains__(self, item: object) -> bool:
        return True


_ANY = _Everything()  # (every name taken for derived: the cheap first pass of _reads)


def _read(node: AST, derived: set[str], masks: set[str], method: ast.FunctionDef | None) -> str | None:
    cls = node.__class__
    if cls is ast.Call:
        func = node.func
        if node.args and _mentions(node.args[0], derived) and (func.__class__ is ast.Name and func.id in _CASTS or func.__class__
                                                               is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "math"):
            if method is not None and node.args[0].__class__ is ast.Name and node.args[0].id in _plain_params(method):
                return None  # float(threshold): a parameter as given, maybe a number
            return f"{func.id if func.__class__ is ast.Name else 'math.' + func.attr}() of a tensor"
        if func.__class__ is ast.Attribute and func.attr in SYNC_METHODS and func.attr != "cpu" and _mentions(func.value, derived):
            return f".{func.attr}()"
    elif cls is ast.Subscript and node.ctx.__class__ is ast.Load and node.value.__class__ is ast.Name and node.value.id in derived and (
            node.slice.__class__ is ast.Name and node.slice.id in masks or node.slice.__class__ is ast.Compare and _mentions(node.slice, derived)):
        return "boolean-mask indexing"
    return None


def _plain_params(method: ast.FunctionDef) -> set[str]:
    return {a.arg for a in [*method.args.args, *method.args.kwonlyargs]}


def _mentions(expr: AST, names: set[str]) -> bool:
    return any(n.__class__ is ast.Name and n.id in names for n in ast.walk(expr))


def _evaluation_routine(method: ast.FunctionDef) -> bool:
    """A loop of its own, ``.eval()``, ``no_grad``: it evaluates a model itself."""
    return any(n.__class__ in (ast.For, ast.While, ast.AsyncFor) or n.__class__ is ast.Call and last_name(n.func) in (
        "eval", "no_grad", "inference_mode") for n in ast.walk(method))


def _class(ctx: Context, name: str) -> ast.ClassDef | None:
    found = [n for n in ctx.tree.body if n.__class__ is ast.ClassDef and n.name == name]
    return found[0] if len(found) == 1 else None


def _module_context(ctx: Context, module: str, name: str) -> Context | None:
    tail = module.replace(".", "/") + ".py"
    needle = f"class {name}"
    hits = [(p, t) for p, t in ctx.project.files if needle in t and (p.replace(os.sep, "/").endswith("/" + tail)
                                                                         or p.replace(os.sep, "/") == tail)]
    return parsed_file(ctx.project, *hits[0]) if len(hits) == 1 else None
