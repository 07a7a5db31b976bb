"""Where a copied value of TW204 comes from, beside a loop over a loader: the value without the
conversions applied before the copy, a batch read with ``next(iterator)`` (iteration-based
training), and the element a lambda sees when it is mapped over a batch structure
(``map_structure(batch, lambda x: x.to(device))``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name

_CONVERSIONS = frozenset({"float", "double", "half", "long", "int", "bool", "contiguous", "squeeze", "unsqueeze",
                          "view", "reshape", "permute", "clone", "type"})


def unconverted(expr: ast.AST) -> ast.AST:
    """``expr`` without an index or conversions applied before the copy (``images.float()``, ``batch[0]``)."""
    while True:
        if expr.__class__ is ast.Subscript:
            expr = expr.value
        elif expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in _CONVERSIONS:
            expr = expr.func.value
        elif expr.__class__ is ast.Call and last_name(expr.func) == "Variable" and len(expr.args) == 1:
            expr = expr.args[0]  # the pre-0.4 autograd wrapper: Variable(x).cuda()
        else:
            return expr


_ITERATORS = frozenset({"iter", "enumerate"})


def next_source(ctx: Context, expr: ast.AST, use: ast.AST, depth: int = 4) -> ast.AST | None:
    """The loader that ``expr`` was taken from with ``next(...)``: ``images, targets =
    next(batch_iterator)`` (or ``batch_iterator.next()``) where ``batch_iterator = iter(data_loader)``, also through a
    conversion or an element of the batch (``[ann.cuda() for ann in targets]``)."""
    expr = unconverted(expr)
    if expr.__class__ is ast.Call and (last_name(expr.func) == "next" and len(expr.args) == 1 or (
            not expr.args and expr.func.__class__ is ast.Attribute and expr.func.attr in ("__next__", "next"))):
        it = expr.args[0] if expr.args else expr.func.value  # next(it) / it.__next__() / it.next() (old loader iterators)
        if it.__class__ is ast.Call and last_name(it.func) in _ITERATORS and it.args:
            return it.args[0]
        if it.__class__ is ast.Subscript and it.value.__class__ is ast.Name:
            return stored_iterator(ctx, it.value.id, use)  # next(loaders_previous[context_id])
        if it.__class__ is ast.Name:
            b = ctx.binding_at(it.id, use)
            values = [b.value] if b is not None and b.kind == "assign" else [
                n.value for n in ctx.nodes.get(ast.Assign, ()) if b is None and len(n.targets) == 1
                and n.targets[0].__class__ is ast.Name and n.targets[0].id == it.id
                and ctx.function_of(n) is ctx.function_of(use)]  # bound later in the loop: `except StopIteration: it = iter(...)`
            for value in values:  # it = iter(loader) / it = enumerate(loader)
                if value is not None and value.__class__ is ast.Call and last_name(value.func) in _ITERATORS and value.args:
                    return value.args[0]
        return None
    if expr.__class__ is not ast.Name or depth <= 0:
        return None
    b = ctx.binding_at(expr.id, use)
    if b is None or b.value is None:
        return None
    value = b.value
    if b.kind == "unpack" and value.__class__ in (ast.Tuple, ast.List) and 0 <= b.index < len(value.elts):
        value = value.elts[b.index]
    if b.kind == "for" and b.node.__class__ is ast.comprehension:
        return next_source(ctx, b.value, b.node.iter, depth - 1)
    return next_source(ctx, value, b.node, depth - 1) if b.kind in ("assign", "unpack") else None


def stored_iterator(ctx: Context, name: str, use: ast.AST) -> ast.AST | None:
    """The loader behind ``next(iterators[i])``: every item stored into ``iterators`` in the
    function (``iterators[i] = iter(get_data_loader(...))``) is an iterator over a loader; the
    first one's loader stands for them (None when some item is something else)."""
    func = ctx.function_of(use)
    found = None
    for node in ctx.nodes.get(ast.Assign, ()):
        target = node.targets[0]
        if len(node.targets) != 1 or target.__class__ is not ast.Subscript or target.value.__class__ is not ast.Name \
                or target.value.id != name or ctx.function_of(node) is not func:
            continue
        value = node.value
        if value.__class__ is not ast.Call or last_name(value.func) not in _ITERATORS or not value.args:
            return None
        found = found or value.args[0]
    return found


def mapped_structures(ctx: Context, name: ast.Name) -> list[ast.AST]:
    """``x`` is the one parameter of a lambda handed to a call beside the structure it is mapped
    over (``map_structure(batch, lambda x: x.to(device))``, ``tree_map(lambda t: t.cuda(), batch)``):
    the call's other arguments, else empty."""
    b = ctx.binding_at(name.id, name)
    if b is None or b.kind != "param":
        return []
    lam = ctx.parent(ctx.parent(b.node))
    if lam.__class__ is not ast.Lambda or len(lam.args.args) != 1 or lam.args.vararg or lam.args.kwarg:
        return []
    call = ctx.parent(lam)
    if call.__class__ is not ast.Call or lam not in call.args:
        return []
    return [a for a in call.args if a is not lam and a.__class__ in (ast.Name, ast.Subscript, ast.Attribute)]


def runs_once(loop: ast.AST) -> bool:
    """A loop whose body ends every pass with ``break`` (or ``return``) at its own level takes one
    batch: an evaluation that copies a single sample batch for a figure. One blocking copy is no
    pipeline to overlap."""
    return any(s.__class__ in (ast.Break, ast.Return) for s in getattr(loop, "body", ()))


def items_of(b) -> ast.AST | None:
    """For the value of ``for key, value in batch.items()`` (or ``for value in batch.values()``):
    ``batch``, the dict the loop walks; else None."""
    it = b.value
    if b.node.__class__ not in (ast.For, ast.comprehension) or it.__class__ is not ast.Call or it.args \
            or it.func.__class__ is not ast.Attribute:
        return None
    if it.func.attr == "items" and b.index == 1 or it.func.attr == "values" and b.index == -1:
        return it.func.value
    return None
