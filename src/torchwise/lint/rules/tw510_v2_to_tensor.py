"""TW510: ``torchvision.transforms.v2.ToTensor``, deprecated."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, canonical
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule

_NAME = "torchvision.transforms.v2.ToTensor"


class V2ToTensor(Rule):
    code = "TW510"
    name = "v2-to-tensor"
    triggers = ("v2",)
    doc = """\
What it flags
  Use or import of `ToTensor` from `torchvision.transforms.v2`.

Why it matters
  In the v2 transforms `ToTensor` is deprecated: it mixes two steps (convert to a tensor
  image, rescale to [0, 1] floats) that v2 keeps apart, and it will be removed.

Example
  from torchvision.transforms.v2 import ToTensor      # TW510

Fix
  `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for node in ctx.nodes.get(ast.ImportFrom, ()):
            if node.module and not node.level:
                for alias in node.names:
                    if canonical(f"{node.module}.{alias.name}") == _NAME:
                        yield self._finding(ctx, alias if hasattr(alias, "lineno") else node)
        for node in ctx.nodes.get(ast.Attribute, ()):
            if node.attr == "ToTensor" and ctx.qualname(node) == _NAME:
                yield self._finding(ctx, node)

    def _finding(self, ctx: Context, node: ast.AST) -> Finding:
        return ctx.finding(self.code, node, "transforms.v2.ToTensor is deprecated; use v2.ToImage() and v2.ToDtype(torch.float32, scale=True)",
                           suggestion="v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])")


RULE = V2ToTensor()
