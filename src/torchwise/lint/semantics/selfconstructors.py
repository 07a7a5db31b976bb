"""A legacy tensor constructor kept on an object (TW513): ``self.Tensor = torch.cuda.FloatTensor if
self.gpu_ids else torch.Tensor`` in a base model class, then ``self.input_A = self.Tensor(n, c, h, w)``
or ``self.LR = self.Tensor()`` in a subclass that another module of the project defines (the old
pix2pix/CycleGAN model family, SR solvers). Every value the class, or the project base class that
assigns it, gives the attribute must be such a constructor (either branch of a conditional)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.factorynames import TYPED_PREFIXES
from torchwise.lint.semantics.projectclasses import inherited_classes

_CONSTRUCTORS = frozenset({"torch.Tensor", *(f"torch.{t}Tensor" for t in TYPED_PREFIXES),
                           *(f"torch.cuda.{t}Tensor" for t in TYPED_PREFIXES)})


def self_alias(ctx: Context, call: ast.Call) -> str | None:
    """The constructor ``self.<attr>(...)`` stands for (a typed one first), or None."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.value.__class__ is not ast.Name or func.value.id != "self":
        return None
    method = ctx.function_of(call)
    while method is not None and ctx.parent(method).__class__ is not ast.ClassDef:
        if any(a.arg == "self" for a in getattr(method, "args", ast.arguments(args=[])).args):
            return None  # a nested function with a `self` of its own
        method = ctx.function_of(method)  # (`def _transform(v, op): ... self.Tensor(tfnp)` inside a method)
    cls = ctx.parent(method) if method is not None else None
    if cls is None:
        return None
    for other, klass in [(ctx, cls), *inherited_classes(ctx, cls)]:
        values = other.self_attr_values(klass, func.attr)
        if values:
            return _constructor(other, values)
    return None


def _constructor(ctx: Context, values: list[ast.AST]) -> str | None:
    found = []
    for value in values:
        options = [value.body, value.orelse] if value.__class__ is ast.IfExp else [value]
        names = [ctx.qualname(o) for o in options]
        if not all(n in _CONSTRUCTORS for n in names):
            return None  # (`self.Tensor = tensor`, a parameter: whatever the caller hands)
        found += names
    typed = [n for n in found if n != "torch.Tensor"]
    return (typed or found)[0]


__all__ = ["self_alias"]
