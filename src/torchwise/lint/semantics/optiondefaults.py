"""The value an option takes when the user sets nothing: ``args.x`` from ``add_argument("--x",
default=...)`` or a dataclass field ``x: bool = True`` in the file, or ``config.CUDNN.DETERMINISTIC`` from the config module of the project
that assigns it a constant (``config.CUDNN.DETERMINISTIC = False``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, keyword
from torchwise.lint.semantics.callers import MAX_CALLER_FILES, parsed_file


def option_default(ctx: Context, value: AST, depth: int = 2) -> bool | None:
    """Whether the option ``value`` is on by default (argparse default, a field of an arguments
    class, a constant in a config module); None when lint cannot read it."""
    if value.__class__ is ast.Constant:
        return bool(value.value)
    if value.__class__ is ast.Name and depth > 0:
        b = ctx.binding_at(value.id, value)
        if b is not None and b.kind == "assign" and b.value is not None:
            return option_default(ctx, b.value, depth - 1)
        return None
    if value.__class__ is not ast.Attribute:
        return None
    for found in (_argparse_default(ctx, value.attr), _field_default(ctx, value.attr)):
        if found is not None:
            return found
    return _config_default(ctx, value)


def _value(call: ast.Call, name: str) -> AST | None:
    kw = keyword(call, name)
    return kw.value if kw is not None else None


def _field_default(ctx: Context, attr: str) -> bool | None:
    """A field of a class of this file with a constant default (``torch_deterministic: bool = True``
    in a dataclass of arguments)."""
    for cls in ctx.nodes.get(ast.ClassDef, ()):
        for item in cls.body:
            if item.__class__ is ast.AnnAssign and item.target.__class__ is ast.Name and item.target.id == attr \
                    and item.value.__class__ is ast.Constant:
                return bool(item.value.value)
    return None


def _argparse_default(ctx: Context, attr: str) -> bool | None:
    """``parser.add_argument("--attr", ...)`` in this file: its default (``store_true``: off);
    ``parser.set_defaults(attr=...)`` overrides it, as argparse does (``--pin_mem`` /
    ``--no_pin_mem`` pairs with ``set_defaults(pin_mem=True)``)."""
    for call in ctx.calls_named("set_defaults"):
        given = _value(call, attr)
        if given is not None:
            return bool(given.value) if given.__class__ is ast.Constant else None
    for call in ctx.calls_named("add_argument"):
        dest = _value(call, "dest")
        names = [a.value for a in call.args if a.__class__ is ast.Constant and isinstance(a.value, str)]
        if dest is not None and dest.__class__ is ast.Constant:
            names = [dest.value]
        if attr not in {n.lstrip("-").replace("-", "_") for n in names}:
            continue
        default = _value(call, "default")
        if default is not None:
            return bool(default.value) if default.__class__ is ast.Constant else None
        action = _value(call, "action")
        if action is not None and action.__class__ is ast.Constant:
            return action.value == "store_false"
        return False  # argparse's default is None
    return None


def _config_default(ctx: Context, value: ast.Attribute) -> bool | None:
    """A constant assigned to the same attribute path (its last two parts, ``CUDNN.DETERMINISTIC``)
    in this file or a module of the project that mentions it."""
    parts = ctx.text(value).split(".")
    suffix = ".".join(parts[-2:])
    key = ("sem:config-default", suffix)
    if key in ctx.project.answers:
        return ctx.project.answers[key]
    needle = f".{suffix} ="
    texts = [(p, t) for p, t in ctx.project.files if needle in t] or ([(ctx.path, ctx.source)] if needle in ctx.source else [])
    found = None
    for path, text in texts[:MAX_CALLER_FILES]:
        where = ctx if path == ctx.path else parsed_file(ctx.project, path, text)
        for node in where.nodes.get(ast.Assign, ()) if where is not None else ():
            if node.value.__class__ is ast.Constant and any(
                    t.__class__ is ast.Attribute and where.text(t).endswith(suffix) for t in node.targets):
                found = bool(node.value.value)
                break
        if found is not None:
            break
    ctx.project.answers[key] = found
    return found


def zero_by_default(ctx: Context, value: AST) -> bool:
    """``args.workers`` where this file's ``parser.add_argument('--workers', type=int, default=0)``
    declares it: an option that is 0 unless the user sets it."""
    if value.__class__ is not ast.Attribute or value.value.__class__ is not ast.Name or "add_argument" not in ctx.source:
        return False
    for call in ctx.calls_named("add_argument"):
        dest = _value(call, "dest")
        names = [a.value for a in call.args if a.__class__ is ast.Constant and isinstance(a.value, str)]
        if dest is not None and dest.__class__ is ast.Constant:
            names = [dest.value]
        if value.attr in {n.lstrip("-").replace("-", "_") for n in names}:
            default = _value(call, "default")
            return default.__class__ is ast.Constant and type(default.value) is int and default.value == 0
    return False
