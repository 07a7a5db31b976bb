"""A log interval that is no interval (TW207): ``if (batch_idx + 1) % args.log_step == 0:`` where
``parser.add_argument('--log_step', default=1, ...)`` in the same file and nothing in the project
sets it otherwise (no ``args.log_step = ...``, no other file naming the option): every run that
does not pass the option reads on every step."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, keyword


def every_step_interval(ctx: Context, test: AST) -> bool:
    """``test`` is ``<count> % args.<option> == 0`` with the option's argparse default 1 (the only
    setting of it in the project), also as a part of ``and`` (``... == 0 and args.model == "tfn"``:
    the other parts are no interval) or of ``or`` (``... == 0 or step == iters``: the branch runs
    whenever the interval test holds)."""
    if test.__class__ is ast.BoolOp:
        return any(every_step_interval(ctx, part) for part in test.values)
    if test.__class__ is not ast.Compare or len(test.ops) != 1 or test.ops[0].__class__ is not ast.Eq:
        return False
    left = test.left
    if left.__class__ is not ast.BinOp or left.op.__class__ is not ast.Mod or left.right.__class__ is not ast.Attribute \
            or left.right.value.__class__ is not ast.Name:
        return False
    option = left.right.attr
    key = ("sem:unit-interval", option)
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = _default_one(ctx, option) and _set_nowhere_else(ctx, option)
    return found


def _default_one(ctx: Context, option: str) -> bool:
    for call in ctx.calls_named("add_argument") if "add_argument" in ctx.source else ():
        names = {a.value.lstrip("-").replace("-", "_") for a in call.args if a.__class__ is ast.Constant and isinstance(a.value, str)}
        if option not in names:
            continue
        default = keyword(call, "default")
        return default is not None and default.value.__class__ is ast.Constant and default.value.value == 1 \
            and default.value.value is not True
    return False


def _set_nowhere_else(ctx: Context, option: str) -> bool:
    """No assignment to ``<x>.<option>`` in the file, and no other file of the project names it
    but in a declaration of its own parser (``add_argument('--log_interval', default=20)`` of a
    sibling script)."""
    if any(t.__class__ is ast.Attribute and t.attr == option for node in ctx.nodes.get(ast.Assign, ()) for t in node.targets):
        return False
    spelled = (option, option.replace("_", "-"))
    return not any(p != ctx.path and any(s in t for s in spelled) and not _own_option(t, spelled) for p, t in ctx.project.files)


def _own_option(text: str, spelled: tuple[str, str]) -> bool:
    """``text`` declares the option for a parser of its own (a sibling script's ``add_argument``)."""
    return any("add_argument" in line for line in text.splitlines() if any(s in line for s in spelled))


__all__ = ["every_step_interval"]
