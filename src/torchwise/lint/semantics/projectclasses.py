"""Which classes of the project are ``nn.Module`` subclasses and which are plain classes, across
its modules: ``class BCERankingLoss(nn.Module)`` in ``networks_basic.py`` makes
``self.rankLoss = networks.BCERankingLoss()`` in another file a module; ``class DistModel(BaseModel)``
with ``class BaseModel():`` makes a ``DistModel()`` a plain object whose ``forward`` is an ordinary
method. Worked out from the text of the project's files (``ctx.project.files``) once per process;
a name the project defines as both kinds is neither.

Also the classes of other modules a class inherits from (:func:`inherited_classes`), parsed on
demand, for attributes a base class's ``__init__`` assigns (``self.feature = model_func()``); and
the one finder of a project class by name (:func:`project_class_named`, :func:`defining_files`,
:func:`class_in`) that the other semantic helpers share.
"""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.facts import ProjectFacts
from torchwise.lint.semantics.callers import parsed_file

_CLASS = lazy_compile(r"class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:")
# (torch's loss bases imported by name: ``from torch.nn.modules.loss import _Loss``)
_TORCH_BASE = lazy_compile(r"^(?:torch\.)?nn\.(?:modules\.\w+\.)?_?[A-Z]\w*$|^Module$|^_Loss$|^_WeightedLoss$")


def class_kinds(facts: ProjectFacts) -> dict[str, str]:
    """Class name -> ``"module"`` or ``"plain"``, for the classes the project's files define whose
    kind their bases settle (through other classes of the project)."""
    kinds = facts.answers.get("projectclasses:kinds")
    if kinds is not None:
        return kinds
    bases: dict[str, set[tuple[str, ...]]] = {}
    for _, text in facts.files:
        if "class " not in text:
            continue
        for m in _class_lines(text):
            names = tuple(b.strip() for b in (m.group(2) or "").split(",") if b.strip() and "=" not in b)
            bases.setdefault(m.group(1), set()).add(names)
    kinds = {}
    for _ in range(6):  # through chains of project classes
        changed = False
        for name, variants in bases.items():
            found = {_kind(v, kinds) for v in variants}
            kind = found.pop() if len(found) == 1 else None
            if kind is not None and kinds.get(name) != kind:
                kinds[name] = kind
                changed = True
        if not changed:
            break
    facts.answers["projectclasses:kinds"] = kinds
    return kinds


def _class_lines(text: str):
    """Matches of ``class Name(bases):`` at the start of a line (after indentation); the text is
    searched for the word first, so a file costs one substring scan."""
    pos = text.find("class ")
    while pos >= 0:
        start = text.rfind("\n", 0, pos) + 1
        if not text[start:pos].strip(" \t"):
            m = _CLASS.match(text, pos)
            if m is not None:
                yield m
        pos = text.find("class ", pos + 6)


def _kind(bases: tuple[str, ...], kinds: dict[str, str]) -> str | None:
    if not bases or bases == ("object",):
        return "plain"
    found = set()
    for base in bases:
        if _TORCH_BASE.match(base):
            return "module"
        found.add(kinds.get(base.rsplit(".", 1)[-1]) if base.replace(".", "").isidentifier() else None)
    if "module" in found:
        return "module"
    return "plain" if found == {"plain"} else None


def project_kind(ctx: Context, func: AST) -> str | None:
    """The kind of the project class a call's callee names (``networks.BCERankingLoss``, ``DistModel``)."""
    name = func.attr if func.__class__ is ast.Attribute else func.id if func.__class__ is ast.Name else None
    if name is None or not name[:1].isupper() or not ctx.project.files:
        return None
    return class_kinds(ctx.project).get(name)


def is_module_class_def(ctx: Context, klass: ast.ClassDef) -> bool:
    """Is the class defined here an ``nn.Module``: a torch.nn base, or a project module class as base?"""
    if any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)):
        return True
    kinds = class_kinds(ctx.project) if ctx.project.files else {}
    return kinds.get(klass.name) == "module"


# how a file's text is taken to define ``class Name`` before it is parsed (each caller keeps its own):
# "line": ``class Name`` at the start of a line; "line(": that, and ``class Name(`` somewhere;
# "head": ``class Name(`` or ``class Name:`` anywhere; "word": ``class Name`` anywhere
_TESTS = ("line", "line(", "head", "word")


def defines(text: str, name: str, test: str) -> bool:
    """Does the text of a file define ``class name``, by the text test ``test`` (see ``_TESTS``)?"""
    if test == "word":
        return f"class {name}" in text
    if test == "head":
        return f"class {name}(" in text or f"class {name}:" in text
    if test == "line(" and f"class {name}(" not in text:
        return False
    return re.search(rf"^class[ \t]+{re.escape(name)}\b", text, re.M) is not None


def defining_files(facts: ProjectFacts, name: str, test: str = "line") -> list[tuple[str, str]]:
    """``(path, text)`` of the project's files whose text defines ``class name`` (by ``test``), in
    the project's order; worked out once per name and test."""
    key = ("projectclasses:defined", test, name)
    files = facts.answers.get(key)
    if files is None:
        files = facts.answers[key] = [(p, t) for p, t in facts.files if defines(t, name, test)]
    return files


def class_in(facts: ProjectFacts, path: str, text: str, name: str,
             top_level: bool = False) -> tuple[Context, ast.ClassDef] | None:
    """The class ``name`` of that file of the project, parsed: any class of the name (the last),
    or with ``top_level`` the one module-level class of the name (None when several)."""
    other = parsed_file(facts, path, text)
    if other is None:
        return None
    if top_level:
        found = [n for n in other.tree.body if n.__class__ is ast.ClassDef and n.name == name]
        return (other, found[0]) if len(found) == 1 else None
    klass = other.local_classes.get(name)
    return (other, klass) if klass is not None else None


def project_class_named(ctx: Context, name: str, test: str = "line", top_level: bool = False,
                        skip_own: bool = False) -> tuple[Context, ast.ClassDef] | None:
    """The class ``name`` that exactly one file of the project defines (by the text test ``test``)
    and its context; None when no file or several do, or with ``skip_own`` when that file is this one."""
    files = defining_files(ctx.project, name, test)
    if len(files) != 1 or skip_own and files[0][0] == ctx.path:
        return None
    return class_in(ctx.project, *files[0], name, top_level)


def inherited_classes(ctx: Context, klass: ast.ClassDef, depth: int = 2) -> list[tuple[Context, ast.ClassDef]]:
    """The base classes of ``klass`` that another module of the project defines, parsed: the
    class of that name in a file whose text defines it (one file only)."""
    out: list[tuple[Context, ast.ClassDef]] = []
    if depth <= 0 or not ctx.project.files:
        return out
    for base in klass.bases:
        name = base.attr if base.__class__ is ast.Attribute else base.id if base.__class__ is ast.Name else None
        if name is None or name in ctx.local_classes:
            continue
        found = project_class_named(ctx, name, "head", skip_own=True)
        if found is not None:
            out.append(found)
            out.extend(inherited_classes(*found, depth - 1))
    return out
