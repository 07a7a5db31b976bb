"""Layers added one after the other to one container (TW209): ``cnn.add_module("conv1",
nn.Conv2d(...))`` then ``cnn.add_module("bn1", nn.BatchNorm2d(...))``, ``layers.append(...)``,
``layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU()]`` - also under ``if batch_norm:``, a flag of the
building helper that some call of it turns on. Yields the biased convolutions (or linear layers
before a ``BatchNorm1d``) that a BatchNorm of the same dimensionality follows."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument
from torchwise.lint.semantics.biaslayers import LAYER_DIMS, conv_with_bias
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.normlayers import bn_dims


def _matches(conv: int, bn: int) -> bool:
    return bn == 0 or conv == bn


def _added(ctx: Context, stmt: ast.AST) -> tuple[str, list[ast.AST]] | None:
    """Layers added to a container by one statement: ``container.add_module(name, layer)``,
    ``layers.append(layer)``, ``layers += [conv, bn, ...]`` or ``layers.extend([conv, bn, ...])`` -
    (the container as written, the layers)."""
    if stmt.__class__ is ast.AugAssign:
        if stmt.op.__class__ is ast.Add and stmt.value.__class__ in (ast.List, ast.Tuple) and stmt.value.elts:
            return ctx.text(stmt.target), list(stmt.value.elts)
        return None
    if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name \
            and stmt.value.__class__ is ast.List and stmt.value.elts:
        return stmt.targets[0].id, list(stmt.value.elts)  # layers = [nn.Linear(in_dim, hidden)], appended to next
    call = stmt.value if stmt.__class__ is ast.Expr else None
    if call is None or call.__class__ is not ast.Call or call.func.__class__ is not ast.Attribute:
        return None
    if call.func.attr == "add_module" and len(call.args) == 2:
        return ctx.text(call.func.value), [call.args[1]]
    if call.func.attr == "append" and len(call.args) == 1 and call.func.value.__class__ is ast.Name:
        return ctx.text(call.func.value), [call.args[0]]
    if call.func.attr == "extend" and len(call.args) == 1 and call.func.value.__class__ is ast.Name \
            and call.args[0].__class__ in (ast.List, ast.Tuple) and call.args[0].elts:
        return ctx.text(call.func.value), list(call.args[0].elts)  # layers.extend([conv, bn, relu])
    return None


def added_pairs(ctx: Context) -> Iterator[ast.AST]:
    """Biased convolutions added with ``cnn.add_module(...)`` (or appended to a list of layers,
    ``layers += [nn.Conv2d(...)]``) and followed, on the same container, by a BatchNorm added next
    - directly or under ``if batch_norm:``, a flag of the helper that some call of it turns on
    (``convRelu(2, True)``, ``make_layers(cfg, batch_norm=True)``)."""
    # the statement lists that add a layer somewhere (the else of `if nlayers == 1:` holds a list of
    # layers too), found from the file's index; each is read for every function around it
    blocks: dict[tuple[int, str], tuple[ast.AST, str]] = {}
    for kind in (ast.Expr, ast.AugAssign, ast.Assign):
        for stmt in ctx.nodes.get(kind, ()):
            field = getattr(stmt, "_tw_field", "")
            if field in ("body", "orelse") and _added(ctx, stmt) is not None:
                block = ctx.parent(stmt)
                blocks.setdefault((id(block), field), (block, field))
    for block, field in blocks.values():
        funcs = [block] if block.__class__ is ast.FunctionDef else \
            [a for a in ctx.ancestors(block) if a.__class__ is ast.FunctionDef]
        for func in funcs:
            yield from _block_pairs(ctx, func, getattr(block, field))


def _block_pairs(ctx: Context, func: ast.FunctionDef, body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The pairs of one statement list: a list of layers with the BatchNorm after a named
    convolution (:func:`_listed_pair`), or a convolution added and a BatchNorm added next."""
    for stmt in body:
        yield from _listed_pair(ctx, func, stmt)
    for stmt, nxt in zip(body, body[1:]):
        first = _added(ctx, stmt)
        if first is None:
            continue
        convs = _bound_convs(ctx, func, first[1][-1], stmt)
        dims = {conv_with_bias(ctx, c) for c in convs}
        d = dims.pop() if len(dims) == 1 else None
        if d is None:
            continue
        follow, flag = nxt, None
        if nxt.__class__ is ast.If and nxt.body:
            follow, flag = nxt.body[0], nxt.test
        second = _added(ctx, follow)
        b = bn_dims(ctx, second[1][0]) if second is not None and second[0] == first[0] \
            and second[1][0].__class__ is ast.Call else None
        if b is not None and _matches(d, b) and (flag is None or _flag_set(ctx, func, flag)):
            yield from convs


def _bound_convs(ctx: Context, func: ast.FunctionDef, layer: ast.AST, use: ast.AST) -> list[ast.AST]:
    """The layer a statement adds; for a name, every value the function binds it to before that
    statement (``conv = nn.Conv2d(c_in, c, 3)`` in the ``if index == 0:`` branch, ``conv =
    nn.Conv2d(c, c, 3)`` in its ``else``) when there is more than one."""
    if layer.__class__ is not ast.Name:
        return [layer]
    found = [b for b in ctx.bindings(func).get(layer.id, ()) if b.pos < (use.lineno, use.col_offset)]
    if not found or any(b.kind != "assign" for b in found):
        return [layer]
    return [b.value for b in found]


