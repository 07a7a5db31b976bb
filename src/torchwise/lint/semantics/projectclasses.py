"""Which classes of the project are ``nn.Module`` subclasses and which are plain classes, across
its modules: ``class BCERankingLoss(nn.Module)`` in ``networks_basic.py`` makes
``self.rankLoss = networks.BCERankingLoss()`` in another file a module; ``class DistModel(BaseModel)``
with ``class BaseModel():`` makes a ``DistModel()`` a plain object whose ``forward`` is an ordinary
method. Worked out from the text of the project's files (``ctx.project.files``) once per process;
a name the project defines as both kinds is neither.

Also the classes of other modules a class inherits from (:func:`inherited_classes`), parsed on
demand, for attributes a base class's ``__init__`` assigns (``self.feature = model_func()``).
"""

from __future__ import annotations

import ast

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
        key = ("projectclasses:defined", name)
        files = ctx.project.answers.get(key)
        if files is None:
            files = [(p, t) for p, t in ctx.project.files if f"class {name}(" in t or f"class {name}:" in t]
            ctx.project.answers[key] = files
        if len(files) != 1 or files[0][0] == ctx.path:
            continue
        other = parsed_file(ctx.project, *files[0])
        cls = other.local_classes.get(name) if other is not None else None
        if cls is not None:
            out.append((other, cls))
            out.extend(inherited_classes(other, cls, depth - 1))
    return out
