"""What a project function hands back, summarised from its ``return`` statements (TW207): a
tensor computed by torch operations from tensors it was handed, or a host value.

``top1, top5 = calc_topk_accuracy(output, target, (1, 5))`` with a helper (of this file, or a
module-level function of the project module it is imported from) that returns
``[correct[:k].float().sum() / n for k in topk]`` hands back tensors on the device of ``output``
when ``output`` is a device tensor of the step: ``top1.item()`` then waits for the GPU. A helper
(also one the file gets through ``from utils import *``: only its host returns count there)
that returns ``acc.item()``, ``float(...)``, ``len(...)``, a NumPy value or ``t.cpu()`` hands back
host values, whatever its name; anything else (a dict, a constant in one branch, an object) is
left unknown.

The summary of a function is computed once (per function, in its file's context) as, for each
position of what it returns, the parameters the tensor there is computed from; a call counts
when one of those parameters receives a device value of the step (``device``, the caller's test).
"""

from __future__ import annotations

import ast
from typing import Callable, Union

from torchwise.lint.engine import AST, Context, argument
from torchwise.lint.semantics.arrayflow import star_function
from torchwise.lint.semantics.factorynames import COMMON
from torchwise.lint.semantics.projecthelpers import project_function

DeviceTest = Callable[[Context, AST, AST, int], bool]
HOST = "host"
Kind = Union[frozenset, str, None]  # parameters the device tensor is computed from, HOST, or None (unknown)

# tensor methods whose result is a tensor on the receiver's device
_KEEPING = frozenset({
    "eq", "ne", "lt", "le", "gt", "ge", "float", "double", "half", "long", "int", "bool", "byte", "sum", "mean", "max",
    "min", "t", "transpose", "permute", "view", "view_as", "reshape", "contiguous", "squeeze", "unsqueeze", "flatten",
    "expand", "expand_as", "clone", "detach", "mul", "div", "add", "sub", "mul_", "div_", "add_", "sub_", "pow", "sqrt",
    "exp", "log", "abs", "neg", "clamp", "sigmoid", "softmax", "log_softmax", "argmax", "argmin", "norm", "std", "var",
    "type_as", "masked_fill", "gather", "index_select", "topk", "sort", "cumsum", "prod", "all", "any", "sign", "data",
    "logical_and", "logical_or", "logical_not", "float_", "true_divide", "floor_divide", "matmul", "mm", "bmm", "dot"})
_HOST_METHODS = frozenset({"item", "tolist", "numpy", "cpu", "size", "dim", "numel", "__len__"})
_HOST_BUILTINS = frozenset({"float", "int", "bool", "len", "round", "str"})
# torch functions whose result is not computed on the device of their arguments
# (the factories: the common ones, randperm, as_tensor/from_numpy, and three of the typed legacy
# constructors - not all of factorynames.LEGACY, kept so as findings rest on it)
_NOT_KEEPING = COMMON | {"randperm", "as_tensor", "from_numpy", "Tensor", "FloatTensor", "LongTensor",
                         "numel", "is_tensor", "is_floating_point", "save", "load"}


def returned_kind(ctx: Context, call: ast.Call, index: int | None, device: DeviceTest, depth: int) -> bool | None:
    """True: ``call`` runs a project function that returns (at ``index`` of what it returns, or as
    a whole for ``None``) a tensor computed from a parameter this call hands a device value of the
    step; False: it returns a host value there; None: unknown (not a project function, or neither)."""
    found = project_function(ctx, call)
    star = found is None and depth > 0 and (found := star_function(ctx, call)) is not None
    if found is None or depth <= 0:
        return None
    where, func = found
    kind = summary(where, func, index)
    if star:  # from utils import *: only a host value is taken from such a helper
        return False if kind == HOST else None
    if kind is None or kind == HOST:
        return None if kind is None else False
    positional = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    shift = 1 if positional[:1] in (["self"], ["cls"]) and call.func.__class__ is ast.Attribute else 0
    for param in sorted(kind):
        at = positional.index(param) - shift if param in positional else None
        value = argument(call, param, at)
        if value is not None and device(ctx, value, call, depth - 1):
            return True
    return None


def summary(where: Context, func: AST, index: int | None) -> Kind:
    """The kind of what every ``return`` of ``func`` hands back at ``index`` (None: as a whole)."""
    key = ("sem:return-kinds", id(func))
    table = where._cache.get(key)
    if table is None:
        table = where._cache[key] = _returns(where, func)
    kinds = [elts.get(index, elts.get("*")) for elts in table] if table else [None]
    if any(k is None for k in kinds):
        return None
    if all(k == HOST for k in kinds):
        return HOST
    if any(k == HOST for k in kinds):
        return None
    return frozenset().union(*kinds)


def _returns(where: Context, func: AST) -> list[dict]:
    """Per ``return``: position (an int, ``None`` for the whole value, ``"*"`` for every
    position of a list the function builds) -> kind."""
    out = []
    for ret in where.walk_body(func.body):
        if ret.__class__ is not ast.Return:
            continue
        value = ret.value
        if value is None:
            return []
        elts: dict = {}
        if value.__class__ in (ast.Tuple, ast.List):
            elts.update({i: _kind(where, e, func) for i, e in enumerate(value.elts)})
            elts[None] = None
        elif value.__class__ is ast.ListComp:
            elts["*"] = _kind(where, value.elt, func)
            elts[None] = None
        elif value.__class__ is ast.Name and (filled := _appended(where, value, func)) is not None:
            elts["*"] = _all(filled)
            elts[None] = None
        else:
            elts[None] = elts["*"] = _kind(where, value, func)
        out.append(elts)
    return out


