"""Loaders of parsed text records with a collate function that makes no tensor: the dataset's
``__getitem__`` hands back fields of a record parsed from JSON (``json.loads(f.read())``, directly
or through ``super().__getitem__(i)`` of a base class that does), and the loader's own
``collate_fn`` (a function of the file, a nested ``def``, or one of another module of the project)
regroups them without naming a tensor (``sources, targets = unzip(batch)``, filtering, tokenizing
with ``str.split``). Its batches are lists of strings and numbers: ``pin_memory`` pins tensors
only, there is nothing to pin (the consumer builds its tensors later). Without a ``collate_fn`` the
default collate would turn numbers into tensors: such loaders are not claimed."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, argument, last_name
from torchwise.lint.semantics.collates import collate_names_no_tensor, top_class

_JSON = frozenset({"json.load", "json.loads"})


def text_record_loader(ctx: Context, loader: ast.Call) -> bool:
    """Is ``loader`` a loader of JSON records regrouped by a tensor-free ``collate_fn`` (module doc)?"""
    if "json" not in ctx.source and not any("json" in t for _, t in ctx.project.files):
        return False
    if not any(k.arg == "collate_fn" for k in loader.keywords):
        return False
    dataset = argument(loader, "dataset", 0)
    if dataset.__class__ is ast.Name:
        dataset = ctx.resolve(dataset, loader)
    if dataset.__class__ is not ast.Call or last_name(dataset.func) is None:
        return False
    found = top_class(ctx, last_name(dataset.func))
    if found is None or not _record_getitem(*found, depth=2):
        return False
    return collate_names_no_tensor(ctx, loader)


def _record_getitem(ctx: Context, klass: ast.ClassDef, depth: int) -> bool:
    """Does every ``return`` of the class's ``__getitem__`` hand back fields of a parsed JSON record?"""
    getitem = next((f for f in klass.body if f.__class__ is ast.FunctionDef and f.name == "__getitem__"), None)
    if getitem is None:
        return False
    returns = [n.value for n in ctx.walk_body(getitem.body) if n.__class__ is ast.Return]
    return bool(returns) and all(v is not None and _from_record(ctx, klass, v, depth, 8) for v in returns)


def _from_record(ctx: Context, klass: ast.ClassDef, value: AST, depth: int, steps: int) -> bool:
    """Is ``value`` (a part of) a parsed JSON record: the record itself, a field or slice of it, a
    tuple of such, a list comprehension whose element is one?"""
    if steps <= 0:
        return False
    if value.__class__ in (ast.Tuple, ast.List):
        return bool(value.elts) and all(_from_record(ctx, klass, e, depth, steps - 1) for e in value.elts)
    if value.__class__ is ast.Subscript:
        return _from_record(ctx, klass, value.value, depth, steps - 1)
    if value.__class__ is ast.ListComp:
        return _from_record(ctx, klass, value.elt, depth, steps - 1)
    if value.__class__ is ast.Call:
        if (ctx.qualname(value.func) or "") in _JSON:
            return True
        f = value.func  # super().__getitem__(i): the base class's record
        if f.__class__ is ast.Attribute and f.attr == "__getitem__" and f.value.__class__ is ast.Call \
                and last_name(f.value.func) == "super" and depth > 0 and len(klass.bases) == 1:
            base = top_class(ctx, last_name(klass.bases[0]) or "")
            return base is not None and _record_getitem(*base, depth=depth - 1)
        return False
    if value.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(value.id, value)
    if b is None:
        return False
    if b.kind == "for" and b.node.__class__ is ast.comprehension:
        return _from_record(ctx, klass, b.value, depth, steps - 1)  # [art_sents[i] for i in extracts]
    held = b.value
    if b.kind == "unpack" and held is not None and held.__class__ in (ast.Tuple, ast.List) and 0 <= b.index < len(held.elts):
        held = held.elts[b.index]
    elif b.kind == "unpack":
        return False
    if b.kind not in ("assign", "unpack") or held is None:
        return False
    return _from_record(ctx, klass, held, depth, steps - 1)
