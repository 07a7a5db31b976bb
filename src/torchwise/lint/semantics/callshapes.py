"""What a call hands a function it cannot see (TW207): a function of another module of the
project is parsed on its own, without the call, so the call is summed up as a small hashable
shape - how many positional arguments it passes, which of them are ``None``/``False``, which
keywords it passes and which of those are ``None``/``False`` - and a definition is then asked
which of its parameters that call leaves off (``loss.CDAN(inputs, ad_net, None, None, layer)``
of ``def CDAN(input_list, ad_net, entropy=None, coeff=None, random_layer=None)``: reads under
``if entropy is not None:`` never run for it)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import param_default

Shape = tuple[int, frozenset[int], frozenset[str], frozenset[str]]


def _off(expr: ast.AST | None) -> bool:
    return expr.__class__ is ast.Constant and (expr.value is None or expr.value is False)


def call_shape(call: ast.Call) -> Shape | None:
    """The call's shape; None when a ``*args``/``**kwargs`` hides what it passes."""
    if any(a.__class__ is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    return (len(call.args), frozenset(i for i, a in enumerate(call.args) if _off(a)),
            frozenset(k.arg for k in call.keywords), frozenset(k.arg for k in call.keywords if _off(k.value)))


def left_off(func: ast.AST, shape: Shape, param: str) -> bool:
    """Does a call of that shape hand ``func`` nothing for ``param`` but ``None``/``False`` (passed
    so, or left to such a default)?"""
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    args = func.args
    count, off_positions, keywords, off_keywords = shape
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    if positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    if param in positional and positional.index(param) < count:
        return positional.index(param) in off_positions
    if param in keywords:
        return param in off_keywords
    default = param_default(args, param)
    return default is not None and _off(default)
