"""TW511: ``import torchvision.models as models`` instead of ``from torchvision import models``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule

class TorchvisionModuleImport(Rule):
    code = "TW511"
    name = "torchvision-module-import"
    triggers = ("torchvision",)
    fixable = True
    doc = """\
What it flags
  `import torchvision.models as models` (also `datasets`, `transforms`, `utils`, `ops`...): a
  torchvision submodule imported under its own last name, at any depth
  (`import torchvision.models.detection.backbone_utils as backbone_utils`,
  `import torchvision.models._utils as _utils`: `from torchvision.models import _utils`).

Not flagged
  A submodule bound to another name (`import torchvision.utils as vutils`,
  `import torchvision.datasets as dset`): the alias says which module is meant.

Why it matters
  It binds exactly what `from torchvision import models` binds, but reads as if a different
  module were meant, and tools that sort or check imports treat the two forms differently. A
  small consistency point that TorchFix users will know.

Example
  import torchvision.models as models                  # TW511

Fix
  `from torchvision import models`. `torchwise lint --fix` rewrites the line when it imports
  only that module (the bound name and object stay the same).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for node in ctx.nodes.get(ast.Import, ()):
            for alias in node.names:
                parts = alias.name.split(".")
                if len(parts) >= 2 and parts[0] == "torchvision" and alias.asname == parts[-1]:
                    better = f"from {'.'.join(parts[:-1])} import {parts[-1]}"
                    fix = None
                    if len(node.names) == 1 and "#" not in ctx.text(node):
                        fix = Fix(better, (ctx.replace(node, better),))
                    yield ctx.finding(self.code, node, f"import {alias.name} as {parts[-1]}: write {better}",
                                      suggestion=better, fix=fix)


RULE = TorchvisionModuleImport()
