"""Where a value comes from when it is not made on the spot (TW206): a parameter every caller of
the file hands the same kind of value (``_write_back(net, total)`` with ``total = np.zeros_like(flat)``
everywhere), or the result of a helper of the project - of this file, of the module it is imported
from, or of a module the file star-imports (``from helpers import *``, then ``heat_targets(64, boxes)``)
- every ``return`` of which gives that kind of value. The kind is the caller's test (``is_ndarray``);
nothing here guesses a type."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, DEF_TYPES, Context, has_star_args
from torchwise.lint.semantics.callers import caller_arguments, parsed_file
from torchwise.lint.semantics.projecthelpers import project_function
from torchwise.lint.semantics.starnames import star_imported_files
from torchwise.lint.semantics.values import local_function

# (context, value, where it is used, depth) -> does the value have the kind asked for
ValueTest = Callable[[Context, AST, AST, int], bool]
# the depth each value at the other end of a hop is tested with: the answer is kept per function,
# so it must not depend on how deep the asking chain already is (a cycle meets the False kept
# while its answer is computed)
_HOP = 3


def param_from_every_caller(ctx: Context, name: ast.Name, use: AST, test: ValueTest, depth: int, kind: str) -> bool:
    """``name`` is a parameter of a function of this file, and every call of it - in this file and in
    the modules of the project that import it, one at least - passes a value ``test`` accepts.
    ``kind`` names the test (the answer is kept per function, parameter and kind)."""
    func = ctx.function_of(use)
    if func is None or func.__class__ is ast.Lambda or depth <= 0:
        return False
    b = ctx.binding_at(name.id, use)
    if b is None or b.kind != "param":
        return False
    key = ("sem:arrayflow-param", kind, id(func), name.id)
    if key in ctx._cache:
        return ctx._cache[key]
    ctx._cache[key] = False  # (a recursive helper)
    found = ctx._cache[key] = _every_caller(ctx, func, name.id, test, depth)
    return found


def _every_caller(ctx: Context, func: AST, param: str, test: ValueTest, depth: int) -> bool:
    args = func.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    if param not in positional:
        return False
    index = positional.index(param)
    method = ctx.parent(func).__class__ is ast.ClassDef and positional[:1] in (["self"], ["cls"])
    if method and index == 0:
        return False
    seen = 0
    for _, value, call in caller_arguments(ctx, func, param):
        if has_star_args(call):
            return False  # f(*args) / f(**kw): what it passes cannot be seen
        if value is None or not test(ctx, value, call, _HOP):
            return False
        seen += 1
    if not method:
        for other, value, call in caller_arguments(ctx, func, param, here=False, elsewhere="importers", shift="self"):
            if value is None:
                continue
            if not test(other, value, call, _HOP):
                return False
            seen += 1
    return seen > 0


def helper_returns(ctx: Context, call: ast.Call, test: ValueTest, depth: int, kind: str) -> bool:
    """``call`` runs a helper of the project (:func:`project_function`, or a function a star import of
    the file hands on) whose every ``return`` - one at least - gives a value ``test`` accepts."""
    if depth <= 0:
        return False
    found = project_function(ctx, call) or star_function(ctx, call)
    if found is None:
        return False
    where, func = found
    key = ("sem:arrayflow-returns", kind, id(func))
    if key in where._cache:
        return where._cache[key]
    where._cache[key] = False  # (a recursive helper)
    returns = [n for n in where.walk_body(func.body) if n.__class__ is ast.Return]
    ok = bool(returns) and all(r.value is not None and test(where, r.value, r, _HOP) for r in returns)
    where._cache[key] = ok
    return ok


def star_function(ctx: Context, call: ast.Call) -> tuple[Context, AST] | None:
    """The module-level function a plain call names when the file gets the name only through
    ``from <project module> import *`` (and binds no name of its own)."""
    func = call.func
    if func.__class__ is not ast.Name or func.id in ctx.imports or ctx.binding_at(func.id, call) is not None \
            or local_function(ctx, call) is not None or "import *" not in ctx.source:
        return None
    for _, path, text in star_imported_files(ctx):
        if f"def {func.id}(" not in text:
            continue
        other = parsed_file(ctx.project, path, text)
        if other is None:
            continue
        defs = [n for n in other.tree.body if n.__class__ in DEF_TYPES and n.name == func.id]
        if len(defs) == 1 and defs[0].__class__ is not ast.ClassDef:
            return other, defs[0]
    return None
