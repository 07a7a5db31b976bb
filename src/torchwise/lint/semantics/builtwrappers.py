"""Wrappers a builder method returns (TW201): ``def load_model(self): ... return
nn.DataParallel(Extractor(model), ...)`` stored by its class as ``self.model = self.load_model()``
- the wrapper is known by the attribute it is stored under, and every use of that attribute in
the class tells whether it trains (``self.model(x)`` only under ``torch.inference_mode()``: a
metric's feature extractor)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.autograd import under_no_grad

# a statement that only places or freezes the stored wrapper (`self.model.eval()`)
_PLACING = frozenset({"to", "cuda", "eval", "half", "float", "requires_grad_"})


def _stored_as(ctx: Context, call: ast.Call) -> tuple[ast.ClassDef, list[str]] | None:
    """The class and the ``self`` attributes that store what the method around ``call`` returns,
    when ``call`` is returned as it is (``return DataParallel(...)``) by a method of a class."""
    if ctx.parent(call).__class__ is not ast.Return:
        return None
    func = ctx.function_of(call)
    cls = ctx.class_of(call)
    if func is None or cls is None or ctx.parent(func) is not cls:
        return None
    attrs = []
    for node in ctx.walk_body(cls.body, into_defs=True):
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr == func.name \
                and node.func.value.__class__ is ast.Name and node.func.value.id == "self":
            stmt = ctx.parent(node)
            if stmt.__class__ is not ast.Assign or len(stmt.targets) != 1:
                return None  # returned to some other use: unknown
            t = stmt.targets[0]
            if not (t.__class__ is ast.Attribute and t.value.__class__ is ast.Name and t.value.id == "self"):
                return None
            attrs.append(t.attr)
    return (cls, attrs) if attrs else None


def returned_for_inference(ctx: Context, call: ast.Call) -> bool:
    """``call`` (a wrapper) is returned by a method of a class that stores it under ``self.X``, and
    every use of ``self.X`` in the class is a call under ``torch.no_grad()``/``inference_mode()``
    (or a statement that moves or freezes it): the wrapped network only runs inference. Any other
    use (``self.X.parameters()`` for an optimizer, a call with autograd on, handing it out) keeps
    it a training wrapper."""
    found = _stored_as(ctx, call)
    if found is None:
        return False
    cls, attrs = found
    runs = 0
    for node in ctx.walk_body(cls.body, into_defs=True):
        if not (node.__class__ is ast.Attribute and node.attr in attrs and node.value.__class__ is ast.Name
                and node.value.id == "self" and node.ctx.__class__ is ast.Load):
            continue
        parent = ctx.parent(node)
        if parent.__class__ is ast.Call and parent.func is node:
            if not under_no_grad(ctx, node):
                return False
            runs += 1
            continue
        if parent.__class__ is ast.Attribute and parent.attr in _PLACING and ctx.parent(parent).__class__ is ast.Call \
                and ctx.parent(ctx.parent(parent)).__class__ is ast.Expr:
            continue
        return False
    return runs > 0
