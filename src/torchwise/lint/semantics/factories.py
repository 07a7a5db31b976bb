"""Tensors a torch factory makes on the CPU (TW205): ``torch.zeros(n)`` without ``device=``, a
random draw, ``torch.tensor`` of Python data, a typed legacy constructor of sizes or literals,
``torch.from_numpy`` of an array NumPy makes right there - through the reshaping and retyping
methods chained after it, host arithmetic and wrapping functions (``torch.triu(torch.ones(n, n))``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, keyword, last_name
from torchwise.lint.semantics.actions import model_input_copy
from torchwise.lint.semantics.devices import is_device_tensor, is_dtype_expr
from torchwise.lint.semantics.factorynames import FILLED, LEGACY, RANDOM, SHAPED, WINDOWS
from torchwise.lint.semantics.handoff import host_round_trip
from torchwise.lint.semantics.hostarrays import numpy_made
from torchwise.lint.semantics.hostdata import (appended_sizes, constant_attribute, constant_table_param, outside_data,
                                                python_value)
from torchwise.lint.semantics.meshgrids import meshgrid_inputs
from torchwise.lint.semantics.starnames import star_qualname
from torchwise.lint.semantics.stored import stored_then_moved

# Factories whose values do not depend on the random generator: moving the device into the
# call gives exactly the same tensor.
DETERMINISTIC = FILLED | {"arange", "linspace", "logspace", "eye", "tensor", "as_tensor", "empty_strided",
                          "tril_indices", "triu_indices"} | WINDOWS
# torch functions that take a new tensor first and keep it where it is (torch.triu(torch.ones(...)))
_WRAPPING = frozenset({"torch.triu", "torch.tril", "torch.diag", "torch.diag_embed", "torch.flip", "torch.roll"})
# elementwise torch functions of one new tensor: computed on the host, it stays there
_ELEMENTWISE = frozenset({f"torch.{n}" for n in (
    "exp", "exp2", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "sigmoid", "tanh",
    "abs", "neg", "reciprocal", "square", "floor", "ceil", "round")})
# joins of the grids torch.meshgrid makes (torch.stack(torch.meshgrid(torch.arange(h), ...), 2))
_GRID_JOINS = frozenset({"torch.stack", "torch.cat"})


_LITERALS = (ast.List, ast.Tuple, ast.Constant, ast.ListComp, ast.UnaryOp, ast.BinOp)


def _host_data(ctx: Context, data: ast.AST, use: ast.AST) -> bool:
    """Python data (a list, tuple or number, directly or through a name) - surely on the host -
    made in Python, not data from outside (:func:`outside_data`)."""
    if outside_data(ctx, data, use):
        return False
    if data.__class__ is ast.BinOp and is_device_tensor(ctx, data, use):
        return False  # torch.as_tensor(returns[:, t] - reward) of a tensor on the device: no copy is made
    if data.__class__ is ast.BinOp:
        return _python_arithmetic(ctx, data, use)  # [0.5] * n, 1.0 / k; not (arr - means) / stds of read data
    if data.__class__ in _LITERALS or data.__class__ is ast.Call and _number_like(data):
        return True  # also a number Python computes: torch.tensor(float("nan"))
    if data.__class__ is ast.Attribute and (data.attr == "shape" or constant_attribute(ctx, data, use)):
        return True  # torch.tensor(p.shape): sizes; torch.tensor(self.mean) of a constant tuple set in __init__
    if data.__class__ is ast.Name:
        if python_value(ctx, data, use):
            return True  # x if isinstance(x, torch.Tensor) else torch.tensor(x).to(t); a constant default
        b = ctx.binding_at(data.id, use)
        if b is not None and b.kind == "for" and b.value is not None and b.value.__class__ is ast.Call:
            return last_name(b.value.func) == "range"  # [torch.tensor(y).to(device) for y in range(n)]: a Python int
        if b is not None and b.kind == "assign" and b.value.__class__ is ast.BinOp:
            return _python_arithmetic(ctx, b.value, b.value)
        return b is not None and b.kind == "assign" and b.value.__class__ in _LITERALS
    return False


def _python_arithmetic(ctx: Context, node: ast.AST, use: ast.AST, depth: int = 6) -> bool:
    """Arithmetic of Python literals, numbers and sizes (``[0.5] * x.size(0)``, ``1.0 / x.shape[1]``,
    ``list(range(n)) * 2``), not of data: a slice of an array read from a file and standardized
    (``(data[i:j] - means) / stds``), arrays a routine returned (``g.T @ v + cur``), a NumPy buffer
    (``pad * np.ones(...)``, left to ``numpy_made``) - data that has to cross anyway."""
    cls = node.__class__
    if cls is ast.BinOp:
        return depth > 0 and _python_arithmetic(ctx, node.left, use, depth - 1) \
            and _python_arithmetic(ctx, node.right, use, depth - 1)
    if cls is ast.UnaryOp:
        return _python_arithmetic(ctx, node.operand, use, depth)
    if cls is ast.Attribute:
        return node.attr != "T"  # self.n_classes, x.shape; not the transpose of an array
    if cls is ast.Subscript:
        index = node.slice
        if index.__class__ is ast.Slice or index.__class__ is ast.Tuple and any(
                e.__class__ is ast.Slice for e in index.elts):
            return False  # series[s:s + 8]: a window of data
        return depth > 0 and _python_arithmetic(ctx, node.value, use, depth - 1)  # x.shape[0]; solver(...)[0] is not
    if cls is ast.Call:
        name = last_name(node.func)
        if name in _PY_REDUCERS:  # list(range(n)), max(len(s) for s in rows)
            return depth > 0 and all(_python_arithmetic(ctx, a, use, depth - 1) for a in node.args)
        return _number_like(node) or name in _SIZE_CALLS
    if cls is ast.Name and depth > 0:
        b = ctx.binding_at(node.id, use)
        if b is not None and b.kind == "assign" and b.value is not None:
            return _python_arithmetic(ctx, b.value, b.value, depth - 1)  # window = full[i:j]; then (window - m) / s
    return True  # literals, a comprehension, a parameter or loop variable


_PY_REDUCERS = frozenset({"list", "tuple", "max", "min", "sum", "abs", "round"})


# methods between the factory and the move that only reshape or retype (the data stays as made)
SHAPE_METHODS = frozenset({
    "unsqueeze", "squeeze", "unfold", "repeat", "expand", "expand_as", "view", "view_as", "reshape", "reshape_as", "flatten",
    "t", "transpose", "permute",
    "flip", "float", "long", "int", "bool", "half", "double", "byte", "char", "short", "bfloat16", "contiguous", "repeat_interleave", "tril", "triu",
    "fill_", "zero_", "type", "type_as",
    "scatter_", "scatter_add_",  # a one-hot filled in on the host: torch.zeros(s).scatter_(1, idx, 1)
    # drawn or rescaled in place on the host: torch.rand(s).sub_(0.5).mul_(2.0), FloatTensor(b, 1).uniform_(0, 1)
    "normal_", "uniform_", "sub_", "mul_", "add_", "div_", "clamp_",
})
# filling methods: what a legacy constructor was given are sizes (FloatTensor(n).zero_())
_FILLS = frozenset({"fill_", "zero_", "normal_", "uniform_"})


_SIZE_CALLS = frozenset({"size", "range", "len", "int", "numel", "dim"})


def _sizes_or_literal(ctx: Context, arg: ast.AST, use: ast.AST, depth: int = 2) -> bool:
    """A legacy constructor's argument that makes a new tensor rather than converting data read
    from somewhere: sizes (``10000``, ``x.size()``, ``n`` bound to ``loc.size(0)``), Python
    literals and ranges (``[0.5]``, ``range(n)``). Data arrays (``torch.FloatTensor(wav)``) are
    left alone: they have to cross to the device anyway."""
    cls = arg.__class__
    if cls in (ast.List, ast.Tuple, ast.ListComp, ast.Name) and outside_data(ctx, arg, use):
        return False  # parsed from a file, computed by a routine, the items of a CPU tensor
    if cls in (ast.Constant, ast.List, ast.Tuple, ast.ListComp):
        return True  # also a list built in Python: torch.LongTensor([s[0] for s in batch])
    if cls is ast.Name and appended_sizes(ctx, arg, use):
        return True  # mel_len = list(); mel_len.append(x.shape[0]); torch.LongTensor(mel_len)
    if cls is ast.Attribute:
        return arg.attr == "shape" or constant_attribute(ctx, arg, use)  # t.Tensor(self.loc_normalize_mean)
    if cls is ast.Subscript:
        return _sizes_or_literal(ctx, arg.value, use, depth)
    if cls is ast.BinOp:
        return _sizes_or_literal(ctx, arg.left, use, depth) and _sizes_or_literal(ctx, arg.right, use, depth)
    if cls is ast.Call:
        return last_name(arg.func) in _SIZE_CALLS
    if cls is ast.Name and depth > 0:
        b = ctx.binding_at(arg.id, use)
        return b is not None and b.kind == "assign" and b.value is not None and _sizes_or_literal(ctx, b.value, use, depth - 1)
    return False


def _legacy_sizes(ctx: Context, call: ast.Call, filled: bool) -> bool:
    """A legacy constructor that allocates: given sizes or literals, two or more positional
    arguments or ``*shape`` (only sizes take that form: ``torch.FloatTensor(n, dim)``), or
    filled right away (``torch.FloatTensor(n).zero_()``: whatever it was given is overwritten)."""
    args = call.args
    return filled or len(args) >= 2 or any(a.__class__ is ast.Starred for a in args) or all(
        _sizes_or_literal(ctx, a, call) for a in args)



def cpu_factory(ctx: Context, expr: ast.AST | None) -> tuple[ast.Call, bool, str] | None:
    """The torch factory call that makes ``expr`` on the CPU (through reshaping/retyping
    methods), whether methods were chained after it, and the factory's name."""
    if expr is not None and expr.__class__ is ast.BinOp:
        # (torch.ones(n) * i).to(x.device): the factory scaled by a number on the host
        sides = [expr.left, expr.right]
        made = [cpu_factory(ctx, side) for side in sides]
        others = [side for side, m in zip(sides, made) if m is None]
        found = [m for m in made if m is not None]
        if found and all(_number_like(o) and not is_device_tensor(ctx, o, expr) for o in others):
            return found[0][0], True, found[0][2]
        return None
    if expr is not None and expr.__class__ is ast.Subscript and expr.value.__class__ is ast.Call:
        made = cpu_factory(ctx, expr.value)  # torch.eye(n)[labels]: rows picked on the host
        return (made[0], True, made[2]) if made is not None else None
    if expr is None or expr.__class__ is not ast.Call:
        return None
    inner, chained, filled = expr, False, False
    while True:
        func = inner.func
        q = ctx.qualname(func)
        if func.__class__ is ast.Attribute and (func.attr in SHAPE_METHODS or _retyped(ctx, inner)) \
                and func.value.__class__ in (ast.Call, ast.Subscript, ast.BinOp) and q is None:
            if func.value.__class__ is not ast.Call:  # (torch.ones(s) / n).type_as(x): scaled on the host
                made = cpu_factory(ctx, func.value)
                return (made[0], True, made[2]) if made is not None else None
            inner, chained = func.value, True  # arange(n).unsqueeze(0).repeat(b, 1).to(dev)
            filled = filled or func.attr in _FILLS
        elif (q in _WRAPPING or last_name(func) == "Variable") and inner.args and inner.args[0].__class__ is ast.Call:
            inner, chained = inner.args[0], True  # torch.triu(torch.ones(n, n), diagonal=1).to(dev); Variable(...)
        elif q in _GRID_JOINS and inner.args and inner.args[0].__class__ is ast.Call \
                and ctx.qualname(inner.args[0].func) == "torch.meshgrid":
            grids = [cpu_factory(ctx, g) for g in meshgrid_inputs(inner.args[0])]  # torch.stack(torch.meshgrid(...), 2)
            return (grids[0][0], True, grids[0][2]) if grids and all(grids) else None
        elif q in _ELEMENTWISE and len(inner.args) == 1 and not inner.keywords:
            made = cpu_factory(ctx, _stored_factory(ctx, inner.args[0], inner))  # th.exp(-c * th.arange(h) / h)
            return (made[0], True, made[2]) if made is not None else None
        else:
            break
    if q is None and func.__class__ is ast.Name:
        q = star_qualname(ctx, func)  # LongTensor from `from utils import *`, where utils says LongTensor = torch.LongTensor
    if q is None or not q.startswith("torch.") or q.count(".") != 1:
        return None
    factory = q.split(".", 1)[1]
    if factory in LEGACY and len(inner.args) == 1 and not inner.keywords and inner.args[0].__class__ is ast.Call:
        made = cpu_factory(ctx, inner.args[0])  # torch.Tensor(torch.zeros(b, n, k)): a CPU tensor retyped on the CPU
        if made is not None:
            return made[0], True, made[2]
    if _empty(factory, inner) and _returned_in_branch(ctx, inner):
        return None  # if len(boxes) == 0: return torch.zeros(0, 5).cuda(): an empty placeholder, nothing to copy
    if factory in LEGACY:
        made = inner.args and (_legacy_sizes(ctx, inner, filled) or model_input_copy(ctx, inner)
                               or len(inner.args) == 1 and (host_round_trip(ctx, inner.args[0], inner)
                                                            or numpy_made(ctx, inner.args[0], inner)))
        return (inner, True, factory) if made else None
    if factory == "from_numpy":
        return (inner, True, factory) if len(inner.args) == 1 and (
            numpy_made(ctx, inner.args[0], inner) or host_round_trip(ctx, inner.args[0], inner)
            or constant_table_param(ctx, inner.args[0], inner)) else None
    # random factories draw from a different generator on the device: same advice, no automatic fix
    if factory not in DETERMINISTIC and factory not in RANDOM:
        return None
    if keyword(inner, "device") is not None or keyword(inner, "generator") is not None:
        return None  # a generator fixes the device the numbers are drawn on
    if any(k.arg is None for k in inner.keywords):
        return None  # **kwargs may hold a device; *sizes cannot
    if factory in ("tensor", "as_tensor"):
        if any(a.__class__ is ast.Starred for a in inner.args) or len(inner.args) != 1 or not (
                _host_data(ctx, inner.args[0], inner) or numpy_made(ctx, inner.args[0], inner)
                or host_round_trip(ctx, inner.args[0], inner)):
            return None  # data that may already be a tensor on the device, or positional extras
    return inner, chained, factory


