"""TW503: ``x.require_grad = ...``, a typo for ``requires_grad``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule


class RequireGradTypo(Rule):
    code = "TW503"
    name = "require-grad-typo"
    triggers = ("require_grad", "requires_grad_")
    fixable = False  # its only fix may change behaviour: offered with --unsafe-fixes
    doc = """\
What it flags
  An assignment to an attribute named `require_grad` (`p.require_grad = False`), and one to the
  method name `requires_grad_` (`model.requires_grad_ = False`), which replaces the method with a
  bool and freezes nothing either.

Why it matters
  Tensors and parameters have `requires_grad`. Python happily creates a new, meaningless
  attribute for the misspelt name, so the freeze or unfreeze silently does nothing: the
  "frozen" backbone keeps training, or the new head never does.

Example
  for p in backbone.parameters():
      p.require_grad = False                           # TW503

Fix
  `p.requires_grad = False` (or `p.requires_grad_(False)`; for a module, `model.requires_grad_(False)`). The rename is offered as an unsafe
  fix (`--unsafe-fixes`): it makes the assignment take effect, which changes what trains.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for node in ctx.nodes.get(ast.Assign, ()):
            for target in node.targets:
                if target.__class__ is ast.Attribute and target.attr == "require_grad":
                    edit = ctx.replace_attr(target, "requires_grad")
                    fix = Fix("rename to requires_grad", (edit,), safe=False,
                              why_unsafe="the assignment then really freezes or unfreezes the tensor, which changes training")
                    yield ctx.finding(self.code, target, "require_grad is a typo: the tensor attribute is requires_grad",
                                      suggestion="assign requires_grad", fix=fix if edit is not None else None)
                elif target.__class__ is ast.Attribute and target.attr == "requires_grad_":
                    yield ctx.finding(self.code, target, "requires_grad_ is a method: assigning to it replaces the method "
                                      "and changes no parameter", suggestion=f"call it: {ctx.text(target)}({ctx.text(node.value)})")


RULE = RequireGradTypo()
