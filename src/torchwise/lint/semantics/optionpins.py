"""``pin_memory`` taken from a command-line option that is off unless the user sets it (for
TW203): ``DataLoader(..., pin_memory=args.pin_memory)`` or ``pin_memory=self.pin_memory`` after
``self.pin_memory = args.pin_memory`` (in the class, a base class of the file, or a base class of
another module of the project: a runner's subclass), where ``parser.add_argument('--pin_memory',
type=int, default=0)`` (or ``action='store_true'``) declares it. Every run that does not pass the
option copies unpinned batches. Also: whether ``pin_memory=False`` is written without a reason."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.optiondefaults import option_default
from torchwise.lint.semantics.projectclasses import project_class_named


def option_off(ctx: Context, pin: AST, use: AST) -> AST | None:
    """The option (``args.pin_memory``) that ``pin`` takes its value from, when its declared
    default is off; else None."""
    if pin.__class__ is not ast.Attribute or pin.value.__class__ is not ast.Name or "pin" not in pin.attr.lower():
        return None
    if pin.value.id != "self":
        return pin if "add_argument" in ctx.source and option_default(ctx, pin) is False else None
    klass = ctx.class_of(use)
    for where, cls in _classes(ctx, klass) if klass is not None else ():
        values = where.self_attr_values(cls, pin.attr)
        if values:
            value = values[0]
            ok = len(values) == 1 and value.__class__ is ast.Attribute and value.value.__class__ is ast.Name \
                and value.value.id != "self" and "add_argument" in where.source and option_default(where, value) is False
            return value if ok else None
    return None


def _classes(ctx: Context, klass: ast.ClassDef, depth: int = 3):
    """``(context, class)`` for ``klass`` and its bases: of this file, or the one class of that
    name in another module of the project."""
    todo = [(ctx, klass)]
    while todo and depth > 0:
        depth -= 1
        where, cls = todo.pop(0)
        yield where, cls
        for base in cls.bases:
            name = last_name(base) or ""
            local = where.local_classes.get(name)
            found = (where, local) if local is not None else _project_class(ctx, name)
            if found is not None:
                todo.append(found)


def _project_class(ctx: Context, name: str) -> tuple[Context, ast.ClassDef] | None:
    if not name or name in ("object", "Module", "ABC"):
        return None
    return project_class_named(ctx, name, "line")


def explicit_false(ctx: Context, pin: AST | None) -> bool:
    """``pin_memory=False`` written out with no reason given next to it: a comment naming
    pin_memory on its line or the line above (``# pin_memory=False: the batches stay on the CPU``)
    is the author's reason, and the call is left alone."""
    if pin is None or pin.__class__ is not ast.Constant or pin.value is not False:
        return False
    lines = ctx.source.splitlines()
    near = lines[max(pin.lineno - 2, 0):pin.lineno]
    return not any("#" in line and "pin" in line[line.index("#"):].lower() for line in near)