_SIZED = SHAPED | LEGACY


def _empty(factory: str, call: ast.Call) -> bool:
    """A tensor with no elements (a placeholder: nothing is copied when it moves): a size written as ``0`` (``torch.zeros(0, d)``,
    ``torch.empty((0, 4))``, ``torch.full((0,), v)``, ``torch.LongTensor(0, 2)``) or ``torch.tensor([])``."""
    args = call.args
    if factory in ("tensor", "as_tensor"):
        return len(args) == 1 and args[0].__class__ in (ast.List, ast.Tuple) and not args[0].elts
    if factory not in _SIZED or not args:
        return False
    if factory in LEGACY:
        sizes = args if len(args) >= 2 else []  # torch.FloatTensor([0, 1]) is data, torch.LongTensor(0) left to the rule
    elif args[0].__class__ in (ast.Tuple, ast.List) and (len(args) == 1 or factory == "full"):
        sizes = args[0].elts
    else:
        sizes = args[:1] if factory == "full" else args
    return any(a.__class__ is ast.Constant and a.value == 0 and a.value is not False for a in sizes)


def _returned_in_branch(ctx: Context, node: ast.AST) -> bool:
    """``node`` is (in) the value of a ``return`` in the body of an ``if``: an early exit."""
    for anc in ctx.ancestors(node):
        if isinstance(anc, ast.stmt):
            return anc.__class__ is ast.Return and ctx.parent(anc).__class__ is ast.If and anc in ctx.parent(anc).body
    return False


