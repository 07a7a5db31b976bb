"""Helper functions of the project that a call runs - in this file or in the module it imports the
helper from (``from models.utils import loss_functions as lf``, then ``lf.to_one_hot(...)``) - and
what they make (TW205): a tensor returned fresh from the CPU (``return torch.zeros(n, k).scatter_(...)``),
or a result built with NumPy/torch alone from a tensor pulled to the host
(``lf.to_one_hot(y.cpu(), n).to(y.device)``: a round trip for work torch does on the device)."""

from __future__ import annotations

import ast
import os
from typing import Callable, TypeVar

from torchwise.lint.engine import AST, DEF_TYPES, Context, last_name
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.values import local_function

T = TypeVar("T")
# what a host helper may call besides NumPy and torch: builtins on sizes and types
_BUILTINS = frozenset({"len", "range", "int", "float", "type", "isinstance", "enumerate", "zip", "list", "tuple",
                       "min", "max", "abs", "round", "sum"})
_MAKERS = frozenset({"zeros", "ones", "empty", "full", "eye", "arange", "zeros_like", "ones_like"})


def project_function(ctx: Context, call: ast.Call) -> tuple[Context, AST] | None:
    """The function ``call`` runs and the context of its file: one of this file, or a module-level
    function of the project module it is imported from (``utils.one_hot``, ``lf.to_one_hot``)."""
    func = local_function(ctx, call)
    if func is not None:
        return (ctx, func) if func.__class__ is not ast.Lambda else None
    q = ctx.qualname(call.func)
    if q is None or q.startswith(("torch.", "numpy.")) or "." not in q:
        return None
    module, name = q.rsplit(".", 1)
    key = ("projfunc", module, name)
    facts = ctx.project
    if key in facts.answers:
        return facts.answers[key]
    found = None
    tail = module.replace(".", "/") + ".py"
    needle = f"def {name}("
    for path, text in facts.files:
        norm = path.replace(os.sep, "/")
        if (norm.endswith("/" + tail) or norm == tail) and needle in text:
            other = parsed_file(facts, path, text)
            if other is not None:
                defs = [n for n in other.tree.body if n.__class__ in DEF_TYPES and n.name == name]
                found = (other, defs[0]) if len(defs) == 1 else None
            break
    facts.answers[key] = found
    return found


def host_only_helper(where: Context, func: AST) -> bool:
    """A helper that builds its result with NumPy or torch alone: it makes an array or tensor
    (``np.zeros``, ``torch.eye``...) and calls nothing but NumPy, torch, a few builtins and
    methods - no other library (a CPU-only routine, ``linear_sum_assignment``) and no other helper."""
    key = ("sem:host-only", id(func))
    found = where._cache.get(key)
    if found is None:
        makes = False
        found = True
        for node in where.walk_body(func.body):
            if node.__class__ is not ast.Call:
                continue
            q = where.qualname(node.func) or ""
            if q.startswith(("numpy.", "torch.")):
                makes = makes or q.rsplit(".", 1)[1] in _MAKERS
            elif node.func.__class__ is ast.Name:
                found = node.func.id in _BUILTINS
            elif node.func.__class__ is ast.Attribute and q:
                found = False  # another library's function
            if not found:
                break
        found = found and makes
        where._cache[key] = found
    return found


def pulled_to_host(ctx: Context, call: ast.Call, owner: AST) -> bool:
    """An argument of ``call`` is ``owner.cpu()`` (also ``owner.detach().cpu()``, ``owner.data.cpu()``):
    the tensor the result is then moved back beside."""
    want = ast.dump(owner)
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        if arg.__class__ is ast.Call and arg.func.__class__ is ast.Attribute and arg.func.attr == "cpu" and not arg.args:
            inner = arg.func.value
            while inner.__class__ is ast.Call and inner.func.__class__ is ast.Attribute and inner.func.attr == "detach":
                inner = inner.func.value
            if inner.__class__ is ast.Attribute and inner.attr == "data":
                inner = inner.value
            if ast.dump(inner) == want:
                return True
    return False


def round_trip_helper(ctx: Context, move: ast.Call, target: AST | bool) -> ast.Call | None:
    """``lf.to_one_hot(y.cpu(), n).to(y.device)``: the helper call whose result ``move`` sends back
    to the device of the tensor it was given pulled to the host, when the helper builds it with
    NumPy/torch alone (:func:`host_only_helper`)."""
    if target is True or target.__class__ is not ast.Attribute or target.attr != "device":
        return None
    recv = move.func.value
    if recv.__class__ is not ast.Call or last_name(recv.func) in ("cpu", "numpy"):
        return None
    if not pulled_to_host(ctx, recv, target.value):
        return None
    found = project_function(ctx, recv)
    return recv if found is not None and host_only_helper(*found) else None


def project_returned_new(ctx: Context, recv: AST, made: Callable[[Context, AST], T | None]) -> T | None:
    """``Variable(utils.one_hot(y, n)).cuda()``: ``recv`` calls a module-level helper of another
    module of the project every ``return`` of which gives a new CPU tensor (``made`` says so, in
    that module's context): what ``made`` found for the first."""
    if recv.__class__ is ast.Call and last_name(recv.func) == "Variable" and len(recv.args) == 1:
        recv = recv.args[0]
    if recv.__class__ is not ast.Call or local_function(ctx, recv) is not None:
        return None
    found = project_function(ctx, recv)
    if found is None:
        return None
    where, func = found
    results = []
    for node in where.walk_body(func.body):
        if node.__class__ is ast.Return:
            value = node.value
            if value is not None and value.__class__ is ast.Name:
                value = where.resolve(value, node)
            results.append(made(where, value) if value is not None else None)
    return results[0] if results and all(r is not None for r in results) else None


def module_class(ctx: Context, klass: ast.ClassDef, depth: int = 3) -> bool:
    """``klass`` derives from ``torch.nn.Module`` (or another ``torch.nn`` class): through classes
    of this file, or through a base imported from another module of the project
    (``class CondVAE(ContinualLearner)`` with ``class ContinualLearner(nn.Module)`` elsewhere)."""
    bases = ctx.local_class_bases(klass.name)
    if any(b.startswith("torch.nn.") for b in bases):
        return True
    if depth <= 0 or not ctx.project.files:
        return False
    for q in bases:
        if q.startswith(("local:", "torch.")) or "." not in q:
            continue
        key = ("sem:module-class", q)
        found = ctx.project.answers.get(key)
        if found is None:
            ctx.project.answers[key] = False  # a cycle of imports counts as no
            found = _project_class_is_module(ctx, q, depth - 1)
            ctx.project.answers[key] = found
        if found:
            return True
    return False


def _project_class_is_module(ctx: Context, q: str, depth: int) -> bool:
    module, name = q.rsplit(".", 1)
    tail = module.replace(".", "/") + ".py"
    needle = f"class {name}("
    for path, text in ctx.project.files:
        norm = path.replace(os.sep, "/")
        if (norm.endswith("/" + tail) or norm == tail) and needle in text:
            other = parsed_file(ctx.project, path, text)
            klass = other.local_classes.get(name) if other is not None else None
            return klass is not None and module_class(other, klass, depth)
    return False
