"""TW505: a public function used through its private module path."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.semantics.api_symbols import NON_PUBLIC, symbol_imports
from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule


_LAST = frozenset(q.rsplit(".", 1)[1] for q in NON_PUBLIC)


class NonPublicApi(Rule):
    code = "TW505"
    name = "non-public-api"
    triggers = ("_utils", "_ops", "_tensor", "_lowrank")
    fixable = True
    doc = """\
What it flags
  Calls or imports of a public function through a private module, such as
  `torch.utils.data._utils.collate.default_collate` (public: `torch.utils.data.default_collate`),
  `torch.utils.data._utils.worker.get_worker_info`, and the objects `torch/__init__.py` re-exports
  from private modules: `torch._ops.ops` (`from torch._ops import ops`; public: `torch.ops`),
  `torch._tensor.Tensor`, `torch._lowrank.svd_lowrank`/`pca_lowrank`.

Why it matters
  Modules whose names start with an underscore are internal: PyTorch moves and renames them
  without notice, so the import breaks on some upgrade although the function itself is public
  and stable.

Example
  from torch.utils.data._utils.collate import default_collate      # TW505

Fix
  Import it from the public place. `torchwise lint --fix` rewrites such an import line when it
  imports only that name (the object is the same, so nothing else changes).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for node in ctx.nodes.get(ast.Attribute, ()):
            if node.attr not in _LAST:
                continue  # (the private path as the head of a longer chain too: torch._ops.ops.mylib.fn(x))
            q = ctx.qualname(node)
            if q in NON_PUBLIC:  # called or passed on (collate_fn=torch.utils.data._utils.collate.default_collate)
                yield ctx.finding(self.code, node, f"{q} is a private path; use {NON_PUBLIC[q]}",
                                  suggestion=f"use {NON_PUBLIC[q]}")
        for node, alias, q in symbol_imports(ctx, NON_PUBLIC):
            public = NON_PUBLIC[q]
            fix = None
            if len(node.names) == 1 and "#" not in ctx.text(node) and "\\" not in ctx.text(node):
                module, name = public.rsplit(".", 1)
                text = f"from {module} import {name}" + (f" as {alias.asname}" if alias.asname else "")
                fix = Fix(f"import {name} from {module}", (ctx.replace(node, text),))
            yield ctx.finding(self.code, node, f"import of {q} through a private module; use {public}",
                              suggestion=f"import it from {public.rsplit('.', 1)[0]}", fix=fix)


RULE = NonPublicApi()