def _appended(where: Context, name: ast.Name, func: AST) -> list[Kind] | None:
    """``res = []`` ... ``res.append(v)`` ... ``return res``: the kinds of the values appended."""
    b = where.binding_at(name.id, name)
    if b is None or b.kind != "assign" or b.value.__class__ is not ast.List or b.value.elts:
        return None
    kinds = [_kind(where, c.args[0], func) for c in where.walk_body(func.body) if c.__class__ is ast.Call
             and c.func.__class__ is ast.Attribute and c.func.attr == "append" and c.func.value.__class__ is ast.Name
             and c.func.value.id == name.id and len(c.args) == 1]
    return kinds or None


def _all(kinds: list[Kind]) -> Kind:
    if any(k is None for k in kinds):
        return None
    if all(k == HOST for k in kinds):
        return HOST
    return None if any(k == HOST for k in kinds) else frozenset().union(*kinds)


def _kind(where: Context, expr: AST, func: AST, depth: int = 16) -> Kind:
    """The parameters of ``func`` the tensor ``expr`` is computed from by torch operations, HOST
    for a host value, None when not known."""
    if depth <= 0:
        return None
    cls = expr.__class__
    if cls is ast.Constant:
        return HOST if isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool) else None
    if cls is ast.Name:
        return _name_kind(where, expr, func, depth)
    if cls is ast.Attribute:
        if expr.attr in ("shape", "ndim"):
            return HOST
        return _kind(where, expr.value, func, depth) if expr.attr in ("data", "T", "real") else None
    if cls is ast.Subscript:
        inner = _kind(where, expr.value, func, depth)
        return inner if inner != HOST else None  # (a host list's element may be anything)
    if cls is ast.UnaryOp:
        return _kind(where, expr.operand, func, depth)
    if cls in (ast.BinOp, ast.Compare):
        sides = [expr.left, expr.right] if cls is ast.BinOp else [expr.left, *expr.comparators]
        kinds = [_kind(where, s, func, depth) for s in sides]
        device = [k for k in kinds if k is not None and k != HOST]
        if device:
            return frozenset().union(*device)  # a device tensor combined with anything stays there
        return HOST if all(k == HOST for k in kinds) else None
    if cls is ast.Call:
        return _call_kind(where, expr, func, depth)
    return None


def _call_kind(where: Context, call: ast.Call, func: AST, depth: int) -> Kind:
    f = call.func
    q = where.qualname(f)
    if f.__class__ is ast.Name and q in (None, f"builtins.{f.id}", f.id) and f.id in _HOST_BUILTINS:
        return HOST  # float(acc), len(x)
    if q is not None and q.startswith(("numpy.", "math.")):
        return HOST
    if f.__class__ is ast.Attribute and q is None:
        if f.attr in _HOST_METHODS:
            return HOST  # acc.item(), y.size(0), t.cpu()
        if f.attr == "to" and not any("cpu" in ast.dump(a) for a in [*call.args, *(k.value for k in call.keywords)]):
            return _kind(where, f.value, func, depth)
        return _union(where, [f.value, *call.args], func, depth) if f.attr in _KEEPING else None  # pred.eq(target)
    if q is not None and q.startswith("torch.") and q.rsplit(".", 1)[1] not in _NOT_KEEPING and call.args:
        first = call.args[0]
        return _union(where, first.elts if first.__class__ in (ast.List, ast.Tuple) else call.args, func, depth)
    return None  # torch.mean((pred == y).float()), F.softmax(x, 1), torch.stack([a, b])


def _union(where: Context, parts: list[AST], func: AST, depth: int) -> Kind:
    """The parameters behind the device tensors among ``parts`` (an operation's operands)."""
    kinds = [k for k in (_kind(where, a, func, depth) for a in parts) if k is not None and k != HOST]
    return frozenset().union(*kinds) if kinds else None


def _name_kind(where: Context, name: ast.Name, func: AST, depth: int) -> Kind:
    b = where.binding_at(name.id, name)
    if b is not None and b.value is not None and (b.value.lineno, b.value.col_offset) <= (name.lineno, name.col_offset) \
            <= (b.value.end_lineno, b.value.end_col_offset):  # pred = pred.t(): the binding before this one
        chain = where.bindings(where.scope_of(name)).get(name.id, [])
        at = next((i for i, c in enumerate(chain) if c is b), 0)
        b = chain[at - 1] if at > 0 else None
    if b is None or where.function_of(b.node) is not func:
        return None
    if b.kind == "param":
        return frozenset({name.id}) if name.id not in ("self", "cls") else None
    if b.kind == "assign" and b.value is not None:
        return _kind(where, b.value, func, depth - 1)
    if b.kind == "unpack" and b.value.__class__ is ast.Call and b.value.func.__class__ is ast.Attribute \
            and b.value.func.attr in ("max", "min", "topk", "sort") and where.qualname(b.value.func) is None:
        return _kind(where, b.value.func.value, func, depth - 1)  # _, pred = output.topk(k, 1)
    if b.kind == "unpack" and b.value.__class__ is ast.Call and where.qualname(b.value.func) in ("torch.max", "torch.min", "torch.topk", "torch.sort") \
            and b.value.args:
        return _kind(where, b.value.args[0], func, depth - 1)  # _, pred = torch.max(output, 1)
    return None
