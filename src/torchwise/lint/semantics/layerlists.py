"""Layers between a convolution and the BatchNorm after it, as TW209 reads a module's forward.

- :func:`copied_layer`: ``self.convs = nn.ModuleList([nn.Conv1d(c, c, 5) for _ in range(3)])`` or
  ``clones(Conv(c, c, 5), 3)`` (a module-level helper of the file that returns an
  ``nn.ModuleList`` of copies of its first argument): a list of copies of one layer, that layer.
- :func:`zipped_source`: in ``for conv, bn in zip(self.convs, self.bns)`` (also under
  ``enumerate``), the list a loop variable is drawn from.
- :func:`see_through`: what a BatchNorm's argument is once steps that keep every channel's
  constant offset are set aside - a slice of the time or space axes (``conv(x)[:, :, :-4]``, a
  causal trim), ``.contiguous()``, and a method of the class that only returns its first
  parameter or a slice of it (``self._fit(conv(x), k)``).
- :func:`named_layers`: the layers of ``nn.Sequential(OrderedDict([(name, layer), ...]))``.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.values import local_function


def copied_layer(ctx: Context, value: ast.AST) -> ast.Call | None:
    """The one layer a ``ModuleList`` of copies is made of, else None."""
    if value.__class__ is not ast.Call or len(value.args) < 1:
        return None
    if ctx.qualname(value.func) == "torch.nn.ModuleList":
        comp = value.args[0]
        if comp.__class__ not in (ast.ListComp, ast.GeneratorExp):
            return None
        elt = comp.elt
        if elt.__class__ is ast.Call and ctx.qualname(elt.func) == "copy.deepcopy" and len(elt.args) == 1:
            elt = elt.args[0]
        return elt if elt.__class__ is ast.Call else None
    func = local_function(ctx, value) if value.func.__class__ is ast.Name else None
    if func is None or func.__class__ is not ast.FunctionDef or ctx.parent(func) is not ctx.tree:
        return None
    body = [b for b in func.body if not (b.__class__ is ast.Expr and b.value.__class__ is ast.Constant)]
    returned = body[-1].value if body and body[-1].__class__ is ast.Return else None
    if len(body) != 1 or returned.__class__ is not ast.Call or ctx.qualname(returned.func) != "torch.nn.ModuleList":
        return None
    first = value.args[0]
    return first if first.__class__ is ast.Call else None


def zipped_source(loop: ast.For, name: str) -> ast.AST | None:
    """The argument of ``zip(...)`` that the loop variable ``name`` takes its items from."""
    target, it = loop.target, loop.iter
    if it.__class__ is ast.Call and it.func.__class__ is ast.Name and it.func.id == "enumerate" and it.args \
            and target.__class__ is ast.Tuple and len(target.elts) == 2:
        target, it = target.elts[1], it.args[0]
    if not (it.__class__ is ast.Call and it.func.__class__ is ast.Name and it.func.id == "zip") \
            or target.__class__ is not ast.Tuple or len(target.elts) != len(it.args):
        return None
    for t, a in zip(target.elts, it.args):
        if t.__class__ is ast.Name and t.id == name:
            return a
    return None


def _slices_only(index: ast.AST) -> bool:
    items = index.elts if index.__class__ is ast.Tuple else [index]
    return any(i.__class__ is ast.Slice for i in items) and all(
        i.__class__ is ast.Slice or i.__class__ is ast.Constant and i.value is Ellipsis for i in items)


def _passes_through(func: ast.AST) -> bool:
    """A method whose every ``return`` gives back its first parameter or a slice of it."""
    params = [a.arg for a in func.args.args]
    if len(params) < 2 or params[0] != "self":
        return False
    first = params[1]
    returns = [n for n in ast.walk(func) if n.__class__ is ast.Return]
    if not returns:
        return False
    for r in returns:
        v = r.value
        if v.__class__ is ast.Subscript and _slices_only(v.slice):
            v = v.value
        if v.__class__ is not ast.Name or v.id != first:
            return False
    return not any(n.__class__ in (ast.Assign, ast.AugAssign) for n in ast.walk(func))


def see_through(ctx: Context, cls: ast.ClassDef, expr: ast.AST) -> ast.AST:
    """``expr`` with channel-preserving steps peeled off (see the module doc)."""
    for _ in range(6):
        if expr.__class__ is ast.Subscript and _slices_only(expr.slice):
            expr = expr.value
        elif expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr == "contiguous" \
                and not expr.args:
            expr = expr.func.value
        elif expr.__class__ is ast.Call and expr.args and expr.func.__class__ is ast.Attribute \
                and expr.func.value.__class__ is ast.Name and expr.func.value.id == "self":
            method = next((m for m in cls.body if m.__class__ is ast.FunctionDef and m.name == expr.func.attr), None)
            if method is None or not _passes_through(method):
                return expr
            expr = expr.args[0]
        else:
            return expr
    return expr


def named_layers(ctx: Context, seq: ast.Call) -> list[list[ast.AST]]:
    """``nn.Sequential(OrderedDict([("fc1", nn.Linear(a, b)), ("bn1", nn.BatchNorm1d(b)), ...]))``:
    the layers of the named pairs, in order."""
    if len(seq.args) != 1 or seq.args[0].__class__ is not ast.Call or seq.keywords:
        return []
    od = seq.args[0]
    if len(od.args) != 1 or od.args[0].__class__ not in (ast.List, ast.Tuple) \
            or ctx.qualname(od.func) != "collections.OrderedDict":
        return []
    pairs = od.args[0].elts
    if not all(p.__class__ is ast.Tuple and len(p.elts) == 2 for p in pairs):
        return []
    return [[p.elts[1]] for p in pairs]


def bound_layer(ctx: Context, item: ast.AST, seq: ast.Call) -> ast.AST:
    """An item of ``nn.Sequential(conv_mod, nn.BatchNorm2d(c))`` that names a layer the same function
    built just before (``conv_mod = nn.Conv2d(..., bias=bias)``): that construction, else the item."""
    if item.__class__ is not ast.Name:
        return item
    b = ctx.binding_at(item.id, seq)
    if b is None or b.kind != "assign" or b.value.__class__ is not ast.Call or ctx.function_of(b.node) is not ctx.function_of(seq):
        return item
    return b.value
