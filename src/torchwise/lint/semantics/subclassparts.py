"""Parts of a module class that its subclasses supply, and project module classes under lower-case
names - two ways a ``.forward(...)`` receiver is a module that a look at the class alone misses.

- :func:`subclass_parts`: an abstract base (``class Encoder(nn.Module)``) whose method calls
  ``self.layers.forward(x)`` while only the concrete subclasses of the same file assign
  ``self.layers = nn.Sequential(*layers)``: the values those subclasses give the attribute.
- :func:`lower_module_class`: ``crit = silog_loss(...)`` where the project defines
  ``class silog_loss(nn.Module)`` and no function of that name.
"""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import Context, last_name
from torchwise.lint.semantics.projectclasses import class_kinds


def subclass_parts(ctx: Context, klass: ast.ClassDef, attr: str) -> list[ast.AST]:
    """Values the classes of this file derived from ``klass`` (directly or through other
    classes of the file) assign to ``self.<attr>``."""
    derived = [klass.name]
    out: list[ast.AST] = []
    for other in ctx.local_classes.values():  # classes in file order: bases come before subclasses
        if other is klass or not any(last_name(b) in derived for b in other.bases):
            continue
        derived.append(other.name)
        out.extend(ctx.self_attr_values(other, attr))
    return out


def lower_module_class(ctx: Context, func: ast.AST) -> bool:
    """The callee is a lower-case name of an ``nn.Module`` class of the project (``silog_loss``)
    that no file of the project also defines as a function or assigns as a plain name
    (``self.silog_loss = ...``, an attribute, does not count)."""
    name = func.attr if func.__class__ is ast.Attribute else func.id if func.__class__ is ast.Name else None
    if name is None or name[:1].isupper() or not ctx.project.files or class_kinds(ctx.project).get(name) != "module":
        return False
    key = ("subclassparts:def", name)
    defined = ctx.project.answers.get(key)
    if defined is None:
        pattern = re.compile(rf"\bdef\s+{name}\b|(?<![\w.]){name}\s*=(?!=)")
        defined = any(name in t and pattern.search(t) for _, t in ctx.project.files)
        ctx.project.answers[key] = defined
    return not defined
