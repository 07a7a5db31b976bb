"""Python data handed to ``torch.tensor``/a typed constructor (TW205): made from sizes and
settings - a list grown with ``.append`` of shapes and ranges (``mel_len.append(x.shape[0])``) -
or data that starts on the host and has to cross anyway: values parsed from a file the function
reads (``torch.Tensor((float(v1), float(v2)))`` per line of a CSV), a number some routine computed
(``value = metrics.l2(a, b)``, then ``torch.Tensor((value,))``), the items of a CPU tensor
(``[... for i in labels.numpy()]``), or a plain copy of a parameter (``[w for w in weights]``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.hostarrays import numpy_made

# builtins and methods that give sizes (a number made from a shape, not data)
_SIZE_CALLS = frozenset({"size", "range", "len", "int", "numel", "dim"})
_FILE_READERS = frozenset({"open", "readlines", "read_csv", "loadtxt", "genfromtxt", "listdir"})
_FILE_NEEDLES = tuple(f"{n}(" for n in _FILE_READERS)


def outside_data(ctx: Context, data: AST, use: AST) -> bool:
    """``data`` (a literal, a comprehension, a name bound to one) holds data from outside rather
    than values made from sizes and constants (see the module doc)."""
    if data.__class__ is ast.Name:
        b = ctx.binding_at(data.id, use)
        if b is None or b.kind != "assign" or b.value is None or _reads_files(ctx, use):
            # tt = [0.], then tt.append(time) per line read: parsed data, unless only sizes go in
            return _reads_files(ctx, use) and not appended_sizes(ctx, data, use, True)
        data, use = b.value, b.node
    if data.__class__ is ast.Constant or _constant(data):
        return False
    if _reads_files(ctx, use):  # parsed from the file this function reads (not the sizes of what it read)
        return not (data.__class__ in (ast.List, ast.Tuple) and all(_size_value(e) for e in data.elts))
    if data.__class__ is ast.ListComp:
        gen = data.generators[0]
        it = gen.iter
        if it.__class__ is ast.Call and it.func.__class__ is ast.Attribute and it.func.attr in ("numpy", "tolist") \
                and it.func.value.__class__ is ast.Name:
            return True  # [f(i) for i in labels.numpy()]: the items of a CPU tensor
        if data.elt.__class__ is ast.Name and gen.target.__class__ is ast.Name and data.elt.id == gen.target.id \
                and it.__class__ is ast.Name:
            b = ctx.binding_at(it.id, use)
            return b is not None and b.kind == "param"  # [w for w in weights]: a copy of the caller's list
        return False
    if data.__class__ in (ast.List, ast.Tuple):
        return any(_computed_value(ctx, e, use) for e in data.elts)
    return False


def _constant(node: AST) -> bool:
    if node.__class__ in (ast.List, ast.Tuple):
        return all(_constant(e) for e in node.elts)
    if node.__class__ is ast.UnaryOp:
        return _constant(node.operand)
    return node.__class__ is ast.Constant


def _computed_value(ctx: Context, elt: AST, use: AST) -> bool:
    """``value`` bound just before to what a routine returned (``util.l2(a, b).astype('float')``):
    a number computed on the host, not a size, a constant or a NumPy draw."""
    if elt.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(elt.id, use)
    if b is None or b.kind != "assign" or b.value is None or b.value.__class__ is not ast.Call:
        return False
    call = b.value
    while call.__class__ is ast.Call and call.func.__class__ is ast.Attribute and call.func.attr in ("astype", "item", "tolist"):
        call = call.func.value
    if call.__class__ is not ast.Call or last_name(call.func) in _SIZE_CALLS:
        return False
    return not numpy_made(ctx, b.value, b.node) and not (ctx.qualname(call.func) or "").startswith("torch.")


def _reads_files(ctx: Context, node: AST) -> bool:
    """The function around ``node`` opens or lists files: what it converts is parsed data."""
    if not any(n in ctx.source for n in _FILE_NEEDLES):
        return False
    func = ctx.function_of(node)
    if func is None or func.__class__ is ast.Lambda:
        return False
    key = ("sem:reads-files", id(func))
    found = ctx._cache.get(key)
    if found is None:
        found = any(n.__class__ is ast.Call and last_name(n.func) in _FILE_READERS for n in ctx.walk_body(func.body))
        ctx._cache[key] = found
    return found


def appended_sizes(ctx: Context, name: ast.Name, use: AST, reading: bool = False) -> bool:
    """``mel_len = list()`` (or ``[]``), then only ``mel_len.append(x.shape[0])`` - sizes, ranges
    (``list(range(a, b))``) or constants - before ``use``, in the same function: a list of
    numbers made in Python."""
    b = ctx.binding_at(name.id, use)
    if b is None or b.value is None or (_reads_files(ctx, use) and not reading):
        return False
    start = b.value
    if b.kind == "unpack" and start.__class__ is ast.Tuple and 0 <= b.index < len(start.elts):
        start = start.elts[b.index]  # out, lens = list(), list()
    elif b.kind != "assign":
        return False
    empty = (start.__class__ is ast.List and all(_size_value(e) for e in start.elts)) or (
        start.__class__ is ast.Call and last_name(start.func) == "list" and not start.args)
    func = ctx.function_of(use)
    if not empty or func is None or func is not ctx.function_of(b.node):
        return False
    appended = [n for n in ctx.walk_body(func.body) if n.__class__ is ast.Call and n.func.__class__ is ast.Attribute
                and n.func.value.__class__ is ast.Name and n.func.value.id == name.id]
    return bool(appended) and all(n.func.attr == "append" and len(n.args) == 1 and _size_value(n.args[0])
                                  for n in appended)


def _size_value(node: AST) -> bool:
    """A number made from a shape (``x.shape[0]``, ``x.size(0)``, ``len(v)``), a range or a constant."""
    if node.__class__ is ast.Constant:
        return isinstance(node.value, (int, float))
    if node.__class__ is ast.Subscript:
        return node.value.__class__ is ast.Attribute and node.value.attr == "shape"
    if node.__class__ is ast.Call:
        name = last_name(node.func)
        if name == "list" and len(node.args) == 1:
            return _size_value(node.args[0])
        return name in ("size", "len", "range", "numel")
    return False
