"""Names a file receives through ``from <project module> import *``.

A library written as a package of star imports (``from ..network import *``, ``from deep_rl import *``)
hands its own ``import torch.nn.functional as F`` on to every module that star-imports it: such a
file uses ``F.tanh`` or ``torch.optim.lr_scheduler`` with no import of its own. :func:`star_names`
follows the star imports of a file through the project's modules (module level only, ``__all__``
respected, names the module rebinds dropped) and keeps the names that end at a torch module or
function. Only files given to lint together are read (``ctx.project.files``); each module's
exports are worked out once per process.
"""

from __future__ import annotations

import ast
import os
from typing import Iterator

from torchwise.lint.engine import AST, Context, canonical
from torchwise.lint.facts import ProjectFacts
from torchwise.lint.semantics.callers import parsed_file

_PACKAGES = ("torch", "functorch", "numpy")  # numpy: arrays NumPy makes, handed to torch (TW205)
_TORCH = ("torch", "functorch")
_DEPTH = 5  # star imports followed through at most this many modules


def star_names(ctx: Context) -> dict[str, str]:
    """Local name -> canonical dotted name, for the torch names this file receives only through
    star imports of the project's modules (not those it imports itself)."""
    found = ctx._cache.get("starnames:torch")
    if found is None:
        found = ctx._cache["starnames:torch"] = {k: v for k, v in _star_names(ctx).items() if v.split(".", 1)[0] in _TORCH}
    return found


def _star_names(ctx: Context) -> dict[str, str]:
    """:func:`star_names`, NumPy's names included."""
    found = ctx._cache.get("starnames")
    if found is None:
        found = {}
        if ctx.project.files and any(n.names[0].name == "*" for n in ctx.nodes.get(ast.ImportFrom, ())):
            for _, path, _ in star_imported_files(ctx):
                for name, q in _exports(ctx.project, path, _DEPTH, frozenset({ctx.path})).items():
                    found.setdefault(name, q)
            for name in list(found):
                if name in ctx.imports:
                    del found[name]
        ctx._cache["starnames"] = found
    return found


def star_qualname(ctx: Context, node: AST | None, numpy: bool = False) -> str | None:
    """Like ``ctx.qualname``, also for a chain rooted at a star-imported name that nothing in the
    file binds where it is used (``F.tanh`` with ``F`` from ``from deep_rl import *``; with
    ``numpy``, also ``np.arange`` with ``np`` from such an import)."""
    q = ctx.qualname(node)
    if q is not None:
        return q
    parts: list[str] = []
    root = node
    while root is not None and root.__class__ is ast.Attribute:
        parts.append(root.attr)
        root = root.value
    if root is None or root.__class__ is not ast.Name:
        return None
    base = (_star_names(ctx) if numpy else star_names(ctx)).get(root.id)
    if base is None or ctx.binding_at(root.id, root) is not None:
        return None
    return canonical(".".join([base, *reversed(parts)]))


def _files(facts: ProjectFacts) -> dict[str, tuple[str, str]]:
    table = facts.answers.get("starnames:files")
    if table is None:
        table = {os.path.normpath(p): (p, t) for p, t in facts.files}
        facts.answers["starnames:files"] = table
    return table


def star_imported_files(ctx: Context, absolute: bool = False) -> Iterator[tuple[ast.ImportFrom, str, str]]:
    """``(statement, path, text)`` for each module-level ``from <module> import *`` of the file whose
    module is a file of the project (with ``absolute``, only ``from <name> import *``), in order."""
    for node in ctx.tree.body:
        if node.__class__ is not ast.ImportFrom or node.names[0].name != "*":
            continue
        if absolute and (node.level or not node.module):
            continue
        path = module_file(ctx.project, ctx.path, node.module, node.level)
        hit = _files(ctx.project).get(os.path.normpath(path)) if path is not None else None
        if hit is not None:
            yield node, hit[0], hit[1]


def module_file(facts: ProjectFacts, importer: str, module: str | None, level: int) -> str | None:
    """The path (as the project lists it) of the module ``from <module> import`` names in the file
    ``importer``: relative to it, or for an absolute name, in its folder or a folder above it."""
    parts = module.split(".") if module else []
    if not level and (not parts or parts[0] in _PACKAGES):
        return None
    table = _files(facts)
    base = os.path.dirname(os.path.normpath(importer))
    bases = []
    if level:
        for _ in range(level - 1):
            base = os.path.dirname(base)
        bases.append(base)
    else:
        for _ in range(4):
            bases.append(base)
            if not base or base == os.path.dirname(base):
                break
            base = os.path.dirname(base)
    for b in bases:
        stem = os.path.join(b, *parts) if parts else b
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            hit = table.get(os.path.normpath(candidate))
            if hit is not None:
                return hit[0]
    return None


