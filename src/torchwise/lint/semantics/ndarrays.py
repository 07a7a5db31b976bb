"""Values that evidently hold a NumPy array (TW206's copies; TW207's host data): a NumPy maker
(``np.zeros``, ``np.array``, ``np.random.randn(n)``), ``t.numpy()``, a name bound to one, and -
with ``methods`` - array methods, slices and arithmetic of one, an attribute every store of its
class makes an array, a parameter every caller hands one, a name unpacked from a helper's tuple at a position
where it returns one, and a helper of the project every
``return`` of which is one (``one_hot = index_to_one_hot(batch.actions, n)`` returning
``np.zeros(...)`` filled on the host)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name
from torchwise.lint.semantics.arrayflow import helper_returns, param_from_every_caller
from torchwise.lint.semantics.selfarrays import self_array

# numpy functions that return arrays (not scalars, not Python objects)
_NP_ARRAY_FUNCS = frozenset({
    "array", "asarray", "ascontiguousarray", "zeros", "ones", "empty", "full", "arange", "linspace",
    "load", "loadtxt", "genfromtxt", "fromfile", "frombuffer", "stack", "concatenate", "vstack", "hstack",
    "zeros_like", "ones_like", "empty_like", "full_like", "eye", "identity", "tile", "repeat", "where",
    "clip", "reshape", "transpose", "expand_dims", "squeeze",
})
_NP_RANDOM = frozenset({"rand", "randn", "randint", "random", "uniform", "normal", "choice", "permutation"})


def assigned_value(ctx: Context, name: ast.Name, use: ast.AST | None) -> tuple[ast.AST, ast.AST] | None:
    """The value ``name`` was last assigned before ``use``, and the statement that did it."""
    b = ctx.binding_at(name.id, use or name)
    return (b.value, b.node) if b is not None and b.kind == "assign" else None


_ELEMENTWISE = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow)
# array methods that return a new (or reshaped) array
ARRAY_METHODS = frozenset({"astype", "reshape", "transpose", "copy", "flatten", "ravel", "squeeze", "swapaxes"})


def is_ndarray(ctx: Context, expr: ast.AST | None, use: ast.AST | None = None, depth: int = 3, methods: bool = False) -> bool:
    """Does ``expr`` evidently hold a NumPy array? With ``methods``, also the result of an array
    method on one (``np.stack(mels).astype(np.float32)``, ``np.array(edges).T``)."""
    if expr is None or depth <= 0:
        return False
    if expr.__class__ is ast.Name:
        bound = assigned_value(ctx, expr, use)
        if bound is None and methods:  # a parameter every caller hands an array (_write_back(net, total))
            return param_from_every_caller(ctx, expr, use or expr, _deep_ndarray, depth, "ndarray") \
                or _unpacked_array(ctx, expr, use, depth)
        return bound is not None and is_ndarray(ctx, *bound, depth - 1, methods)
    if methods and expr.__class__ is ast.Attribute and expr.attr == "T":
        return is_ndarray(ctx, expr.value, use, depth, methods)
    if methods and expr.__class__ is ast.Attribute:  # self.frames: an array every store in its class makes
        return self_array(ctx, expr, lambda e, at: is_ndarray(ctx, e, at, depth - 1, methods), f"ndarray:{depth}")
    if methods and expr.__class__ is ast.BinOp and expr.op.__class__ in _ELEMENTWISE:  # total / n: an array
        return is_ndarray(ctx, expr.left, use, depth - 1, methods) or is_ndarray(ctx, expr.right, use, depth - 1, methods)
    if methods and expr.__class__ is ast.Subscript and _sliced(expr.slice):
        return is_ndarray(ctx, expr.value, use, depth, methods)  # flat[at:at + n]: a slice of an array is one
    if expr.__class__ is not ast.Call:
        return False
    if methods and expr.func.__class__ is ast.Attribute and expr.func.attr in ARRAY_METHODS and ctx.qualname(expr.func) is None:
        return is_ndarray(ctx, expr.func.value, use, depth, methods)
    q = ctx.qualname(expr.func)
    if q is not None and q.startswith("numpy."):
        if q.startswith("numpy.random."):
            return q.rsplit(".", 1)[1] in _NP_RANDOM and bool(expr.args)
        return q.count(".") == 1 and q.split(".")[1] in _NP_ARRAY_FUNCS
    func = expr.func
    if func.__class__ is ast.Attribute and func.attr == "numpy":
        return not expr.args and last_name(func.value) != "np"
    # a helper of the project every return of which is an array (heat_targets(...) from `from utils import *`)
    return methods and (q is None or not q.startswith("torch.")) and helper_returns(ctx, expr, _deep_ndarray, depth, "ndarray")


def _unpacked_array(ctx: Context, name: ast.Name, use: ast.AST | None, depth: int) -> bool:
    """``seq, masked, labels = self.make_mask(seq)``: a helper of the project every ``return`` of
    which hands an array at that position (``return seq, np.zeros_like(seq), np.array(labels)``)."""
    b = ctx.binding_at(name.id, use or name)
    if b is None or b.kind != "unpack" or b.value.__class__ is not ast.Call or b.value is not getattr(b.node, "value", None) \
            or not isinstance(b.index, int) or b.index < 0:
        return False
    at = b.index

    def element(where: Context, value: ast.AST, ret: ast.AST, d: int) -> bool:
        return value.__class__ is ast.Tuple and at < len(value.elts) and not any(e.__class__ is ast.Starred for e in value.elts) \
            and is_ndarray(where, value.elts[at], ret, d, methods=True)
    return helper_returns(ctx, b.value, element, depth, f"ndarray-at-{at}")


def _deep_ndarray(ctx: Context, expr: ast.AST, use: ast.AST, depth: int) -> bool:
    return is_ndarray(ctx, expr, use, depth, methods=True)


def _sliced(index: ast.AST) -> bool:
    """``a[i:j]``, ``a[:, k:]``: an index with a slice in it, which keeps an array an array."""
    return index.__class__ is ast.Slice or index.__class__ is ast.Tuple and any(e.__class__ is ast.Slice for e in index.elts)
