"""``pin_memory`` read from a settings dict by key with a False fallback, where the dict holds an
off-by-default option (for TW203/TW204): ``pin_memory=in_config("pin_memory", system_config,
False)`` or ``settings.get("pin_memory", False)``, where every dict of the project's code that
fills that key fills it from a command-line option that is off unless the user sets it
(``{"n_gpus": namespace.ngpus, "pin_memory": namespace.pin_memory}`` beside
``parser.add_argument("--pin_memory", action="store_true")``) or with ``False``. On the default
path nothing is pinned. A key no dict of the code fills (a YAML or JSON file decides) is not
judged: lint cannot read its default."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, keyword
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.optionpins import option_off


def lookup_off(ctx: Context, pin: AST | None) -> AST | None:
    """The off-by-default option the lookup ``pin`` reads (see the module doc); else None."""
    if pin is None or pin.__class__ is not ast.Call or not pin.args:
        return None
    key = next((a.value for a in pin.args if a.__class__ is ast.Constant and isinstance(a.value, str)), None)
    if key is None or "pin" not in key.lower():
        return None
    default = keyword(pin, "default")
    fallback = default.value if default is not None else pin.args[-1] if len(pin.args) >= 2 else None
    if fallback.__class__ is not ast.Constant or fallback.value is not False:
        return None
    return _filled_off(ctx, key)


def _filled_off(ctx: Context, key: str) -> AST | None:
    answers = ctx.project.answers if ctx.project.files else ctx._cache
    cache_key = ("pinlookups:filled", key)
    if cache_key in answers:
        return answers[cache_key]
    found: AST | None = None
    quoted = (f'"{key}"', f"'{key}'")
    files = ctx.project.files or ((ctx.path, ctx.source),)
    for path, text in files:
        if not any(q in text for q in quoted):
            continue
        other = ctx if path == ctx.path else parsed_file(ctx.project, path, text)
        if other is None:
            continue
        for node in other.nodes.get(ast.Dict, ()):
            for k, v in zip(node.keys, node.values):
                if k.__class__ is not ast.Constant or k.value != key:
                    continue
                if v.__class__ is ast.Constant and v.value is False:
                    continue
                option = option_off(other, v, v)
                if option is None:
                    answers[cache_key] = None
                    return None  # a dict that fills the key otherwise: lint cannot tell the default
                found = found or option
    answers[cache_key] = found
    return found