def _exports(facts: ProjectFacts, path: str, depth: int, seen: frozenset[str]) -> dict[str, str]:
    """The torch names a star import of the module at ``path`` hands on."""
    key = ("starnames:exports", path)
    if key in facts.answers:
        return facts.answers[key]
    facts.answers[key] = {}  # a cycle of star imports ends here
    out: dict[str, str] = {}
    text = _files(facts).get(os.path.normpath(path), (path, ""))[1]
    other = parsed_file(facts, path, text) if depth > 0 and path not in seen else None
    if other is not None:
        public = None
        for node in other.tree.body:
            cls = node.__class__
            if cls is ast.Import:
                for a in node.names:
                    local = a.asname or a.name.split(".", 1)[0]
                    q = a.name if a.asname else local
                    _keep(out, local, q)
            elif cls is ast.ImportFrom and node.names[0].name == "*":
                target = module_file(facts, path, node.module, node.level)
                if target is not None:
                    for name, q in _exports(facts, target, depth - 1, seen | {path}).items():
                        out.setdefault(name, q)
            elif cls is ast.ImportFrom:
                for a in node.names:
                    local = a.asname or a.name
                    out.pop(local, None)
                    if not node.level and node.module:
                        _keep(out, local, f"{node.module}.{a.name}")
            elif cls in (ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                for name in _bound(node):
                    out.pop(name, None)
                    if name == "__all__":
                        public = _literal_names(node)
                alias = _torch_alias(other, node, out)
                if alias is not None:  # LongTensor = torch.LongTensor: a torch name under another name
                    out[alias[0]] = alias[1]
        if public is not None:
            out = {k: v for k, v in out.items() if k in public}
        out = {k: v for k, v in out.items() if not k.startswith("_")}
    facts.answers[key] = out
    return out


def _torch_alias(other: Context, node: AST, out: dict[str, str]) -> tuple[str, str] | None:
    """``LongTensor = torch.LongTensor`` (``tensor = torch.tensor``) at module level: the name and
    the torch name it stands for, through the module's own imports or those it star-imports."""
    if node.__class__ is not ast.Assign or len(node.targets) != 1 or node.targets[0].__class__ is not ast.Name \
            or node.value.__class__ not in (ast.Attribute, ast.Name):
        return None
    q = other.qualname(node.value)
    if q is None:
        parts: list[str] = []
        root = node.value
        while root.__class__ is ast.Attribute:
            parts.append(root.attr)
            root = root.value
        base = out.get(root.id) if root.__class__ is ast.Name else None
        q = ".".join([base, *reversed(parts)]) if base is not None else None
    if q is None or q.split(".", 1)[0] not in _PACKAGES:
        return None
    return node.targets[0].id, canonical(q)


def _keep(out: dict[str, str], local: str, q: str) -> None:
    if q.split(".", 1)[0] in _PACKAGES:
        out[local] = canonical(q)
    else:
        out.pop(local, None)


def _alias_of(ctx: Context, node: AST) -> tuple[str, str] | None:
    """``(name, dotted name)`` for a module-level alias of a torch function or class (``tensor =
    torch.tensor``, ``LongTensor = torch.LongTensor``)."""
    if node.__class__ is not ast.Assign or len(node.targets) != 1 or node.targets[0].__class__ is not ast.Name \
            or node.value.__class__ is not ast.Attribute:
        return None
    q = ctx.qualname(node.value)
    return (node.targets[0].id, q) if q is not None and q.split(".", 1)[0] in _PACKAGES else None


def alias_calls(ctx: Context, qualname: str) -> list[ast.Call]:
    """Calls of the torch function ``qualname`` through a module-level alias: one of this file
    (``tensor = torch.tensor``, then ``tensor(state)``) or one a star import of a project module
    hands on (``from utils import *`` where ``utils/torch.py`` has the alias)."""
    if "*" not in ctx.source and " = torch." not in ctx.source:
        return []
    names = {}
    for node in ctx.tree.body:
        alias = _alias_of(ctx, node)
        if alias is not None and canonical(alias[1]) == qualname:
            names[alias[0]] = node
    names.update((n, None) for n, q in star_names(ctx).items() if q == qualname and n not in names)
    out = []
    for name, node in names.items():
        for call in ctx.calls_named(name):
            if call.func.__class__ is ast.Name:
                b = ctx.binding_at(name, call)
                if (b.node is node) if b is not None else node is None:
                    out.append(call)
    return out


def _bound(node: AST) -> list[str]:
    if node.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        return [node.name]
    targets = node.targets if node.__class__ is ast.Assign else [node.target]
    return [n.id for t in targets for n in ast.walk(t) if n.__class__ is ast.Name]


def _literal_names(node: AST) -> frozenset[str]:
    value = getattr(node, "value", None)
    if value.__class__ in (ast.List, ast.Tuple):
        return frozenset(e.value for e in value.elts if e.__class__ is ast.Constant and isinstance(e.value, str))
    return frozenset()
