"""The element type of a NumPy array as the code states it, and whether a torch dtype names the
same one (for TW206): ``data = np.array(group["data"], dtype="f")`` then ``torch.tensor(data,
dtype=torch.float)`` asks for the type the array already has, so the conversion changes nothing
and ``torch.tensor`` only copies - ``torch.from_numpy(data)`` would share the memory."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

# NumPy spellings (type codes, names, scalar types) -> one name per element type
_NUMPY: dict[str, str] = {
    "f": "float32", "f4": "float32", "float32": "float32", "single": "float32",
    "d": "float64", "f8": "float64", "float64": "float64", "double": "float64",
    "e": "float16", "f2": "float16", "float16": "float16", "half": "float16",
    "i8": "int64", "int64": "int64",
    "i4": "int32", "int32": "int32",
    "u1": "uint8", "uint8": "uint8",
    "bool": "bool", "bool_": "bool", "?": "bool",
}
_TORCH: dict[str, str] = {
    "torch.float": "float32", "torch.float32": "float32",
    "torch.double": "float64", "torch.float64": "float64",
    "torch.half": "float16", "torch.float16": "float16",
    "torch.long": "int64", "torch.int64": "int64",
    "torch.int": "int32", "torch.int32": "int32",
    "torch.uint8": "uint8", "torch.bool": "bool",
}
# NumPy functions that take dtype= and return an array of it
_MAKERS = frozenset({"numpy.array", "numpy.asarray", "numpy.ascontiguousarray", "numpy.zeros", "numpy.ones",
                     "numpy.empty", "numpy.full", "numpy.fromfile", "numpy.frombuffer", "numpy.loadtxt"})


def _numpy_dtype(ctx: Context, node: AST | None) -> str | None:
    """``"f"``, ``'float32'``, ``np.float32``, ``numpy.single`` -> ``"float32"``; None when unknown
    (a builtin ``int`` or ``float``, whose width NumPy picks by platform, or a variable)."""
    if node is None:
        return None
    if node.__class__ is ast.Constant and isinstance(node.value, str):
        return _NUMPY.get(node.value.lstrip("<=|"))
    q = ctx.qualname(node) or ""
    return _NUMPY.get(q[6:]) if q.startswith("numpy.") and q.count(".") == 1 else None


def array_dtype(ctx: Context, expr: AST, use: AST, depth: int = 2) -> str | None:
    """The element type an array evidently has: made by a NumPy function given ``dtype=``
    (``np.array(x, dtype="f")``) or by ``.astype(np.float32)``, directly or through a name bound
    to one (a plain assignment)."""
    if depth <= 0:
        return None
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is None or b.kind != "assign" or b.value is None:
            return None
        return array_dtype(ctx, b.value, b.node, depth - 1)
    if expr.__class__ is not ast.Call:
        return None
    func = expr.func
    if func.__class__ is ast.Attribute and func.attr == "astype" and len(expr.args) == 1 and ctx.qualname(func) is None:
        return _numpy_dtype(ctx, expr.args[0])
    if ctx.qualname(func) in _MAKERS:
        return _numpy_dtype(ctx, next((k.value for k in expr.keywords if k.arg == "dtype"), None))
    return None


def same_dtype(ctx: Context, array: AST, dtype: AST, use: AST) -> bool:
    """Does the torch ``dtype`` name the element type ``array`` already has?"""
    wanted = _TORCH.get(ctx.qualname(dtype) or "")
    return wanted is not None and array_dtype(ctx, array, use) == wanted
