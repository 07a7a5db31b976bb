"""``.cuda()`` calls that need no GPU (for TW403): ``Module.cuda()`` of a built-in loss that holds no
tensor (``nn.MSELoss().cuda()`` moves nothing and runs on any machine; ``nn.CrossEntropyLoss(weight=w)``
holds its weight as a buffer, so its move does need CUDA), and a call of the project's own method
named ``cuda`` that moves to a configured device (``def cuda(self, *args): return (x.to(self.config.DEVICE)
for x in args)``)."""

from __future__ import annotations

import ast
from typing import Iterable, Iterator

from torchwise.lint.engine import AST, Context

# built-in losses that take a weight (a buffer) as their first argument or as weight=/pos_weight=
_WEIGHTED = frozenset({"CrossEntropyLoss", "NLLLoss", "NLLLoss2d", "BCELoss", "BCEWithLogitsLoss", "MultiLabelSoftMarginLoss",
                       "MultiMarginLoss"})
# built-in modules named *Loss that hold parameters
_WITH_PARAMETERS = frozenset({"AdaptiveLogSoftmaxWithLoss"})


def harmless_cuda(ctx: Context, call: ast.Call) -> bool:
    """``call`` is a ``.cuda()`` that needs no GPU: of a built-in loss holding no tensor, or of the
    project's own ``cuda`` method that moves to a device it is configured with."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.attr != "cuda":
        return False
    return _stateless_loss(ctx, func.value, call) or _own_device_method(ctx, func.value, call)


def _stateless_loss(ctx: Context, recv: AST, use: ast.Call) -> bool:
    built = recv
    if built.__class__ is ast.Name:
        built = ctx.resolve(built, use)
    elif built.__class__ is ast.Attribute and built.value.__class__ is ast.Name and built.value.id == "self":
        built = ctx.single_self_value(built, use)
    if built is None or built.__class__ is not ast.Call:
        return False
    q = ctx.qualname(built.func) or ""
    name = q.rsplit(".", 1)[-1]
    if not q.startswith("torch.nn.") or not name.endswith("Loss") or name in _WITH_PARAMETERS:
        return False
    if any(k.arg in ("weight", "pos_weight", None) for k in built.keywords) or any(a.__class__ is ast.Starred for a in built.args):
        return False  # a weight tensor (a buffer the move takes to the GPU), or arguments unseen
    return not (name in _WEIGHTED and built.args)


def _own_device_method(ctx: Context, recv: AST, use: ast.Call) -> bool:
    """``self.cuda(*items)`` (or ``obj.cuda(...)`` of a class of this file) where the class defines
    ``cuda`` itself and its body names no CUDA: it moves to the device the object is configured
    with."""
    cls = None
    if recv.__class__ is ast.Name and recv.id == "self":
        cls = ctx.class_of(use)
    else:
        built = ctx.constructed_from(recv, use)
        if built is not None and built.startswith("local:"):
            cls = ctx.local_classes.get(built[6:])
    seen = 0
    while cls is not None and seen < 6:
        seen += 1
        for item in cls.body:
            if item.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and item.name == "cuda":
                text = ctx.text(item)
                return ".to(" in text and ".cuda(" not in text and "'cuda" not in text and '"cuda' not in text
        bases = [b.id for b in cls.bases if b.__class__ is ast.Name]
        cls = ctx.local_classes.get(bases[0]) if bases else None
    return False


def cpu_alternative(expr: AST) -> bool:
    """``X if cond else "cpu"`` (or ``"cpu" if cond else X``): a device chosen, the CPU one branch."""
    return expr.__class__ is ast.IfExp and any(b.__class__ is ast.Constant and b.value == "cpu" for b in (expr.body, expr.orelse))


def cuda_contexts_beside_choice(ctx: Context, choices: Iterable[ast.Call]) -> Iterator[ast.Call]:
    """``with torch.cuda.device(self.gpuid[0]):`` in a method of a class whose methods choose the
    device with a CPU branch (``self.device = torch.device("cpu")`` in ``__init__``): entering it
    needs a GPU, so the CPU branch the class offers fails there."""
    classes = {id(c): c for c in (ctx.class_of(call) for call in choices) if c is not None}
    if not classes or "cuda.device(" not in ctx.source:
        return
    for node in ctx.nodes.get(ast.With, ()):
        for item in node.items:
            call = item.context_expr
            if call.__class__ is ast.Call and ctx.qualname(call.func) == "torch.cuda.device" and id(ctx.class_of(node)) in classes:
                yield call
