"""Values made only from a tensor's metadata (TW207): ``np.prod(m.size())``, ``x.shape[0]``,
``len(x)``, ``x.numel()`` live on the host, so reading them (``.item()`` of the NumPy scalar
``np.prod(m.size())``) waits for nothing on the device."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST

_METADATA = frozenset({"size", "shape", "dim", "ndim", "ndimension", "numel", "nelement", "dtype", "device"})


def without_metadata(expr: AST) -> AST:
    """``expr`` with its reads of a tensor's metadata cut off (``np.prod(m.size())``, ``x.shape[0]``,
    ``len(x)``, ``x.numel()``): shapes live on the host, so a value made only from them reads nothing
    from the device - what stays of ``expr`` is what a host read of it would wait for."""
    if not any(n.__class__ is ast.Attribute and n.attr in _METADATA or n.__class__ is ast.Name and n.id == "len"
               for n in ast.walk(expr)):
        return expr
    return _cut(expr)


def _cut(expr: AST) -> AST:
    cls = expr.__class__
    if cls is ast.Attribute and expr.attr in _METADATA:
        return ast.Constant(value=0)
    if cls is ast.Call and (expr.func.__class__ is ast.Attribute and expr.func.attr in _METADATA
                            or expr.func.__class__ is ast.Name and expr.func.id == "len"):
        return ast.Constant(value=0)
    if cls is ast.Call:
        return ast.Call(func=_cut(expr.func), args=[_cut(a) for a in expr.args],
                        keywords=[ast.keyword(arg=k.arg, value=_cut(k.value)) for k in expr.keywords])
    if cls is ast.Attribute:
        return ast.Attribute(value=_cut(expr.value), attr=expr.attr, ctx=ast.Load())
    if cls is ast.Subscript:
        return ast.Subscript(value=_cut(expr.value), slice=_cut(expr.slice), ctx=ast.Load())
    if cls is ast.BinOp:
        return ast.BinOp(left=_cut(expr.left), op=expr.op, right=_cut(expr.right))
    if cls in (ast.Tuple, ast.List):
        return ast.Tuple(elts=[_cut(e) for e in expr.elts], ctx=ast.Load())
    return expr


_HOST_MODULES = frozenset({"np", "numpy", "torch", "th", "math", "int", "float", "len"})


def only_metadata(expr: AST) -> bool:
    """``expr`` reads tensors only for their metadata (``np.prod(m.size())``,
    ``torch.tensor(x.shape).prod()``): no name stays once those reads are cut off, but modules."""
    cut = without_metadata(expr)
    return cut is not expr and not any(n.__class__ is ast.Name and n.id not in _HOST_MODULES for n in ast.walk(cut))
