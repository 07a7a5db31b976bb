"""Tensors a function builds on the CPU itself (TW207): every leaf of the value, followed back
through the names the function binds, is a CPU constructor - a typed constructor of host data
(``torch.FloatTensor(ref_adj)``, ``torch.from_numpy(a)``), a factory without a device
(``torch.zeros(n, m)``), a parameter wrapped around one (``nn.Parameter(torch.FloatTensor(n,
m))``) - or a number, combined by torch functions and tensor methods that keep the device
(``torch.norm(P @ feat - ref)``, ``x.t()``). A loss computed from such tensors (an alignment
solved by gradient descent on host data in a helper of a GPU project) waits for no accelerator
when it is read. Any other leaf - a parameter of the function, a model's output, an attribute, a
``.to()``/``.cuda()`` - and the value is not known to be on the host."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.factorynames import COMMON, LEGACY

# the typed legacy constructors, all but BFloat16Tensor (left out as before: findings rest on it)
_TYPED = frozenset(f"torch.{t}" for t in LEGACY - {"BFloat16Tensor"})
_FACTORIES = frozenset(f"torch.{f}" for f in COMMON | {"eye", "as_tensor"})
# device-keeping torch functions and tensor methods: the result lives where their tensor inputs do
_KEEP = frozenset({"norm", "transpose", "matmul", "mm", "bmm", "sum", "mean", "abs", "exp", "log", "sqrt", "pow", "t", "view",
                   "reshape", "squeeze", "unsqueeze", "cat", "stack", "max", "min", "clamp", "sigmoid", "softmax", "detach",
                   "clone", "mul", "add", "sub", "div", "permute", "contiguous", "float", "double", "long", "int", "flatten",
                   "relu", "tanh", "trace", "diag", "dot"})
_PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def host_made(ctx: Context, expr: AST | None, use: AST, depth: int = 10) -> bool:
    """Is every leaf of ``expr`` (at ``use``) made on the CPU in its function?"""
    if expr is None or depth <= 0:
        return False
    cls = expr.__class__
    if cls is ast.Constant:
        return type(expr.value) in (int, float, bool)
    if cls is ast.BinOp:
        return host_made(ctx, expr.left, use, depth) and host_made(ctx, expr.right, use, depth)
    if cls is ast.UnaryOp:
        return host_made(ctx, expr.operand, use, depth)
    if cls is ast.Subscript and expr.value.__class__ is ast.Attribute and expr.value.attr == "shape":
        return True  # a.shape[0]: a Python int
    if cls is ast.Name:
        func = ctx.function_of(use)
        b = ctx.binding_at(expr.id, use)
        if func is None or b is None or b.kind != "assign" or b.value is None or ctx.function_of(b.node) is not func:
            return False
        key = ("sem:host-made", id(func), expr.id)
        if key not in ctx._cache:
            ctx._cache[key] = False  # (while asked: a name built from itself is not known)
            bound = [o for o in ctx.bindings(func).get(expr.id, ()) if o.kind != "param"]
            # every binding of the name in the function must be a host tensor (a name rebound to a moved copy is not)
            ctx._cache[key] = all(o.kind == "assign" and host_made(ctx, o.value, o.node, depth - 1) for o in bound)
        return ctx._cache[key]
    if cls is not ast.Call:
        return False
    q = ctx.qualname(expr.func)
    if q in _TYPED:
        return True  # torch.FloatTensor(x): a CPU tensor whatever it is built from
    if q in _FACTORIES:
        return not any(k.arg == "device" for k in expr.keywords) and (q not in ("torch.tensor", "torch.as_tensor") or all(
            host_made(ctx, a, use, depth - 1) or a.__class__ in (ast.List, ast.Tuple) for a in expr.args[:1]))
    if q in _PARAMETERS:
        return bool(expr.args) and host_made(ctx, expr.args[0], use, depth - 1)
    name = expr.func.attr if expr.func.__class__ is ast.Attribute else None
    if name not in _KEEP:
        return False
    if q is not None and q.startswith("torch."):
        tensors = [a for a in expr.args if a.__class__ is not ast.Constant]
        return bool(tensors) and all(host_made(ctx, a, use, depth - 1) for a in tensors)
    return q is None and host_made(ctx, expr.func.value, use, depth - 1)  # x.t(), loss.detach()