def _retyped(ctx: Context, call: ast.Call) -> bool:
    """``.to(torch.bool)``: a cast, which keeps the tensor where it is."""
    return call.func.attr == "to" and len(call.args) == 1 and not call.keywords and is_dtype_expr(ctx, call.args[0])


def _number_like(node: ast.AST, depth: int = 2) -> bool:
    """A number or a name (``i``, ``-1``, ``-alpha``), or a number Python computes (``float('-inf')``,
    ``-math.log(max_period)``, ``i / n``), scaling a factory on the host."""
    if node.__class__ is ast.UnaryOp:
        node = node.operand
    if node.__class__ is ast.Call:
        name = last_name(node.func)
        return name in ("float", "int", "len") or (node.func.__class__ is ast.Attribute and node.func.value.__class__ is ast.Name
                                                    and node.func.value.id == "math")
    if node.__class__ is ast.BinOp and depth > 0:
        return _number_like(node.left, depth - 1) and _number_like(node.right, depth - 1)
    return node.__class__ in (ast.Constant, ast.Name)


def _stored_factory(ctx: Context, arg: ast.AST, use: ast.AST) -> ast.AST:
    """``position.float()`` with ``position = torch.arange(2, 2 + k)`` just before and not used in
    between: the expression it was made by (else ``arg`` itself)."""
    name = arg
    while name.__class__ is ast.Call and name.func.__class__ is ast.Attribute and name.func.attr in SHAPE_METHODS:
        name = name.func.value
    if name.__class__ is not ast.Name or not stored_then_moved(ctx, name, use):
        return arg
    return ctx.resolve(name, use) or arg

