"""Text made from a tensor (TW207): ``'%.4f' % loss``, ``'loss {:.5f}'.format(loss)``,
``f"{loss:.3f}"``. Formatting a tensor calls its ``__format__``/``__float__``/``__repr__``, which read
its value on the host, wherever the text goes: a progress bar's description or postfix
(``pbar.set_postfix(loss='%.4f' % loss)``), a logger, a variable. Text handed straight to
``print()`` is :func:`.hostreads.printed_tensor`'s (not repeated here)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.devices import is_device_tensor
from torchwise.lint.semantics.losses import is_loss_value


def formatted_names(ctx: Context) -> Iterator[tuple[AST, AST, ast.Name, str]]:
    """``(text expression, where to report, name formatted into it, description)`` for each string
    formatting of a plain name (the caller asks whether the name holds a device value of the
    step); reported at the call the text is handed to (``pbar.set_postfix(loss='%.4f' % loss)``)."""
    for text, name in _formatted(ctx):
        if not (is_device_tensor(ctx, name, text) or is_loss_value(ctx, name, text)):
            continue  # (a number read before, a dict's key: only what is evidently a device tensor or a loss)
        sink = ctx.parent(text)
        sink = ctx.parent(sink) if sink.__class__ is ast.keyword else sink
        called = last_name(sink.func) if sink.__class__ is ast.Call else None
        yield (text, sink, name, f"{called}() of text formatted from a tensor") if called else \
            (text, text, name, "text formatted from a tensor")


def _formatted(ctx: Context) -> Iterator[tuple[AST, ast.Name]]:
    if "%" in ctx.source:
        for node in ctx.nodes.get(ast.BinOp, ()):
            if node.op.__class__ is ast.Mod and node.left.__class__ is ast.Constant and isinstance(node.left.value, str) \
                    and "%" in node.left.value and not _printed(ctx, node):
                parts = node.right.elts if node.right.__class__ is ast.Tuple else [node.right]
                yield from ((node, p) for p in parts if p.__class__ is ast.Name)
    if ".format(" in ctx.source:
        for call in ctx.calls_named("format"):
            func = call.func
            if func.__class__ is ast.Attribute and func.value.__class__ is ast.Constant and isinstance(func.value.value, str) \
                    and not _printed(ctx, call):
                values = [*call.args, *(k.value for k in call.keywords if k.arg is not None)]
                yield from ((call, v) for v in values if v.__class__ is ast.Name)
    for text in ctx.nodes.get(ast.JoinedStr, ()):
        if not _printed(ctx, text):
            yield from ((text, p.value) for p in text.values
                        if p.__class__ is ast.FormattedValue and p.value.__class__ is ast.Name)


def _printed(ctx: Context, node: AST) -> bool:
    """``print(<node>)``: the print's own read (:func:`.hostreads.printed_tensor`)."""
    parent = ctx.parent(node)
    return parent.__class__ is ast.Call and parent.func.__class__ is ast.Name and parent.func.id == "print"
