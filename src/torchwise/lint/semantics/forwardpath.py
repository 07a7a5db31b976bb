"""Functions that run on every forward pass and take the batch's tensors (TW207), beyond what
:func:`~torchwise.lint.semantics.once.forward_path_function` sees in one file: the methods of a
model class whose ``nn.Module`` base is another module's class of the project (``class
LatentODE(VAE_Baseline)``), and a module-level helper that another module's forward pass calls
(``generalized_box_iou(boxes1, boxes2)`` from a matcher's and a criterion's ``forward``).
Evaluation-named methods and generation methods no step calls are left out."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.callers import MAX_CALLER_FILES, parsed_file, project_calls
from torchwise.lint.semantics.once import forward_path_function, sampler_off_step
from torchwise.lint.semantics.steps import hot_region_of, is_eval_name, runs_periodically, training_calls

_CLASS = lazy_compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.M)


def batch_function(ctx: Context, node: AST) -> AST | None:
    """The function around ``node`` when it runs on every forward pass with the batch's tensors."""
    func = ctx.function_of(node)
    if func is None or is_eval_name(func.name):
        return None
    if forward_path_function(ctx, node) is not None:
        return func
    key = ("sem:batch-function", id(func))
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = (project_module_method(ctx, func) and not sampler_off_step(ctx, func)
                                   and runs_in_step(ctx, func)) or forward_helper(ctx, func)
    return func if found else None


def takes_batch(ctx: Context, func: AST) -> bool:
    """The ``forward`` of a model class (``nn.Module``, here or through the project's classes), or
    another method of one that a training step or forward pass of the project calls, or a helper
    another module's forward pass calls: its parameters are the batch's tensors (a NumPy
    transform's ``__call__`` is not; an audio front end's ``mel_spectrogram`` that only the
    preprocessing script calls is no part of a step)."""
    if func.__class__ is ast.Lambda or is_eval_name(func.name):
        return False
    klass = ctx.parent(func)
    if klass.__class__ is not ast.ClassDef:
        return forward_helper(ctx, func)
    if not (any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)) or project_module_method(ctx, func)):
        return False
    return runs_in_step(ctx, func)


def runs_in_step(ctx: Context, func: AST, depth: int = 3) -> bool:
    """A method that runs in a training step: ``forward``, a method the class's own methods that
    run in a step call on ``self`` (``self.LR(...)`` -> ``self.expand(...)``), or one called in a
    training step or forward pass of the project (:func:`_called_in_step`)."""
    if func.name == "forward":
        return True
    if "once" in func.name.lower():
        return False  # check_input_data_into_forward_once(): a first-call check
    klass = ctx.parent(func)
    for call in ctx.calls_named(func.name):
        caller = ctx.function_of(call)
        if call.func.__class__ is ast.Attribute and call.func.value.__class__ is ast.Name and call.func.value.id == "self" \
                and caller is not None and caller is not func and ctx.parent(caller) is klass and depth > 0 \
                and not is_eval_name(caller.name) and not _behind_flag(ctx, call) and runs_in_step(ctx, caller, depth - 1):
            return True
    return _called_in_step(ctx, func.name)


def _behind_flag(ctx: Context, call: AST) -> bool:
    """``if not self.checked: self.check(x)``: called until a flag of the object is set - once."""
    return any(in_body and test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not and test.operand.__class__ is ast.Attribute
               and test.operand.value.__class__ is ast.Name and test.operand.value.id == "self"
               for if_node, in_body in ctx.enclosing_ifs(call) for test in [if_node.test])


def _called_in_step(ctx: Context, name: str, depth: int = 2) -> bool:
    """Is a method ``name`` called (``x.name(``) in a training step, in a function that trains,
    in a ``forward``, or in a method that is itself called so (``depth`` levels up), somewhere in
    the project? (An ``end_task()`` that a task-switching hook calls is not.)"""
    key = ("sem:called-in-step", name, depth)
    found = ctx.project.answers.get(key)
    if found is None:
        ctx.project.answers[key] = False  # (a recursive chain)
        texts = [(p, t) for p, t in ctx.project.files if f".{name}(" in t] or [(ctx.path, ctx.source)]
        found = len(texts) <= MAX_CALLER_FILES and any(
            _calls_in_step(ctx if p == ctx.path else parsed_file(ctx.project, p, t), name, depth) for p, t in texts)
        ctx.project.answers[key] = found
    return found


def _calls_in_step(where: Context | None, name: str, depth: int) -> bool:
    if where is None:
        return False
    for call in where.calls_named(name):
        if call.func.__class__ is not ast.Attribute or runs_periodically(where, call):
            continue
        caller = where.function_of(call)
        if hot_region_of(where, call) is not None:
            return True
        if caller is None or caller.__class__ is ast.Lambda or is_eval_name(caller.name):
            continue
        if "forward" in caller.name.lower() or any(where.scope_of(c) is caller for c in training_calls(where)) \
                or depth > 0 and caller.name != name and _called_in_step(where, caller.name, depth - 1):
            return True
    return False


def _forward_like(ctx: Context, func: AST) -> bool:
    if func.__class__ is ast.Lambda or "forward" in func.name.lower():
        return True
    klass = ctx.parent(func)
    return klass.__class__ is ast.ClassDef and (
        any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)) or project_module_method(ctx, func))


def project_module_method(ctx: Context, func: AST) -> bool:
    """A method of a class whose bases reach ``nn.Module`` through classes of other modules of the
    project (matched by class name in the project's text)."""
    klass = ctx.parent(func)
    if klass.__class__ is not ast.ClassDef or not ctx.project.files:
        return False
    modules = _module_classes(ctx)
    return any((b.attr if b.__class__ is ast.Attribute else getattr(b, "id", "")) in modules for b in klass.bases)


def _module_classes(ctx: Context) -> frozenset[str]:
    """The names of the project's classes that derive from ``nn.Module`` (by their text)."""
    key = ("module-classes",)
    found = ctx.project.answers.get(key)
    if found is None:
        bases: dict[str, set[str]] = {}
        for _, text in ctx.project.files:
            if "class " in text:
                for name, parents in _CLASS.findall(text):
                    bases.setdefault(name, set()).update(p.strip().rsplit(".", 1)[-1] for p in parents.split(","))
        found = {n for n, ps in bases.items() if "Module" in ps}
        while True:
            more = {n for n, ps in bases.items() if n not in found and ps & found}
            if not more:
                break
            found |= more
        found = ctx.project.answers[key] = frozenset(found)
    return found


def forward_helper(ctx: Context, func: AST) -> bool:
    """A module-level function that another module of the project calls from a function on its
    forward path (a method of a model class, a ``forward``), outside a log interval."""
    if func.__class__ is ast.Lambda or ctx.parent(func) is not ctx.tree or not ctx.project.files:
        return False
    key = ("sem:forward-helper", id(func))
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = any((caller := other.function_of(call)) is not None and not is_eval_name(caller.name)
                                      and not runs_periodically(other, call) and _forward_like(other, caller)
                                      and ("forward" in caller.name.lower() or runs_in_step(other, caller))
                                      for other, call in project_calls(ctx, func.name))
    return found
