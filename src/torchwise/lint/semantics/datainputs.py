"""A function's input data handed to a tensor constructor (TW205): a parameter that holds data
rather than a number (``torch.FloatTensor([state])`` with the observation ``state``,
``np.array([state])``), and a list built item by item from such data (``[ord(c) for c in
string]``, ``[w / m for w in weights]``). Such values start on the host and have to cross to the
device anyway; creating the tensor there would still copy them.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name, param_default


def data_parameter(ctx: Context, name: AST, use: AST) -> bool:
    """``name`` is a parameter of the function around ``use`` (also where a branch fills it in:
    ``if state is None: state = self.state``) that holds data, not a number: it has no numeric
    default, and the function never uses it as a size (a slice bound, an argument of
    ``range()``, a repeat count)."""
    if name.__class__ is not ast.Name:
        return False
    func = ctx.function_of(use)
    if func is None or func.__class__ is ast.Lambda:
        return False
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    names = [a.arg for a in [*positional, *args.kwonlyargs]]
    if name.id not in names or name.id in ("self", "cls"):
        return False
    default = param_default(args, name.id)
    if default is not None and default.__class__ is ast.Constant and type(default.value) in (int, float, bool):
        return False  # def scale(x, k=2): a number
    return not _used_as_size(ctx, func, name.id)


def _used_as_size(ctx: Context, func: AST, name: str) -> bool:
    """The function uses ``name`` as a number: ``x[:, :k]``, ``range(k)``, ``[0] * k``, or as the
    index of a subscript, ``outputs[t]`` (a task or class number picking one head's output)."""
    key = ("sem:size-names", id(func))
    sizes = ctx._cache.get(key)
    if sizes is None:
        sizes = set()
        for node in ctx.walk_body(func.body):
            if node.__class__ is ast.Slice:
                parts = (node.lower, node.upper, node.step)
            elif node.__class__ is ast.Call and last_name(node.func) == "range":
                parts = tuple(node.args)
            elif node.__class__ is ast.Subscript and node.slice.__class__ is ast.Name and node.ctx.__class__ is ast.Load:
                parts = (node.slice,)
            elif node.__class__ is ast.BinOp and node.op.__class__ is ast.Mult and ast.List in (
                    node.left.__class__, node.right.__class__):
                parts = (node.left, node.right)
            else:
                continue
            for part in parts:
                if part is None:
                    continue
                sizes.update(n.id for n in ast.walk(part) if n.__class__ is ast.Name)
        ctx._cache[key] = sizes
    return name in sizes


def holds_data_parameter(ctx: Context, elts: list[AST], use: AST) -> bool:
    """A list or tuple written out with a data parameter as an item (``[state]``)."""
    return any(data_parameter(ctx, e, use) for e in elts)
