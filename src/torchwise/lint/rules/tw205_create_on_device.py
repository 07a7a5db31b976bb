"""TW205: a tensor created on the CPU and then moved to the device it was meant for."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, keyword
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.devices import device_move_target

# Factories whose values do not depend on the random generator: moving the device into the
# call gives exactly the same tensor.
DETERMINISTIC = frozenset({
    "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "tensor", "as_tensor",
    "empty_strided", "tril_indices", "triu_indices",
})
# Random factories draw from a different generator on the device: same advice, no automatic fix.
# (normal/bernoulli/multinomial are left out: given tensors, they already run on their device)
RANDOM = frozenset({"rand", "randn", "randint", "randperm"})


_LITERALS = (ast.List, ast.Tuple, ast.Constant, ast.ListComp, ast.UnaryOp, ast.BinOp)


def _host_data(ctx: Context, data: ast.AST, use: ast.AST) -> bool:
    """Python data (a list, tuple or number, directly or through a name) - surely on the host."""
    if data.__class__ in _LITERALS:
        return True
    if data.__class__ is ast.Name:
        b = ctx.binding_at(data.id, use)
        return b is not None and b.kind == "assign" and b.value.__class__ in _LITERALS
    return False


# methods between the factory and the move that only reshape or retype (the data stays as made)
_SHAPE_METHODS = frozenset({
    "unsqueeze", "squeeze", "repeat", "expand", "view", "reshape", "flatten", "t", "transpose", "permute",
    "flip", "float", "long", "int", "bool", "half", "double", "contiguous", "repeat_interleave", "tril", "triu",
})


def _traced(ctx: Context, node: ast.AST) -> bool:
    for anc in ctx.ancestors(node):
        if anc.__class__ is ast.Call and (ctx.qualname(anc.func) or "").startswith(("torch.jit.", "torch.onnx.", "torch.fx.")):
            return True
    return False


class CreateThenMove(Rule):
    code = "TW205"
    name = "create-then-move"
    triggers = ("cuda", "to")
    fixable = True
    doc = """\
What it flags
  A tensor factory (`torch.zeros/ones/empty/full/arange/linspace/eye`, `torch.tensor`/`as_tensor`
  of Python data such as a list, and the random `rand/randn/randint/randperm/normal`) called
  without `device=` (nor a `generator=`, whose device decides) and immediately moved
  with `.cuda()` or `.to(device)` - only when the argument of `.to` evidently is a device (a
  device string, `torch.device(...)`, `x.device`, or a name such as `device`), not a dtype or
  another tensor.

Why it matters
  The tensor is first allocated and filled in host memory, then copied across the bus and
  the host copy is thrown away: two allocations, a transfer and a synchronisation point for
  a tensor that could have been made where it is used.

Example
  mask = torch.ones(n, n).cuda()                    # TW205
  noise = torch.randn(b, d).to(device)              # TW205 (no automatic fix)

Fix
  Create it in place: `torch.ones(n, n, device="cuda")`,
  `torch.randn(b, d, device=device)`. `torchwise lint --fix` rewrites the deterministic
  factories; random ones are left to you because the device generator draws different
  numbers than the CPU one.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_named("cuda", "to"):
            target = device_move_target(ctx, call)
            if target is None:
                continue
            if target is not True and target.__class__ is ast.Constant and str(target.value).startswith("cpu"):
                continue  # .to("cpu") of a new tensor: it is made there already
            inner = call.func.value
            if inner.__class__ is not ast.Call:
                continue
            chained = False
            while (
                inner.func.__class__ is ast.Attribute and inner.func.attr in _SHAPE_METHODS
                and inner.func.value.__class__ is ast.Call and ctx.qualname(inner.func) is None
            ):
                inner, chained = inner.func.value, True  # arange(n).unsqueeze(0).repeat(b, 1).to(dev)
            q = ctx.qualname(inner.func)
            if q is None or not q.startswith("torch.") or q.count(".") != 1:
                continue
            if _traced(ctx, call):
                continue  # inside torch.jit.trace(...): the .to() node is what is being recorded
            factory = q.split(".", 1)[1]
            if factory not in DETERMINISTIC and factory not in RANDOM:
                continue
            if keyword(inner, "device") is not None or keyword(inner, "generator") is not None:
                continue  # a generator fixes the device the numbers are drawn on
            if any(k.arg is None for k in inner.keywords):
                continue  # **kwargs may hold a device; *sizes cannot
            if factory in ("tensor", "as_tensor") and any(a.__class__ is ast.Starred for a in inner.args):
                continue
            if factory in ("tensor", "as_tensor") and (len(inner.args) != 1 or not _host_data(ctx, inner.args[0], inner)):
                continue  # data that may already be a tensor on the device, or positional extras
            fix = None
            if factory in DETERMINISTIC and keyword(inner, "requires_grad") is None and not chained:
                fix = self._fix(ctx, call, inner, target)
            dev = '"cuda"' if target is True else ctx.text(target)
            yield ctx.finding(
                self.code, call,
                f"torch.{factory}(...) is built on the CPU and then copied to the device",
                suggestion=f"create it there: torch.{factory}(..., device={dev})",
                fix=fix,
            )

    @staticmethod
    def _fix(ctx: Context, call: ast.Call, inner: ast.Call, target: ast.AST | bool) -> Fix | None:
        if target is True:
            if call.args or call.keywords:
                return None  # .cuda(1), .cuda(non_blocking=True)...
            device = '"cuda"'
        else:
            if len(call.args) + len(call.keywords) != 1:
                return None  # .to(device, dtype) / non_blocking...: keep it simple and exact
            device = ctx.text(target)
        add = ctx.add_keyword(inner, f"device={device}")
        if add is None:
            return None
        inner_start, inner_end = ctx.span(inner)
        start, end = ctx.span(call)
        # new text: the factory call with device=..., and nothing of the .to/.cuda call
        text = ctx.source[inner_start:add.start] + add.text + ctx.source[add.end:inner_end]
        from torchwise.lint.findings import Edit

        return Fix(f"create the tensor with device={device}", (Edit(start, end, text),))


RULE = CreateThenMove()
