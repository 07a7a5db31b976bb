"""TW108: ``register_backward_hook`` (wrong gradients for modules made of several operations)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule

_RENAMES = {
    "register_backward_hook": "register_full_backward_hook",
    "register_module_backward_hook": "register_module_full_backward_hook",
}


class OldBackwardHook(Rule):
    code = "TW108"
    name = "old-backward-hook"
    triggers = ("backward_hook",)
    fixable = True
    doc = """\
What it flags
  Calls of `Module.register_backward_hook(...)` and of the global
  `torch.nn.modules.module.register_module_backward_hook(...)`.

Why it matters
  The old hook is attached to whatever autograd node the module's forward produced last. For
  a module built from several operations it therefore sees the gradients of that last
  operation instead of the gradients with respect to the module's inputs, silently. PyTorch
  deprecated it for this reason. The full backward hook reports the real input and output
  gradients of the module.

Example
  layer.register_backward_hook(log_grads)            # TW108

Fix
  `layer.register_full_backward_hook(log_grads)`; the hook keeps its signature
  `hook(module, grad_input, grad_output)`. `torchwise lint --fix` renames the call.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_named(*_RENAMES):
            func = call.func
            if func.__class__ is ast.Attribute:
                new = _RENAMES[func.attr]
                edit = ctx.replace_attr(func, new)
                fix = Fix(f"use {new}", (edit,)) if edit is not None else None
                old = func.attr
            else:
                q = ctx.qualname(func)
                if q is None or not q.endswith("register_module_backward_hook"):
                    continue
                fix = None
                old = func.id
                new = _RENAMES["register_module_backward_hook"]
            yield ctx.finding(
                self.code, call,
                f"{old} reports wrong gradients for modules made of several operations",
                suggestion=f"use {new}",
                fix=fix,
                end_node=func,
            )


RULE = OldBackwardHook()
