"""NumPy arrays built on the host from sizes and constants (not read data): ``torch.from_numpy``
of one, moved to the GPU every forward pass, is a tensor that could be built on the device.

Built there: NumPy makers (``np.zeros``, ``np.arange``, ``np.random.*``), reshapings of them,
and joins (``np.append``/``np.concatenate``/``np.vstack``) of such arrays or of the results of a
pure-NumPy helper of the file called with sizes, constants and settings (``self.strides[i]``,
``image.shape``): anchor grids and position tables. Not built there: arrays stacked from read
data, filled by a host routine, or made from a function's inputs (those have to cross anyway).
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.datainputs import holds_data_parameter
from torchwise.lint.semantics.starnames import star_qualname
from torchwise.lint.semantics.stored import name_positions
from torchwise.lint.semantics.values import local_function

NUMPY_MAKERS = frozenset({"zeros", "ones", "empty", "full", "eye", "identity", "arange", "linspace", "logspace",
                          "meshgrid", "tri", "diag"})
_LITERALS = (ast.List, ast.Tuple, ast.Constant, ast.ListComp, ast.UnaryOp, ast.BinOp)
# joins of arrays: every piece must be built on the host for the result to be
_JOINS = frozenset({"append", "concatenate", "vstack", "hstack", "stack", "column_stack", "row_stack", "dstack"})
# NumPy functions that read data from outside: what they return is input data
_NUMPY_READERS = frozenset({"load", "loadtxt", "genfromtxt", "fromfile", "frombuffer", "fromstring", "memmap",
                            "fromregex", "fromiter"})
# calls a pure-NumPy helper may make besides NumPy's own (builtins on sizes, array methods)
_PURE_BUILTINS = frozenset({"len", "range", "int", "float", "enumerate", "zip", "list", "tuple", "round", "abs",
                            "min", "max", "sum"})
_ARRAY_METHODS = frozenset({"reshape", "ravel", "transpose", "astype", "flatten", "copy", "repeat", "squeeze",
                            "clip", "round", "sum", "mean", "min", "max", "cumsum", "T"})
_SIZE_ATTRS = frozenset({"shape", "ndim", "size"})


def numpy_made(ctx: Context, data: AST, use: AST | None = None, depth: int = 8) -> bool:
    """Data NumPy makes right there (``np.random.uniform(...)``, ``np.eye(k).flatten()``,
    ``np.array([1, 0, 0])``, a reshaping of such an array, a join of such arrays or of a pure
    NumPy helper's results, or a name bound so just before and not handed to anything since):
    ``torch.from_numpy`` of it is a tensor built on the host. Arrays stacked from read data
    (``np.stack(batch_images)``) or filled by a host routine (``maximum_path_c(path, ...)``) are
    input data: they have to cross anyway."""
    if depth <= 0:
        return False
    while True:
        if data.__class__ is ast.Name:
            return use is not None and _name_made(ctx, data, use, depth)
        if data.__class__ is ast.Call:
            func = data.func
            q = ctx.qualname(func) or star_qualname(ctx, func, numpy=True) or ""  # np from `from utils import *`
            if q.startswith("numpy.random."):
                return True
            if q.startswith("numpy."):
                return _numpy_call_made(ctx, q[6:], data, depth)
            if local_function(ctx, data) is not None:
                return pure_numpy_result(ctx, data)  # cell_offsets(side // 8, 8): its own budget
            if func.__class__ is ast.Attribute:
                data, use = func.value, data  # np.array(...).astype(np.float32), boxes.astype(...)
                continue
            return False
        if data.__class__ in (ast.Attribute, ast.Subscript):
            data = data.value
            continue
        if data.__class__ is ast.BinOp:  # offsets[:, None] + boxes[None]: made of made arrays and numbers
            sides = [s for s in (data.left, data.right) if s.__class__ is not ast.Constant]
            return bool(sides) and all(numpy_made(ctx, s, use, depth - 1) for s in sides)
        return False


def _name_made(ctx: Context, name: ast.Name, use: AST, depth: int) -> bool:
    b = ctx.binding_at(name.id, use)
    if b is None or b.kind != "assign" or b.value is None:
        return False
    here = (use.lineno, use.col_offset)
    shuffled = _shuffled(ctx)
    for pos in name_positions(ctx).get(name.id, ()):
        if b.pos <= pos < here and pos not in shuffled and not _made_row_written(ctx, name.id, pos, depth):
            return False  # used in between: filled or changed on the host (not shuffled in place: a permutation)
    return numpy_made(ctx, b.value, b.node, depth - 1)


def _made_row_written(ctx: Context, name: str, pos: tuple[int, int], depth: int) -> bool:
    """At ``pos`` the array is written with an array NumPy makes right there: a random mask
    filled row by row, ``overall_mask[i, :] = mask`` with ``mask = np.hstack([np.zeros(g - k),
    np.ones(k)])`` shuffled in place."""
    for stmt in ctx.nodes.get(ast.Assign, ()):
        if stmt.lineno != pos[0] or len(stmt.targets) != 1:
            continue
        target = stmt.targets[0]
        if target.__class__ is ast.Subscript and target.value.__class__ is ast.Name and target.value.id == name \
                and (target.value.lineno, target.value.col_offset) == pos:
            return numpy_made(ctx, stmt.value, stmt, depth - 1)
    return False


def _shuffled(ctx: Context) -> frozenset[tuple[int, int]]:
    """Where a name is shuffled in place, ``np.random.shuffle(perm)``: part of making a permutation."""
    found = ctx._cache.get("sem:shuffled")
    if found is None:
        found = frozenset((c.args[0].lineno, c.args[0].col_offset) for c in ctx.calls_named("shuffle")
                          if len(c.args) == 1 and c.args[0].__class__ is ast.Name
                          and star_qualname(ctx, c.func, numpy=True) == "numpy.random.shuffle")
        ctx._cache["sem:shuffled"] = found
    return found


def _numpy_call_made(ctx: Context, name: str, call: ast.Call, depth: int) -> bool:
    if name in NUMPY_MAKERS:
        return True
    if name in ("repeat", "tile") and call.args and _repeated_labels(call):
        return True
    if name in ("array", "asarray"):
        first = call.args[0] if call.args else None
        return first.__class__ in _LITERALS and not (  # np.array([state]): the caller's data
            first.__class__ in (ast.List, ast.Tuple) and holds_data_parameter(ctx, first.elts, call))
    if name in _JOINS and call.args:
        pieces = call.args[:2] if name == "append" else call.args[:1]
        if name != "append":
            seq = call.args[0]
            if seq.__class__ not in (ast.List, ast.Tuple):
                return False  # np.stack(batch_images): pieces not seen here
            pieces = seq.elts
        return bool(pieces) and all(numpy_made(ctx, p, call, depth - 1) for p in pieces)
    return bool(call.args) and numpy_made(ctx, call.args[0], call, depth - 1)  # np.expand_dims(a, 0)


def _repeated_labels(call: ast.Call) -> bool:
    """``np.repeat(range(n_way), n_query)`` (episode labels), ``np.repeat([0, 1], k)``, or a
    label broadcast to the batch, ``np.repeat(task - 1, x.size(0))``: integers made from sizes."""
    first = call.args[0]
    if first.__class__ is ast.Call:
        return first.func.__class__ is ast.Name and first.func.id == "range"
    if first.__class__ in (ast.List, ast.Tuple, ast.Constant):
        return True
    count = call.args[1] if len(call.args) > 1 else None
    sized = count is not None and (count.__class__ is ast.Call and last_name(count.func) in ("size", "len")
                                   or count.__class__ is ast.Subscript and last_name(count.value) == "shape")
    return sized and first.__class__ is ast.BinOp and {first.left.__class__, first.right.__class__} == {ast.Name, ast.Constant}


def pure_numpy_result(ctx: Context, call: ast.Call, depth: int = 3) -> bool:
    """``call`` runs a helper of this file that only computes with NumPy (it makes an array with
    a NumPy maker, reads nothing from files or ``self``), given sizes, constants and settings."""
    func = local_function(ctx, call)
    if func is None or depth <= 0 or not _pure_numpy(ctx, func, depth):
        return False
    args = [*call.args, *(k.value for k in call.keywords)]
    return all(input_free(ctx, a, call, depth) for a in args)


def _pure_numpy(ctx: Context, func: AST, depth: int) -> bool:
    key = ("sem:pure-numpy", id(func))
    if key in ctx._cache:
        return ctx._cache[key]
    ctx._cache[key] = False  # a recursive helper is not pure for this test
    makes = False
    pure = True
    for node in ast.walk(func):
        if node.__class__ is ast.Name and node.id == "self":
            pure = False  # reads state: a buffer, a dataset
        elif node.__class__ is ast.Call:
            q = ctx.qualname(node.func) or ""
            if q.startswith("numpy."):
                name = q[6:]
                makes = makes or name in NUMPY_MAKERS or name.startswith("random.")
                pure = pure and name.split(".")[0] not in _NUMPY_READERS
            elif node.func.__class__ is ast.Name and node.func.id in _PURE_BUILTINS:
                pass
            elif node.func.__class__ is ast.Attribute and not q and node.func.attr in _ARRAY_METHODS:
                pass
            else:
                inner = local_function(ctx, node) if depth > 1 else None
                pure = pure and inner is not None and inner is not func and _pure_numpy(ctx, inner, depth - 1)
        if not pure:
            break
    ctx._cache[key] = pure and makes
    return ctx._cache[key]


def input_free(ctx: Context, expr: AST, use: AST, depth: int = 4) -> bool:
    """``expr`` is made of sizes, constants and settings: it reads a function's inputs only
    through their ``.shape``/``len()``, and no call in it reads data (settings are ``self.x``,
    loop variables over them, module constants)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        cls = node.__class__
        if cls is ast.Attribute and (node.attr in _SIZE_ATTRS or node.value.__class__ is ast.Name and node.value.id == "self"):
            continue  # image.shape, self.strides
        if cls is ast.Call:
            name = last_name(node.func)
            q = ctx.qualname(node.func) or ""
            if name == "len" or name == "size" and not q:
                continue
            if q.startswith("numpy.") and q[6:].split(".")[0] in _NUMPY_READERS:
                return False
            if not q.startswith("numpy.") and name not in _PURE_BUILTINS and local_function(ctx, node) is not None:
                if not pure_numpy_result(ctx, node, depth - 1):
                    return False
                continue
            if not q.startswith("numpy.") and name not in _PURE_BUILTINS and name not in _ARRAY_METHODS:
                return False
            stack.extend(node.args)
            stack.extend(k.value for k in node.keywords)
            if node.func.__class__ is ast.Attribute:
                stack.append(node.func.value)
            continue
        if cls is ast.Name:
            if not _name_input_free(ctx, node, use, depth):
                return False
            continue
        stack.extend(ast.iter_child_nodes(node))
    return True


def _name_input_free(ctx: Context, name: ast.Name, use: AST, depth: int) -> bool:
    b = ctx.binding_at(name.id, use)
    if b is None or b.kind in ("import", "def", "class"):
        return True  # a builtin, a module's name, a comprehension's variable
    if depth <= 0 or b.kind not in ("assign", "for") or b.value is None:
        return False  # a parameter: the function's input
    return input_free(ctx, b.value, b.node, depth - 1)
