"""DataParallel wrappers whose network only runs inference (TW201): put in eval mode or frozen
(``requires_grad_(False)``, ``p.requires_grad = False`` over its parameters), also through a move
or an index (``model.cuda().eval()``, ``scores[i].eval()``), never back in training and in no
optimizer - no gradients for DistributedDataParallel to gather."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name


def names_of(ctx: Context, call: ast.Call) -> set[str]:
    """The wrapped module and what the wrapper is stored under, as written (``net``, ``self.inception``)."""
    names = set()
    first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "module"), None)
    node: ast.AST = call
    while ctx.parent(node).__class__ is ast.Attribute and ctx.parent(ctx.parent(node)).__class__ is ast.Call:
        node = ctx.parent(ctx.parent(node))  # DataParallel(net).eval().cuda()
    parent = ctx.parent(node)
    if parent.__class__ is ast.ListComp and parent.elt is node:
        parent = ctx.parent(parent)  # scores = [DataParallel(s) for s in scores]: used as scores[i]
    targets = parent.targets if parent.__class__ is ast.Assign else [parent.target] if parent.__class__ is ast.AnnAssign else []
    for t in [*targets, first]:
        inner = t
        while inner is not None and inner.__class__ is ast.Call and inner.func.__class__ is ast.Attribute:
            inner = inner.func.value  # DataParallel(net.eval()): the module is net
        if inner is not None and inner.__class__ in (ast.Name, ast.Attribute):
            names.add(ctx.text(inner))
    return names


_MOVES = frozenset({"cuda", "to", "cpu", "float", "half"})


def receiver(node: ast.AST) -> ast.AST:
    """The module a mode call acts on, past moves and indexing: ``model.cuda().eval()`` and
    ``scores[i].eval()`` act on ``model`` and ``scores``."""
    while True:
        if node.__class__ is ast.Subscript:
            node = node.value
        elif node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in _MOVES:
            node = node.func.value
        else:
            return node


def _is_false(node: ast.AST) -> bool:
    return node.__class__ is ast.Constant and node.value is False


def mode_call(c: ast.Call) -> str | None:
    """``"frozen"`` for ``eval()``, ``train(False)``, ``requires_grad_(False)``; ``"trains"`` for
    ``train()``, ``requires_grad_()``; else None."""
    attr = c.func.attr if c.func.__class__ is ast.Attribute else None
    if attr == "eval":
        return "frozen"
    if attr in ("train", "requires_grad_"):
        return "frozen" if c.args and _is_false(c.args[0]) else "trains"
    return None


def frozen_inference_only(ctx: Context, call: ast.Call) -> bool:
    """The wrapped network only runs inference: it is put in eval mode or its parameters stop
    requiring grad, it is never put back into training mode, and no optimizer gets its
    parameters (a metric's feature extractor, a frozen teacher)."""
    names = names_of(ctx, call)
    if not names:
        return False
    modes = [mode_call(a) for a in ctx.ancestors(call) if a.__class__ is ast.Call and ctx.contains(a.func, call)]
    if call.args and call.args[0].__class__ is ast.Call:
        modes.append(mode_call(call.args[0]))  # DataParallel(FAN(...).eval()): frozen before it is wrapped
    scope = ctx.scope_of(call)
    for c in ctx.calls_named("eval", "train", "requires_grad_", "parameters"):
        if c.func.__class__ is not ast.Attribute or ctx.text(receiver(c.func.value)) not in names:
            continue
        if receiver(c.func.value).__class__ is ast.Name and ctx.scope_of(c) is not scope and mode_call(c) == "frozen":
            continue  # another function's local of that name (`model.eval()` in predict(), beside the builder)
        if c.func.attr == "parameters":
            if any(a.__class__ is ast.Call and "optim" in (ctx.qualname(a.func) or last_name(a.func) or "").lower()
                   for a in ctx.ancestors(c)):
                return False  # optimizer = SGD(net.parameters()): it trains
            continue
        modes.append(mode_call(c))
    for a in ctx.nodes.get(ast.Assign, ()):
        t = a.targets[0]
        if t.__class__ is ast.Attribute and t.attr == "requires_grad" and _is_false(a.value):
            loops = ctx.enclosing_loops(a)
            if loops and loops[0].__class__ is not ast.While and any(
                n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and ctx.text(n.func.value) in names
                for n in ast.walk(loops[0].iter)
            ):
                modes.append("frozen")  # for p in net.parameters(): p.requires_grad = False
    return "frozen" in modes and "trains" not in modes


__all__ = ["frozen_inference_only", "mode_call", "names_of", "receiver"]
