"""Mentions of a class or function that build or call nothing (for :mod:`.deadcode`): a type test
(``isinstance(m, layers.SpectralLinear)``: the class is only looked for, never built), a name in a
module's ``__all__`` list, and a package ``__init__.py`` that only re-exports the name (``from
.multibox_loss import MultiBoxLoss`` and ``__all__ = ['MultiBoxLoss']``, which no other file
names). Export lists and re-exports count as uses where the project looks names up in a module's
namespace (``models.__dict__[args.arch]``, ``vars(module)``, ``getattr(models, name)``,
``eval(name)``, ``globals()[name]``, ``importlib.import_module``): a name chosen at run time may
pick them. Text tests, once per project."""

from __future__ import annotations

import os
import re

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.deadtext import column_zero_line, commented, import_spans

_TYPE_TEST = lazy_compile(r"(?:\b(?:isinstance|issubclass)\([^()\n]*?,[ \t]*(?:\([ \t]*)?(?:[\w.]+[ \t]*,[ \t]*)*"
                          r"|\btype\([^()\n]*\)[ \t]*(?:is(?:[ \t]+not)?|==|!=)[ \t]*)[\w.]*$")


def type_test(before: str) -> bool:
    """The text ``before`` a class's name on its line ends inside the classes of an ``isinstance(x, ``
    / ``issubclass(c, (A, `` test or a ``type(x) is`` comparison: a test, which builds no object."""
    return ("isinstance(" in before or "issubclass(" in before or "type(" in before) and _TYPE_TEST.search(before) is not None


def only_type_tests(text: str, word: re.Pattern[str]) -> bool:
    """Every mention of the class in ``text`` outside its imports and comments is a type test: the
    module builds none of it."""
    spans = import_spans(text)
    seen = False
    for m in word.finditer(text):
        if any(a <= m.start() < b for a, b in spans) or commented(text, m.start()):
            continue
        if not type_test(text[text.rfind("\n", 0, m.start()) + 1:m.start()]):
            return False
        seen = True
    return seen


def in_export_list(text: str, at: int) -> bool:
    """The mention at ``at`` lies in the module's ``__all__ = [...]`` (a string of its list)."""
    return column_zero_line(text, text.rfind("\n", 0, at) + 1).startswith("__all__")


def reexport_only(ctx: Context, path: str, text: str, word: re.Pattern[str]) -> bool:
    """``path`` is a package's ``__init__.py`` that names the name only in imports and in its
    ``__all__``, and the project imports the package itself (``from .modules import *``,
    ``from pkg.layers.functions import x``): the project uses the package, so only a file that
    names the name can use it. A package no file imports is a library's API, for users outside."""
    if os.path.basename(path) != "__init__.py":
        return False
    spans = import_spans(text)
    for m in word.finditer(text):
        span = next(((a, b) for a, b in spans if a <= m.start() < b), None)
        if span is None:
            if not (commented(text, m.start()) or in_export_list(text, m.start())):
                return False
        elif text[span[0]] in " \t" or re.match(r"[ \t]+as[ \t]+\w", text[m.end():m.end() + 40]):
            return False  # an import inside a function (a lazy factory), or under another name: a use
    package = os.path.basename(os.path.dirname(path))
    imports = re.compile(r"^[ \t]*(?:from|import)[ \t]+[^\n]*(?<![\w])" + re.escape(package) + r"(?![\w])", re.M)
    return bool(package) and any(p != path and package in t and imports.search(t) for p, t in ctx.project.files)


_GETATTR = lazy_compile(r"getattr\([ \t]*(\w+)[ \t]*,[ \t]*(?![ \t]*['\"])")


def namespace_lookups(ctx: Context) -> bool:
    """Some file of the project looks a name up in a module's namespace at run time."""
    found = ctx.project.answers.get("mentionsonly:lookups")
    if found is None:
        found = any(_looks_up(t) for _, t in ctx.project.files)
        ctx.project.answers["mentionsonly:lookups"] = found
    return found


def _looks_up(text: str) -> bool:
    if "__dict__[" in text or "vars(" in text or "globals()" in text or "import_module(" in text or "__import__(" in text \
            or ".__all__" in text:
        return True
    pos = text.find("eval(")
    while pos >= 0:
        if not pos or not (text[pos - 1].isalnum() or text[pos - 1] in "_."):
            return True  # eval(name), not model.eval()
        pos = text.find("eval(", pos + 5)
    if "getattr(" in text:
        for m in _GETATTR.finditer(text):
            if re.search(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?import[ \t][^\n]*\b" + re.escape(m.group(1)) + r"\b", text, re.M):
                return True  # getattr(models, args.arch): a module's attribute by a computed name
    return False