def _listed_pair(ctx: Context, func: ast.FunctionDef, stmt: ast.AST) -> Iterator[ast.AST]:
    """``layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]`` with ``conv2d =
    nn.Conv2d(...)`` just before (a VGG's ``make_layers``), or written in the list
    (``layers += [nn.Conv2d(c, v, 3, padding=1), nn.BatchNorm2d(v)]``), under ``if batch_norm:`` when some call
    turns that flag on: the convolution bound to the name, followed by the BatchNorm in one list."""
    if stmt.__class__ is not ast.AugAssign and stmt.__class__ is not ast.Expr:
        return
    added = _added(ctx, stmt)
    if added is None or len(added[1]) < 2:
        return
    for first, second in zip(added[1], added[1][1:]):
        if first.__class__ not in (ast.Name, ast.Call) or second.__class__ is not ast.Call:
            continue
        conv = ctx.resolve(first, stmt) if first.__class__ is ast.Name else first  # also written in the list
        d = conv_with_bias(ctx, conv) if conv is not None and (conv is not first or first.__class__ is ast.Call) else None
        b = bn_dims(ctx, second) if d is not None else None
        if b is not None and _matches(d, b) and all(_flag_set(ctx, func, test) for test in _flags_around(ctx, stmt)):
            yield conv


def _flags_around(ctx: Context, stmt: ast.AST) -> list[ast.AST]:
    """The tests of the ``if`` bodies ``stmt`` sits in within its function."""
    return [if_node.test for if_node, in_body in ctx.enclosing_ifs(stmt) if in_body and if_node.__class__ is ast.If]


def _flag_set(ctx: Context, func: ast.FunctionDef, flag: ast.AST) -> bool:
    """``flag`` is a parameter of ``func`` that is on by default or that some call of ``func`` in
    this file passes as a true constant; any other test may be on."""
    if flag.__class__ is not ast.Name:
        return True
    params = [a.arg for a in func.args.args]
    if flag.id not in params:
        return True
    index = params.index(flag.id)
    defaults = dict(zip(params[::-1], func.args.defaults[::-1]))
    default = defaults.get(flag.id)
    if default is None or not (default.__class__ is ast.Constant and not default.value):
        return True
    if ctx.parent(func).__class__ is ast.ClassDef:
        index -= 1  # self.conv_bn(..., True)
    sites = [(ctx, call) for call in ctx.calls_named(func.name)]
    klass = ctx.parent(func)
    if func.name == "__init__" and klass.__class__ is ast.ClassDef:  # DINOHead(dim, out, use_bn=args.use_bn_in_head)
        sites = [(ctx, call) for call in ctx.calls_named(klass.name)]
        if ctx.parent(klass) is ctx.tree and ctx.project.files:
            sites += list(project_calls(ctx, klass.name))
    for _, call in sites:
        value = argument(call, flag.id, index)
        if value is not None and not (value.__class__ is ast.Constant and not value.value):
            return True
    return False


def param_bias_pairs(ctx: Context, func: ast.FunctionDef) -> Iterator[tuple[ast.Call, str, str | None]]:
    """In a layer-building helper: a convolution (or ``nn.Linear``) whose bias is a parameter of
    the helper (``nn.Conv2d(..., bias=bias)``) added to a list of layers, and a BatchNorm of the same
    dimensionality added next to that list - directly, or under ``if bn:`` on another parameter:
    ``(the convolution, the bias parameter, the flag parameter or None)``."""
    params = [a.arg for a in func.args.args]
    for node in ast.walk(func):
        body = getattr(node, "body", None)
        if node is not func and node.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda) \
                or not isinstance(body, list):
            continue
        for block in (body, getattr(node, "orelse", [])):
            for stmt, nxt in zip(block, block[1:]):
                first = _added(ctx, stmt)
                convs = _bound_convs(ctx, func, first[1][-1], stmt) if first is not None else []
                conv = convs[0] if len(convs) == 1 and convs[0].__class__ is ast.Call else None
                dims = LAYER_DIMS.get(ctx.qualname(conv.func) or "") if conv is not None else None
                bias = argument(conv, "bias", 2 if dims and ctx.qualname(conv.func) == "torch.nn.Linear" else 7) \
                    if dims is not None else None
                if bias.__class__ is not ast.Name or bias.id not in params:
                    continue
                follow, flag = nxt, None
                if nxt.__class__ is ast.If and nxt.body and not nxt.orelse:
                    follow, flag = nxt.body[0], nxt.test
                    if flag.__class__ is not ast.Name or flag.id not in params:
                        continue
                second = _added(ctx, follow)
                b = bn_dims(ctx, second[1][0]) if second is not None and second[0] == first[0] \
                    and second[1][0].__class__ is ast.Call else None
                if b is not None and _matches(dims, b):
                    yield conv, bias.id, flag.id if flag is not None else None
