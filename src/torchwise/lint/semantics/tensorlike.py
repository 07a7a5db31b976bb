"""Is an expression evidently a tensor (the target of ``.to(other_tensor)``), not a device or a
dtype held in a name?"""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.devices import is_device_tensor

_TENSOR_ATTRS = frozenset({"weight", "bias", "data", "grad"})
# tensor methods that return a tensor of the same device and dtype
_SAME_PLACE = frozenset({"view", "reshape", "flatten", "permute", "transpose", "contiguous", "squeeze", "unsqueeze",
                         "expand", "detach", "clone", "float", "relu", "sigmoid", "tanh"})


def _derived(ctx: Context, value: ast.AST, depth: int) -> bool:
    """``x / 255.0``, ``x.view(x.size(0), -1)``, ``F.relu(self.conv1(x))`` or ``torch.tanh(x)`` of a tensor: a
    tensor where that one lives (a layer of the module, ``self.conv1(x)``, keeps it there too)."""
    if depth <= 0:
        return False
    if value.__class__ is ast.BinOp:  # x = x / 255.0
        side = value.left if value.left.__class__ is ast.Name else value.right
        return side.__class__ is ast.Name and tensor_like(ctx, side, side, depth - 1)
    if value.__class__ is not ast.Call:
        return False
    func = value.func
    q = ctx.qualname(func) or ""
    if not q and func.__class__ is ast.Attribute and func.attr in _SAME_PLACE and func.value.__class__ is ast.Name:
        return tensor_like(ctx, func.value, func.value, depth - 1)  # the name as the right side reads it
    if not q and func.__class__ is ast.Attribute and func.attr in _SAME_PLACE and func.value.__class__ is ast.Subscript \
            and func.value.value.__class__ is ast.Name:  # e = enc_out[i].unsqueeze(0): a row of the input, reshaped
        base = func.value.value
        b = ctx.binding_at(base.id, base)
        return is_device_tensor(ctx, base, base) or b is not None and b.kind in ("param", "for", "unpack") \
            and tensor_like(ctx, base, base, depth - 1)
    layer = func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self"
    if (layer or q.startswith("torch.") and q.count(".") <= 3) and value.args:
        first = value.args[0]
        return (first.__class__ is ast.Name and tensor_like(ctx, first, first, depth - 1)
                or _derived(ctx, first, depth - 1))
    return False


def tensor_like(ctx: Context, expr: ast.AST, use: ast.AST, depth: int = 12) -> bool:
    """Evidently a tensor (not a device or dtype held in a name): a tensor on the accelerator,
    a parameter of the function (``forward(self, x)``), an element of a batch, ``.weight``, or one
    of these reshaped or passed through a torch function (``x = x.view(b, -1)``)..."""
    if is_device_tensor(ctx, expr, use):
        return True
    if expr.__class__ is ast.Subscript:
        return True  # batch[0], x[:, 0]
    if expr.__class__ is ast.Attribute:
        return expr.attr in _TENSOR_ATTRS
    b = ctx.binding_at(expr.id, use) if expr.__class__ is ast.Name else None
    if b is None:
        return False
    if b.kind == "param":
        return expr.id not in ("self", "cls") and "device" not in expr.id.lower()
    if b.kind in ("for", "unpack"):
        return True
    if b.kind == "assign" and b.value.__class__ is ast.Name and depth > 0:
        return tensor_like(ctx, b.value, b.node, depth - 1)  # tensor = obj, obj a loop variable over the inputs
    return b.kind == "assign" and (b.value.__class__ is ast.Subscript or _derived(ctx, b.value, depth))
