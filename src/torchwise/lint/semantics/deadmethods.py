"""Functions and methods that never run because nothing names them where code runs (for
:mod:`.deadcode`): a function whose name occurs nowhere in the project but in its own ``def``
(:func:`named_once`), and one named only inside such functions of its own file, a few levels
deep (:func:`only_dead_callers`: the helpers of a prediction method nothing calls), or only in a
branch no run selects (:mod:`.unrunbranches`). Framework hooks (``forward``, ``training_step``,
``on_*``, dunders) and decorated functions (a registry's ``@register``) never count;
``@classmethod``, ``@staticmethod`` and TorchScript's (``@torch.jit.script``) do."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.deadmodules import named_in_references
from torchwise.lint.semantics.deadtext import words
from torchwise.lint.semantics.methodrefs import method_uses
from torchwise.lint.semantics.prefixdispatch import dispatched_by_prefix
from torchwise.lint.semantics.unrunbranches import in_unrun_branch


def function_at(ctx: Context, line: int) -> AST | None:
    """The innermost function of the file whose lines hold ``line``."""
    best = None
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef):
        for f in ctx.nodes.get(kind, ()):
            start = min([f.lineno, *(d.lineno for d in f.decorator_list)])  # its decorators' lines too
            if start <= line <= (f.end_lineno or f.lineno) and (best is None or f.lineno > best.lineno):
                best = f
    return best


# names that frameworks or Python call without the project naming them
# (Dassl's trainers: forward_backward and the batch parsers it and the test loop call)
_HOOKS = frozenset({"forward", "main", "run", "setup", "teardown", "configure_optimizers", "training_step",
                    "validation_step", "test_step", "predict_step", "forward_backward", "parse_batch_train",
                    "parse_batch_test"})


def _plain(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """No framework reaches the function by itself: no decorator but ``@classmethod`` or
    ``@staticmethod``, no dunder, hook or ``on_*`` name."""
    name = func.name
    return all(d.__class__ is ast.Name and d.id in ("classmethod", "staticmethod") or _dotted(d) in _TORCH_DECORATORS
               for d in func.decorator_list) and not name.startswith(("__", "on_")) and name not in _HOOKS


# TorchScript's decorators compile a function, they do not hand it to anyone (no registry)
_TORCH_DECORATORS = frozenset({"torch.jit.script", "torch.jit.unused", "torch.jit.ignore"})


def _dotted(node: AST) -> str:
    if node.__class__ is ast.Call:
        node = node.func
    parts = []
    while node.__class__ is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if node.__class__ is ast.Name else ""


def only_dead_callers(ctx: Context, func: ast.FunctionDef | ast.AsyncFunctionDef, depth: int) -> bool:
    """Every mention of ``func``'s name is in this file, inside functions that never run
    themselves (named once, or again only by such functions, ``depth`` levels deep): the helpers
    of a prediction method nothing calls (``self._internal_pred(...)`` only in ``predict_3D``)."""
    name = func.name
    if depth <= 0 or not _plain(func):
        return False
    key = ("dead:callers", id(func))
    if key in ctx._cache:
        return ctx._cache[key]
    ctx._cache[key] = False  # recursion counts as alive while it is worked out
    found = not any(p != ctx.path and name in t and words(t, name, 1, code=True) for p, t in ctx.project.files) or (
        ctx.parent(func).__class__ is ast.ClassDef and method_uses(ctx, func, others=True) == 0)  # other classes' own methods
    found = found and not named_in_references(ctx, name, code=True) and _mentions_dead(ctx, func, depth)
    ctx._cache[key] = found
    return found


def _mentions_dead(ctx: Context, func: ast.FunctionDef | ast.AsyncFunctionDef, depth: int) -> bool:
    source, name = ctx.source, func.name
    at, seen = source.find(name), False
    while at >= 0:
        start, at = at, source.find(name, at + 1)
        end = start + len(name)
        if start and (source[start - 1].isalnum() or source[start - 1] == "_") or end < len(source) and (source[end].isalnum() or source[end] == "_"):
            continue
        line = source.count("\n", 0, start) + 1
        if "#" in source[source.rfind("\n", 0, start) + 1:start]:
            continue
        if in_unrun_branch(ctx, line):
            seen = True  # named in a branch no run selects (`elif method == 'fast':` no caller passes)
            continue
        owner = function_at(ctx, line)
        if owner is func or owner is not None and line == owner.lineno and owner.name == name:
            continue  # its own def (another class's method of that name counts below)
        while owner is not None and owner is not func:
            if owner.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and _plain(owner) and (
                    named_once(ctx, owner) or only_dead_callers(ctx, owner, depth - 1)):
                break
            owner = ctx.function_of(owner)
        if owner is None:
            return False  # a mention where code runs
        seen = True
    return seen


def named_once(ctx: Context, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``func``'s name occurs in no Python file of the project but in its own ``def`` (a mention
    in a comment, ``# train_graph_completion(args, loader)``, calls nothing) and in no config,
    shell script or notebook (a library's function there, ``np.load(...)`` in a notebook's cell,
    names no method of the project). For a method, a mention that cannot reach it is none
    (:mod:`.methodrefs`: ``torch.load``, another class's own ``self.load``)."""
    name = func.name
    if not _plain(func):
        return False
    key = ("dead:uses", name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = 0
        for _, text in ctx.project.files:
            if name in text:
                found += words(text, name, 2 - found, code=True)
                if found > 1:
                    break
        if found == 1 and named_in_references(ctx, name, code=True):
            found = 2  # named in a config, a shell script or a notebook
        ctx.project.answers[key] = found
    if found > 1 and ctx.parent(func).__class__ is ast.ClassDef and not named_in_references(ctx, name, code=True):
        return method_uses(ctx, func) == 0  # a common name: `torch.load`, other classes' own `self.load` reach it not
    if found == 1 and ctx.parent(func).__class__ is ast.ClassDef and dispatched_by_prefix(ctx, name):
        return False  # getattr(self, '_' + mode)(...): called by a name built at run time
    return found == 1


# private names that torch and transformers call on a project's subclasses themselves
_LIBRARY_PRIVATE_HOOKS = frozenset({"_check_input_dim", "_conv_forward", "_load_from_state_dict", "_save_to_state_dict",
                                    "_init_weights", "_apply", "_get_name", "_reset_parameters", "_set_gradient_checkpointing",
                                    "_forward_unimplemented", "_get_closed_form_lr"})


def private_named_once(ctx: Context, node: AST) -> bool:
    """``node`` lies in a private function or method (``def _sparse_dropout(self, x)``: one leading
    underscore) whose name occurs nowhere in the project but in its ``def`` and comments
    (``# adj = self._sparse_dropout(adj)``): in a module that nothing imports by name (a model
    a registry loads by a computed name, a library's entry module) no user calls it either."""
    func = node if node.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) else ctx.function_of(node)
    while func is not None:
        if func.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and func.name.startswith("_") \
                and not func.name.startswith("__") and func.name not in _LIBRARY_PRIVATE_HOOKS and named_once(ctx, func):
            return True
        func = ctx.function_of(func)
    return False
