"""Device values of a training step handed between the methods of one class or file (TW207),
which :mod:`~torchwise.lint.semantics.stepvalues` follows through these helpers:

* a tensor a method of the file **returns** from what it was handed (``alpha, alpha_loss =
  self._alpha_and_alpha_loss(observations, log_pi)`` with ``alpha =
  observations.new_tensor(self.alpha_multiplier)`` ... ``return alpha, alpha_loss``): the
  returned expression itself is looked at, so a helper that hands back a number
  (``acc.item()``, ``y.size(0)``) or a dict of them is not taken for one;
* a **parameter** every call of whose function in the file hands it a device value of the step
  (``def _q_loss(self, obs, ..., alpha, log_dict)`` called with that ``alpha``);
* an **attribute of the object** the class only ever assigns device tensors (``self.log_alpha =
  torch.tensor([0.0], device=self.device, requires_grad=True)``; ``self.alpha =
  self.log_alpha.exp().detach()``).

``device`` is the caller's test of a step value, ``(ctx, expr, use, depth) -> bool``.
"""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, Context, argument
from torchwise.lint.semantics.devices import SYNC_METHODS, is_device_tensor
from torchwise.lint.semantics.forwardreads import from_inputs
from torchwise.lint.semantics.values import local_function

DeviceTest = Callable[[Context, AST, AST, int], bool]

# tensor methods whose result is a tensor on the receiver's device (no sizes, no host values)
_TENSOR_METHODS = frozenset({
    "exp", "log", "mean", "sum", "detach", "clone", "float", "double", "half", "abs", "pow", "sqrt", "neg", "clamp",
    "new_tensor", "new_zeros", "new_ones", "new_full", "sigmoid", "tanh", "softmax", "log_softmax", "view", "reshape",
    "squeeze", "unsqueeze", "max", "min", "std", "var", "norm", "mul", "add", "sub", "div", "logsumexp", "expand",
})
_HOST_CASTS = frozenset({"float", "int", "bool", "len", "round"})
_MADE_WITH_DEVICE = frozenset({"torch.tensor", "torch.zeros", "torch.ones", "torch.full"})


def returned_tensor(ctx: Context, call: ast.Call, index: int, device: DeviceTest, depth: int) -> bool:
    """``call`` runs a function of this file handed a device value of the step, and every
    ``return`` of it hands back, at ``index`` of its tuple, a tensor it computes from its
    arguments."""
    func = local_function(ctx, call)
    if func is None or func.__class__ is ast.Lambda or index < 0:
        return False
    key = ("sem:returned-tensor", id(call), index)
    if key not in ctx._cache:
        ctx._cache[key] = False  # (a recursive helper)
        ctx._cache[key] = _returned_tensor(ctx, call, func, index, device, depth)
    return ctx._cache[key]


def _returned_tensor(ctx: Context, call: ast.Call, func: AST, index: int, device: DeviceTest, depth: int) -> bool:
    if not any(device(ctx, a, call, depth - 1) for a in [*call.args, *(k.value for k in call.keywords)]):
        return False
    returns = [n for n in ctx.walk_body(func.body) if n.__class__ is ast.Return and n.value is not None]
    if not returns:
        return False
    for ret in returns:
        value = ret.value
        if value.__class__ is not ast.Tuple or index >= len(value.elts) or not _tensor_of_inputs(ctx, value.elts[index], func):
            return False
    return True


