"""Example inputs (TW205): a tensor made to trace or draw a model once - inside ``torch.jit.trace(...)``,
``torch.onnx``/``torch.fx``, or handed to ``writer.add_graph(...)``/``summary(...)``."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name

# calls whose argument is an example input, used once (to trace or draw the graph)
_EXAMPLE_TAKERS = frozenset({"add_graph", "trace", "summary", "export", "profile"})


def example_input(ctx: Context, node: ast.AST) -> bool:
    """An example input: inside ``torch.jit.trace(...)``/``torch.onnx``/``torch.fx`` (where the
    move is recorded), or an argument of ``writer.add_graph(...)``, ``summary(...)``: made once."""
    for anc in ctx.ancestors(node):
        if anc.__class__ is ast.Call:
            if (ctx.qualname(anc.func) or "").startswith(("torch.jit.", "torch.onnx.", "torch.fx.")):
                return True
            if last_name(anc.func) in _EXAMPLE_TAKERS:
                return True
    return False
