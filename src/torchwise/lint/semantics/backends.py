"""Backend settings: assignments to ``torch.backends.cudnn`` flags."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context


def cudnn_flag_assignments(ctx: Context, flag: str) -> list[ast.Assign]:
    """``torch.backends.cudnn.<flag> = True`` statements (any import alias of cudnn)."""
    out = []
    for node in ctx.nodes.get(ast.Assign, ()):
        if node.value.__class__ is not ast.Constant or node.value.value is not True:
            continue
        for t in node.targets:
            if t.__class__ is ast.Attribute and t.attr == flag:
                q = ctx.qualname(t)
                if q == f"torch.backends.cudnn.{flag}":
                    out.append(node)
    out.sort(key=lambda n: (n.lineno, n.col_offset))
    return out
