"""Backend settings: assignments to ``torch.backends.cudnn`` flags."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context


def _switched_on(value: ast.AST, literal_only: bool) -> bool:
    if value.__class__ is ast.Constant:
        return value.value is True
    # cudnn.deterministic = args.torch_deterministic: on whenever the option is (often by default)
    return not literal_only


def cudnn_flag_assignments(ctx: Context, flag: str, literal_only: bool = True) -> list[ast.Assign]:
    """``torch.backends.cudnn.<flag> = True`` statements (any import alias of cudnn); with
    ``literal_only=False`` also those that assign an option or expression (``= args.deterministic``),
    which turn the flag on whenever the option is on."""
    out = []
    for node in ctx.nodes.get(ast.Assign, ()):
        if not _switched_on(node.value, literal_only):
            continue
        for t in node.targets:
            if t.__class__ is ast.Attribute and t.attr == flag:
                q = ctx.qualname(t)
                if q == f"torch.backends.cudnn.{flag}":
                    out.append(node)
    out.sort(key=lambda n: (n.lineno, n.col_offset))
    return out
