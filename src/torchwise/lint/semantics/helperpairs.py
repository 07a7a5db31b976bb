"""Calls of the project's layer-building helpers that put a biased convolution before a BatchNorm
(TW209): ``def conv(cin, cout, k=3, bn=True, bias=True)`` that starts a list of layers with
``nn.Conv2d(..., bias=bias)`` and appends ``nn.BatchNorm2d(cout)`` under ``if bn:``. Whether the
bias meets the BatchNorm depends on each call: ``conv(c, c)`` (both left on) does,
``conv(c, c, bias=False)`` and ``conv(c, c, bn=False)`` do not. Reported at the calls that leave
both on, in this file or another module of the project that imports the helper."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchwise.lint.engine import Context, argument, has_star_args
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.addedlayers import param_bias_pairs
from torchwise.lint.semantics.projecthelpers import project_function
from torchwise.lint.semantics.values import functions_by_name


def helper_pair_calls(ctx: Context) -> Iterator[ast.Call]:
    """Calls of a module-level helper function (of this file, or imported from another module of
    the project) whose pair (:func:`param_bias_pairs`) the call's arguments - or the defaults -
    switch on: a true constant (or nothing) for the bias parameter and for the flag."""
    names = [n for n in _helper_names(ctx) if f"{n}(" in ctx.source]
    if not names:
        return
    local = functions_by_name(ctx)
    for call in ctx.nodes.get(ast.Call, ()):
        func = call.func
        if func.__class__ is not ast.Name or func.id not in names or not (func.id in local or func.id in ctx.imports) \
                or has_star_args(call):
            continue
        found = project_function(ctx, call)
        if found is None or found[1].__class__ is not ast.FunctionDef:
            continue
        where, helper = found
        key = ("tw209:helperpairs", where.path, helper.lineno, helper.name)
        cache = ctx.project.answers if ctx.project.files else ctx._cache
        if key not in cache:
            cache[key] = [(b, f) for _, b, f in param_bias_pairs(where, helper)] \
                if where.parent(helper) is where.tree and "BatchNorm" in where.text(helper) else []
        if any(_on(call, helper, bias) and (flag is None or _on(call, helper, flag)) for bias, flag in cache[key]):
            yield call


# a module-level function with a parameter `bias=True` (the signature may span lines)
_BIAS_HELPER = lazy_compile(r"^def[ \t]+(\w+)\([^)]*\bbias[ \t]*=[ \t]*True\b", re.M)


def _helper_names(ctx: Context) -> frozenset[str]:
    """Names of the project's module-level functions that take ``bias=True`` in a file that builds
    a BatchNorm: the only helpers whose calls can pair (read from the text once per project)."""
    key = "tw209:helpernames"
    cache = ctx.project.answers if ctx.project.files else ctx._cache
    found = cache.get(key)
    if found is None:
        texts = [t for _, t in ctx.project.files] if ctx.project.files else [ctx.source]
        found = frozenset(m.group(1) for t in texts if "BatchNorm" in t and "bias" in t for m in _BIAS_HELPER.finditer(t))
        cache[key] = found
    return found


def _on(call: ast.Call, helper: ast.FunctionDef, param: str) -> bool:
    """The call passes a true constant for ``param``, or leaves it at a true constant default."""
    params = [a.arg for a in helper.args.args]
    value = argument(call, param, params.index(param))
    if value is None:
        defaults = dict(zip(params[::-1], helper.args.defaults[::-1]))
        value = defaults.get(param)
    return value.__class__ is ast.Constant and value.value is True
