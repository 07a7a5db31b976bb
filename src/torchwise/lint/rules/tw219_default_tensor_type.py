"""TW219: the deprecated ``torch.set_default_tensor_type``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule

# CPU tensor types and the dtype that set_default_dtype needs for the same effect.
CPU_TYPES = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
}


def _type_name(ctx: Context, arg: ast.AST) -> tuple[str, bool] | None:
    """``("FloatTensor", on_cuda)`` for ``torch.FloatTensor``/``"torch.cuda.FloatTensor"``..."""
    if arg.__class__ is ast.Constant and isinstance(arg.value, str):
        text = arg.value
    else:
        text = ctx.qualname(arg) or ""
    if text.startswith("torch.cuda."):
        return text[len("torch.cuda."):], True
    if text.startswith("torch.") and text.count(".") == 1:
        return text[len("torch."):], False
    return None


class SetDefaultTensorType(Rule):
    code = "TW219"
    name = "set-default-tensor-type"
    triggers = ("set_default_tensor_type",)
    fixable = True
    doc = """\
What it flags
  Calls of `torch.set_default_tensor_type(...)`.

Why it matters
  It is deprecated: it mixes two settings (dtype and device) into legacy tensor-type classes
  and will be removed. `torch.set_default_dtype` and `torch.set_default_device` say what is
  meant and cover every factory function.

Example
  torch.set_default_tensor_type(torch.DoubleTensor)           # TW219
  torch.set_default_tensor_type("torch.cuda.FloatTensor")     # TW219

Fix
  `torch.set_default_dtype(torch.float64)`; for CUDA types also
  `torch.set_default_device("cuda")`. `torchwise lint --fix` rewrites the CPU floating types
  (Float/Double/Half/BFloat16) when the file never switches the default to a CUDA type or
  device, where both calls have the same effect; the CUDA forms are left to you.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        calls = ctx.calls_to("torch.set_default_tensor_type")
        if not calls:
            return
        parsed = [(_type_name(ctx, c.args[0]) if len(c.args) == 1 and not c.keywords else None) for c in calls]
        any_cuda = any(p is not None and p[1] for p in parsed) or bool(ctx.calls_to("torch.set_default_device"))
        torch_names = ctx.import_aliases.get("torch", [])
        for call, p in zip(calls, parsed):
            fix = None
            suggestion = "use torch.set_default_dtype(...) and torch.set_default_device(...)"
            if p is not None and p[0] in CPU_TYPES:
                dtype = CPU_TYPES[p[0]]
                suggestion = f"use torch.set_default_dtype(torch.{dtype})" + (' and torch.set_default_device("cuda")' if p[1] else "")
                if not any_cuda and "torch" in torch_names and call.func.__class__ is ast.Attribute and "#" not in ctx.text(call):
                    fix = Fix(
                        f"use torch.set_default_dtype(torch.{dtype})",
                        (ctx.replace(call, f"torch.set_default_dtype(torch.{dtype})"),),
                    )
            yield ctx.finding(
                self.code, call,
                "torch.set_default_tensor_type is deprecated",
                suggestion=suggestion,
                fix=fix,
            )


RULE = SetDefaultTensorType()