def _tensor_of_inputs(ctx: Context, expr: AST, func: AST, depth: int = 3) -> bool:
    """A tensor computed from ``func``'s arguments by tensor methods and arithmetic, with no host
    read or size on the way (``observations.new_tensor(k)``, ``(log_pi + t).mean()``)."""
    if depth <= 0:
        return False
    if any(_host_value(n) for n in ast.walk(expr)):
        return False
    cls = expr.__class__
    if cls is ast.Name:
        b = ctx.binding_at(expr.id, expr)
        return b is not None and b.kind == "assign" and ctx.function_of(b.node) is func \
            and _tensor_of_inputs(ctx, b.value, func, depth - 1)
    if cls is ast.BinOp:
        return _tensor_of_inputs(ctx, expr.left, func, depth) or _tensor_of_inputs(ctx, expr.right, func, depth)
    if cls is ast.UnaryOp:
        return _tensor_of_inputs(ctx, expr.operand, func, depth)
    if cls is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in _TENSOR_METHODS:
        q = ctx.qualname(expr.func)
        if q is None:
            return from_inputs(ctx, expr.func.value, func)
        return q.startswith("torch.") and bool(expr.args) and from_inputs(ctx, expr.args[0], func)
    return False


def _host_value(n: AST) -> bool:
    """A host read, a size or a cast to a Python number (``x.item()``, ``y.size(0)``, ``int(n)``)."""
    if n.__class__ is ast.Attribute:
        return n.attr in ("shape", "ndim")
    if n.__class__ is not ast.Call:
        return False
    f = n.func
    return f.__class__ is ast.Attribute and f.attr in (*SYNC_METHODS, "size", "dim", "numel") \
        or f.__class__ is ast.Name and f.id in _HOST_CASTS


def param_from_callers(ctx: Context, name: ast.Name, use: AST, device: DeviceTest, depth: int) -> bool:
    """``name`` is a parameter of a function of this file, and every call of it in the file (one
    at least) hands it a device value of the step."""
    func = ctx.function_of(use)
    if func is None or depth <= 0 or func.name not in ctx.calls_by_name:
        return False
    key = ("sem:param-from-callers", id(func), name.id)
    if key in ctx._cache:
        return ctx._cache[key]
    ctx._cache[key] = False  # (a recursive helper)
    found = ctx._cache[key] = _param_from_callers(ctx, func, name, device, depth)
    return found


def _param_from_callers(ctx: Context, func: AST, name: ast.Name, device: DeviceTest, depth: int) -> bool:
    args = func.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    if name.id not in positional and name.id not in {a.arg for a in args.kwonlyargs}:
        return False
    index = positional.index(name.id) if name.id in positional else None
    calls = [c for c in ctx.calls_named(func.name) if local_function(ctx, c) is func]
    if not calls:
        return False
    for call in calls:
        method_call = call.func.__class__ is ast.Attribute
        at = index - 1 if index is not None and positional[0] in ("self", "cls") and method_call else index
        value = argument(call, name.id, at)
        if value is None or not device(ctx, value, call, depth - 1):
            return False
    return True


def self_device_attr(ctx: Context, expr: ast.Attribute, use: AST, depth: int = 2) -> bool:
    """``self.alpha`` where the class assigns ``self.alpha`` only device tensors: made with a
    device (``torch.tensor([0.0], device=self.device)``), moved to one, or computed by tensor
    methods from another such attribute (``self.log_alpha.exp().detach()``)."""
    klass = ctx.class_of(use)
    if klass is None or expr.value.__class__ is not ast.Name or expr.value.id != "self":
        return False
    values = ctx.self_attr_values(klass, expr.attr)
    return bool(values) and all(_device_made(ctx, v, depth) for v in values)


def _device_made(ctx: Context, value: AST, depth: int) -> bool:
    if value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr in ("to", "cuda") \
            or value.__class__ is ast.Call and ctx.qualname(value.func) in _MADE_WITH_DEVICE:
        return is_device_tensor(ctx, value, value)  # a factory with device=, .to(device), .cuda()
    root = value
    while root.__class__ is ast.Call and root.func.__class__ is ast.Attribute and root.func.attr in _TENSOR_METHODS \
            and ctx.qualname(root.func) is None:
        root = root.func.value
    if root is value or root.__class__ is not ast.Attribute or depth <= 0:
        return False
    return self_device_attr(ctx, root, value, depth - 1)
