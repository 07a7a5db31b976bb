"""Helpers that build a tensor from numbers alone (TW205): a module-level function whose parameters
are only ever used as numbers - sizes, bounds, arithmetic, slices - and that makes its result with
torch factories left on the CPU (``kernel_upsample2(zeros)`` building a sinc kernel from
``th.hann_window(4 * zeros + 1)`` and ``th.linspace(...)``; ``log_importance_weight_matrix(batch_size,
n_data)`` filling ``torch.Tensor(b, b).fill_(1 / m)``). What it returns is a table of constants; a
caller that moves it to the device on every call copies the same table each time. Helpers that
read files, place tensors themselves (``.to``, ``.cuda``, ``device=``) or use a parameter as data
(indexing it, calling its methods, handing it to a function) are not such builders.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.factorynames import COMMON, WINDOWS
from torchwise.lint.semantics.projecthelpers import project_function

# torch functions that allocate a new tensor from sizes or numbers
# (wider than factorynames.COMMON: logspace, eye, randperm and the windows; four of the typed
# legacy constructors, not all of LEGACY, kept so as findings rest on it)
_FACTORIES = COMMON | {"logspace", "eye", "randperm"} | WINDOWS | {"Tensor", "FloatTensor", "LongTensor", "DoubleTensor"}
# builtins a number may go through
_NUMERIC_BUILTINS = frozenset({"int", "float", "range", "min", "max", "abs", "round"})
# text that says the helper reads data or places tensors itself
_DISQUALIFY = (".cuda(", ".to(", "device=", "open(", "load(", "read(", "self.", "global ")


def size_builder_call(ctx: Context, expr: AST) -> tuple[ast.Call, str] | None:
    """``(the call, its first factory's name)`` when ``expr`` (through reshaping methods) calls a
    helper of this file or of a project module that builds its result from numbers alone."""
    while expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in ("view", "reshape", "float", "t"):
        expr = expr.func.value
    if expr.__class__ is not ast.Call or expr.func.__class__ not in (ast.Name, ast.Attribute):
        return None
    found = project_function(ctx, expr)
    if found is None:
        return None
    where, func = found
    key = ("sizebuilder", id(func))
    cached = where._cache.get(key, False)
    if cached is False:
        cached = where._cache[key] = _builds_from_numbers(where, func)
    return (expr, cached) if cached else None


def _builds_from_numbers(where: Context, func: AST) -> str | None:
    if func.__class__ is not ast.FunctionDef or func.decorator_list or where.parent(func) is not where.tree:
        return None
    text = where.text(func)
    if any(bad in text for bad in _DISQUALIFY) or "yield" in text:
        return None
    returns = [n for n in where.walk_body(func.body) if n.__class__ is ast.Return]
    if not returns or any(r.value is None for r in returns):
        return None
    numbers = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    if not numbers or func.args.vararg or func.args.kwarg:
        return None
    factory = None
    for node in where.walk_body(func.body):
        if node.__class__ is ast.Assign and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            pairs = zip(target.elts, value.elts) if target.__class__ is ast.Tuple and value.__class__ is ast.Tuple \
                and len(target.elts) == len(value.elts) else [(target, value)]
            for name, part in pairs:  # N = dataset_size; n, m = dataset_size, batch_size - 1
                if name.__class__ is ast.Name and _numeric(part, numbers):
                    numbers.add(name.id)
        if node.__class__ is ast.Call:
            q = where.qualname(node.func) or ""
            if q.startswith("torch.") and q.count(".") == 1 and last_name(node.func) in _FACTORIES and factory is None:
                factory = last_name(node.func)
    if factory is None:
        return None
    for node in where.walk_body(func.body):
        if node.__class__ is ast.Name and node.id in numbers and node.ctx.__class__ is ast.Load \
                and not _numeric_use(where, node, numbers):
            return None
    return factory


def _numeric(expr: AST, numbers: set[str]) -> bool:
    """An expression of numbers: constants, the numeric names, arithmetic of them."""
    if expr.__class__ is ast.Constant:
        return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
    if expr.__class__ is ast.Name:
        return expr.id in numbers
    if expr.__class__ is ast.BinOp:
        return _numeric(expr.left, numbers) and _numeric(expr.right, numbers)
    if expr.__class__ is ast.UnaryOp:
        return _numeric(expr.operand, numbers)
    if expr.__class__ is ast.Call and expr.func.__class__ is ast.Name and expr.func.id in _NUMERIC_BUILTINS:
        return all(_numeric(a, numbers) for a in expr.args)
    return False


def _numeric_use(where: Context, node: ast.Name, numbers: set[str]) -> bool:
    """The name is used as a number: in arithmetic or a comparison, a slice bound, a size or
    bound of a torch factory, a numeric builtin, or the value of a numeric name."""
    child, parent = node, where.parent(node)
    while parent.__class__ in (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Slice, ast.Tuple):
        if parent.__class__ is ast.Tuple and where.parent(parent).__class__ is not ast.Subscript:
            break  # a tuple of sizes handed on is checked by its parent below
        child, parent = parent, where.parent(parent)
    if parent.__class__ is ast.Subscript:
        return child is parent.slice  # an index or slice bound, not the indexed value
    if parent.__class__ is ast.Assign:
        return _numeric(parent.value, numbers)  # a numeric name (checked when it was bound), a number written in
    if parent.__class__ in (ast.AugAssign, ast.Return):
        return True
    if parent.__class__ is ast.Tuple:
        parent = where.parent(parent)
        if parent.__class__ is ast.Assign:
            return True  # n, m = dataset_size, batch_size - 1
    if parent.__class__ is ast.Call:
        if parent.func.__class__ is ast.Name and parent.func.id in _NUMERIC_BUILTINS:
            return True
        q = where.qualname(parent.func) or ""
        if q.startswith("math.") or q.startswith("torch.") and last_name(parent.func) in _FACTORIES:
            return True  # sizes and bounds of a factory, math of numbers (not torch.sigmoid(x) of a tensor)
        if parent.func.__class__ is ast.Attribute and parent.func.attr in ("fill_", "mul_", "add_", "div_", "sub_", "view",
                                                                           "reshape", "repeat", "clamp_"):
            return True  # W.fill_(1 / m), t.view(1, 1, -1)
    return False
