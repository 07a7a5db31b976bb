"""Where a call moves a tensor (TW205): ``.cuda()``, ``.to(device)``, ``.to(other_tensor)``,
``.type_as(other_tensor)``, ``.type(other_tensor.type())``, ``.to(self._device())``, and ``.type(torch.cuda.FloatTensor)`` - not a
cast (``.to(torch.float16)``), a move to the CPU, or to the device of a tensor itself made on the
CPU or of an attribute every construction sets to the CPU."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.cpudevices import cpu_attribute
from torchwise.lint.semantics.devices import device_move_target, is_dtype_expr
from torchwise.lint.semantics.factories import SHAPE_METHODS, cpu_factory
from torchwise.lint.semantics.stored import host_built
from torchwise.lint.semantics.tensorlike import tensor_like

_DEVICE_FUNC = lazy_compile(r"^_*(get_|current_)?\w*device$")


def _type_of(call: ast.Call) -> ast.AST | None:
    """``x`` of ``.type(x.type())`` - the type string of a tensor, CUDA when ``x`` is on the GPU."""
    arg = call.args[0] if len(call.args) == 1 and not call.keywords else None
    if arg.__class__ is not ast.Call or arg.args or arg.keywords or arg.func.__class__ is not ast.Attribute \
            or arg.func.attr != "type" or arg.func.value.__class__ not in (ast.Name, ast.Attribute):
        return None
    return arg.func.value  # (only a tensor's .type() gives what .type() takes)


def tensor_target(ctx: Context, call: ast.Call) -> bool:
    """``.to(other_tensor)`` / ``.type_as(other_tensor)`` / ``.type(other.type())``: a move (and cast)
    to where a tensor lives."""
    return call.func.attr == "type_as" or call.func.attr == "type" and _type_of(call) is not None or (call.func.attr == "to" and device_move_target(ctx, call) is None
                                            and _device_call(call) is None)


def _device_call(call: ast.Call) -> ast.AST | None:
    """``.to(self._device())``, ``.to(get_device(t))``, ``.to(model.device())``: the device from a
    call of a function named for it (not ``device_count()`` or ``get_device_name()``)."""
    if call.func.attr != "to" or not call.args or call.args[0].__class__ is not ast.Call:
        return None
    name = (last_name(call.args[0].func) or "").lower()
    return call.args[0] if _DEVICE_FUNC.match(name) else None


def move_target(ctx: Context, call: ast.Call) -> ast.AST | bool | None:
    """Where ``call`` moves its receiver: True for ``.cuda()``, the device or tensor expression
    of ``.to(...)``/``.type_as(...)``; None when it is not a move (``.to(torch.float16)``,
    ``.to("cpu")``)."""
    if call.func.__class__ is not ast.Attribute:
        return None
    if call.func.attr == "type":  # .type(torch.cuda.FloatTensor): a move, like .cuda()
        other = _type_of(call)
        if other is not None:  # .type(x.type()): to x's type - its device too, like .type_as(x) - unless x is made on the CPU
            return None if host_built(ctx, ctx.resolve(other, call), call, lambda e: cpu_factory(ctx, e) is not None,
                                      SHAPE_METHODS) else other
        return True if len(call.args) == 1 and not call.keywords and _cuda_type(ctx, call.args[0], call) else None
    target = device_move_target(ctx, call)
    if target is not None:
        if target is not True and target.__class__ is ast.Constant and str(target.value).startswith("cpu"):
            return None  # .to("cpu") of a new tensor: it is made there already
        if target is not True and target.__class__ is ast.Attribute and target.attr == "device" \
                and host_built(ctx, ctx.resolve(target.value, call), call, lambda e: cpu_factory(ctx, e) is not None,
                               SHAPE_METHODS):
            return None  # .to(var.device) with var itself drawn on the CPU: nothing goes to a GPU
        if target is not True and target.__class__ is ast.Attribute and cpu_attribute(ctx, target, call):
            return None  # .to(self.loss_device), which every construction of the module sets to the CPU
        return target
    target = _device_call(call)
    if target is not None:
        return target
    if call.func.attr not in ("to", "type_as") or len(call.args) != 1 or call.args[0].__class__ is ast.Starred:
        return None
    other = call.args[0]
    if other.__class__ not in (ast.Name, ast.Attribute, ast.Subscript) or is_dtype_expr(ctx, other):
        return None
    if is_dtype_expr(ctx, ctx.resolve(other, call)) or any(k.arg == "dtype" for k in call.keywords):
        return None  # precision = torch.half; x.to(precision)
    return other if tensor_like(ctx, other, call) else None


def _cuda_type(ctx: Context, expr: ast.AST, use: ast.AST) -> bool:
    """``torch.cuda.FloatTensor``, or a name bound to it - also as one branch of ``torch.cuda.FloatTensor
    if x.is_cuda else torch.FloatTensor``: the CUDA tensor types of a ``.type(...)`` that moves."""
    if expr.__class__ is ast.Name:
        expr = ctx.resolve(expr, use)
    elif expr.__class__ is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
        expr = ctx.single_self_value(expr, use) or expr
    if expr.__class__ is ast.IfExp:
        return _cuda_type(ctx, expr.body, use) or _cuda_type(ctx, expr.orelse, use)
    if expr.__class__ is ast.Constant:
        return isinstance(expr.value, str) and expr.value.startswith("torch.cuda.")
    q = ctx.qualname(expr) if expr.__class__ is ast.Attribute else None
    return bool(q) and q.startswith("torch.cuda.") and q.endswith("Tensor")


def device_args(ctx: Context, call: ast.Call, target: ast.AST | bool) -> str:
    """The ``device=`` (and ``dtype=``) arguments that create the tensor where ``call`` moves it."""
    if target is True:
        return 'device="cuda"'
    text = ctx.text(target)
    if tensor_target(ctx, call):
        return f"device={text}.device, dtype={text}.dtype"
    return f"device={text}"
