"""Generators that hand on a loader's batches (for TW203): ``for item in loader: yield item``,
also as a method of a dataset class (``create_iterator``) whose batches the model takes with
``next(...)``."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name


def streams(node: ast.AST, names: set[str]) -> bool:
    """``for item in loader: yield item``: a generator handing on the loader's batches."""
    if node.__class__ is not ast.For or node.iter.__class__ is not ast.Name or node.iter.id not in names \
            or node.target.__class__ is not ast.Name:
        return False
    return any(s.__class__ is ast.Expr and s.value.__class__ is ast.Yield and s.value.value.__class__ is ast.Name
               and s.value.value.id == node.target.id for s in node.body)


def streaming_method(ctx: Context, func: ast.AST, call: ast.Call) -> bool:
    """A method of a dataset class that yields its loader's batches one by one (``def
    create_iterator(self, batch_size): while True: loader = DataLoader(self, ...); for item in
    loader: yield item``): the model's code takes them with ``next(...)``, no framework hook."""
    klass = ctx.parent(func)
    if klass.__class__ is not ast.ClassDef or not any((last_name(b) or "").endswith("Dataset") for b in klass.bases):
        return False
    parent = ctx.parent(call)
    names = {t.id for t in getattr(parent, "targets", ()) if t.__class__ is ast.Name}
    return any(streams(node, names) for node in ctx.walk_body(func.body))
