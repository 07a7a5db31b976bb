"""Python data handed to ``torch.tensor``/a typed constructor (TW205): made from sizes and
settings - a list grown with ``.append`` of shapes and ranges (``mel_len.append(x.shape[0])``) -
or data that starts on the host and has to cross anyway: values parsed from a file the function
reads (``torch.Tensor((float(v1), float(v2)))`` per line of a CSV), a number some routine computed
(``value = metrics.l2(a, b)``, then ``torch.Tensor((value,))``), the items of a CPU tensor
(``[... for i in labels.numpy()]``), or a plain copy of a parameter (``[w for w in weights]``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.datainputs import holds_data_parameter
from torchwise.lint.semantics.devices import is_device_tensor
from torchwise.lint.semantics.hostarrays import input_free, numpy_made

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
    if data.__class__ in (ast.List, ast.Tuple) and _reads_files(ctx, use):
        return any(_converted_text(e) for e in data.elts)  # (float(v1), float(v2)) of a line read
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
        return _built_from_data(ctx, data, use)
    if data.__class__ in (ast.List, ast.Tuple):
        return any(_computed_value(ctx, e, use) for e in data.elts) or holds_data_parameter(ctx, data.elts, use) \
            and not any(e.__class__ is ast.Name and _number_passed(ctx, e, use) for e in data.elts)
    return False


_PASS_THROUGH = frozenset({"enumerate", "sorted", "reversed", "list", "tuple"})


def _built_from_data(ctx: Context, comp: ast.ListComp, use: AST) -> bool:
    """``[ord(c) for c in string]``, ``[w / m for w in weights]``: each item made from an item of
    the function's input data (not from ``range(...)``, constants or settings: ``[0. for _ in
    x]`` is a fill, ``[i * 2 for i in range(n)]`` sizes)."""
    gen = comp.generators[0]
    it = gen.iter
    while it.__class__ is ast.Call and it.func.__class__ is ast.Name and it.func.id in _PASS_THROUGH and it.args:
        it = it.args[0]
    if it.__class__ is ast.Call and last_name(it.func) == "range":
        return False
    targets = {n.id for n in ast.walk(gen.target) if n.__class__ is ast.Name}
    if not any(n.__class__ is ast.Name and n.id in targets for n in ast.walk(comp.elt)):
        return False
    if any(n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr == "item" for n in ast.walk(comp.elt)):
        return False  # [table[i.item()] for i in y]: the items of a tensor read one by one, sent back
    source = ctx.resolve(it, use) if it.__class__ is ast.Name else it
    if source.__class__ is ast.Call and source.func.__class__ is ast.Attribute and source.func.attr in _TENSOR_RESULTS \
            or is_device_tensor(ctx, it, use):
        return False  # for n in labels.sum(1): a tensor's values, not data from the host
    return not input_free(ctx, it, use)


# methods whose result is a tensor computed from one (iterated, its items are read back one by one)
_TENSOR_RESULTS = frozenset({"sum", "mean", "argmax", "argmin", "max", "min", "nonzero", "cumsum", "long", "int",
                             "float", "squeeze", "view", "flatten", "detach"})


def _constant(node: AST) -> bool:
    if node.__class__ in (ast.List, ast.Tuple):
        return all(_constant(e) for e in node.elts)
    if node.__class__ is ast.UnaryOp:
        return _constant(node.operand)
    return node.__class__ is ast.Constant


def _computed_value(ctx: Context, elt: AST, use: AST) -> bool:
    """``value`` bound just before to what a routine returned (``util.l2(a, b).astype('float')``,
    also unpacked: ``loss, pos = train_iteration(...)``): a number computed on the host, not a
    size, a constant or a NumPy draw."""
    if elt.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(elt.id, use)
    if b is None or b.kind not in ("assign", "unpack") or b.value is None or b.value.__class__ is not ast.Call:
        return False
    call = b.value
    while call.__class__ is ast.Call and call.func.__class__ is ast.Attribute and call.func.attr in ("astype", "item", "tolist"):
        call = call.func.value
    if call.__class__ is not ast.Call or last_name(call.func) in _SIZE_CALLS:
        return False
    return not numpy_made(ctx, b.value, b.node) and not (ctx.qualname(call.func) or "").startswith("torch.")


def _converted_text(node: AST) -> bool:
    """``float(val)``, ``int(parts[2])``: a value converted from text, not a size."""
    return node.__class__ is ast.Call and node.func.__class__ is ast.Name and node.func.id in ("float", "int") \
        and len(node.args) == 1 and node.args[0].__class__ in (ast.Name, ast.Subscript)


def _reading(call: ast.Call) -> bool:
    """A call that reads files: ``open(path)`` for reading (not ``open(log, "a")``), a CSV/text loader, a listing."""
    if last_name(call.func) != "open":
        return True
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return mode is None or mode.__class__ is ast.Constant and isinstance(mode.value, str) and "r" in mode.value


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
        found = any(n.__class__ is ast.Call and last_name(n.func) in _FILE_READERS and _reading(n) for n in ctx.walk_body(func.body))
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


def python_value(ctx: Context, name: ast.Name, use: AST) -> bool:
    """``name`` holds a Python value on every call: in the branch where ``isinstance(name,
    torch.Tensor)`` is false (``x if isinstance(x, th.Tensor) else th.tensor(x).to(t)``), or a
    parameter (through plain renames) whose default is a constant table no caller overrides
    (``def augment(img, kernel=SYM6)`` with ``SYM6 = (0.01, ...)`` at module level)."""
    if _not_a_tensor_branch(ctx, name, use):
        return _number_passed(ctx, name, use)
    value = ctx.resolve(name, use)
    if value.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(value.id, use)
    func = ctx.function_of(use)
    if b is None or b.kind != "param" or func is None or func.__class__ is ast.Lambda:
        return False
    positional = [*func.args.posonlyargs, *func.args.args]
    defaults = dict(zip([a.arg for a in positional][::-1], func.args.defaults[::-1]))
    default = defaults.get(value.id)
    if default is not None and default.__class__ is ast.Name:
        db = ctx.binding_at(default.id, func)
        default = db.value if db is not None and db.kind == "assign" and ctx.scope_of(db.node) is ctx.tree else None
    if default is None or not _constant(default) or default.__class__ not in (ast.Tuple, ast.List):
        return False
    index = [a.arg for a in positional].index(value.id)
    calls = [c for c in ctx.calls_named(func.name) if c.func.__class__ is ast.Name]
    return bool(calls) and all(len(c.args) <= index and all(k.arg not in (value.id, None) for k in c.keywords)
                               and not any(a.__class__ is ast.Starred for a in c.args) for c in calls)


def _number_passed(ctx: Context, name: ast.Name, use: AST) -> bool:
    """Some call (here or in a module importing the function) passes a number for the parameter
    ``name`` is (or for one of those a comprehension over parameters walks: ``for x in (logvar1,
    logvar2)``): the value not a tensor is a Python number, not a NumPy array of data."""
    func = ctx.function_of(use)
    if func is None or func.__class__ is ast.Lambda:
        return False
    b = ctx.binding_at(name.id, use)
    names = {name.id} if b is not None and b.kind == "param" else set()
    if b is not None and b.kind == "for" and b.value is not None and b.value.__class__ in (ast.Tuple, ast.List):
        names = {e.id for e in b.value.elts if e.__class__ is ast.Name}
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]]
    if not names or not names <= set(params):
        return False
    sites = [(ctx, c) for c in ctx.calls_named(func.name) if ctx.function_of(c) is not func]
    if ctx.parent(func) is ctx.tree and ctx.project.files:
        sites += list(project_calls(ctx, func.name))
    offset = 1 if params and params[0] in ("self", "cls") else 0
    for _, call in sites:
        for k in call.keywords:
            if k.arg in names and _number(k.value):
                return True
        for i, a in enumerate(call.args):
            if i + offset < len(params) and params[i + offset] in names and _number(a):
                return True
    return False


def _number(node: AST) -> bool:
    node = node.operand if node.__class__ is ast.UnaryOp else node
    return node.__class__ is ast.Constant and type(node.value) in (int, float)


def _not_a_tensor_branch(ctx: Context, name: ast.Name, use: AST) -> bool:
    for if_node, in_body in ctx.enclosing_ifs(use):
        test = if_node.test
        negated = test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not
        test = test.operand if negated else test
        if test.__class__ is ast.Call and last_name(test.func) == "isinstance" and len(test.args) == 2 \
                and test.args[0].__class__ is ast.Name and test.args[0].id == name.id \
                and (ctx.qualname(test.args[1]) or "") == "torch.Tensor":
            return in_body == negated
    return False


def constant_table_param(ctx: Context, name: AST, use: AST) -> bool:
    """``th.from_numpy(arr)`` where ``arr`` is a parameter every call of this file fills with an
    array its object set once in ``__init__`` (``_extract_into_tensor(self.sqrt_alphas_cumprod,
    t, shape)``, also ``1.0 - self.alphas_cumprod``): a constant table converted and copied again
    on every call, where a tensor kept on the device would do."""
    if name.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(name.id, use)
    func = ctx.function_of(use)
    if b is None or b.kind != "param" or func is None or func.__class__ is ast.Lambda:
        return False
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if name.id not in params:
        return False
    index = params.index(name.id) - (1 if params[0] in ("self", "cls") else 0)
    calls = [c for c in ctx.calls_named(func.name) if c is not use and ctx.function_of(c) is not func]
    if not calls:
        return False
    for call in calls:
        arg = next((k.value for k in call.keywords if k.arg == name.id), None)
        if arg is None and 0 <= index < len(call.args):
            arg = call.args[index]
        if arg is None or not _set_once(ctx, arg, call):
            return False
    return True


def _set_once(ctx: Context, expr: AST, use: AST, depth: int = 3) -> bool:
    """Numbers and ``self.x`` attributes assigned only in ``__init__``, joined by arithmetic, NumPy
    functions (``np.log(self.betas)``), slices, tuples and dicts of them, or a name bound to such."""
    cls = expr.__class__
    if cls is ast.Constant:
        return isinstance(expr.value, (int, float))
    if cls is ast.BinOp:
        return _set_once(ctx, expr.left, use, depth) and _set_once(ctx, expr.right, use, depth)
    if cls is ast.UnaryOp:
        return _set_once(ctx, expr.operand, use, depth)
    if cls is ast.Call:
        return (ctx.qualname(expr.func) or "").startswith("numpy.") and not expr.keywords \
            and all(_set_once(ctx, a, use, depth) for a in expr.args)
    if cls is ast.Subscript:
        return _set_once(ctx, expr.value, use, depth)
    if cls in (ast.Tuple, ast.List):
        return all(_set_once(ctx, e, use, depth) for e in expr.elts)
    if cls is ast.Dict:
        return all(v is not None and _set_once(ctx, v, use, depth) for v in expr.values)
    if cls is ast.Name and depth > 0:
        b = ctx.binding_at(expr.id, use)
        return b is not None and b.kind in ("assign", "unpack") and b.value is not None \
            and _set_once(ctx, b.value, b.node, depth - 1)
    return ctx.init_self_value(expr, use) is not None


def constant_attribute(ctx: Context, expr: AST, use: AST) -> bool:
    """``self.loc_normalize_mean``, set once in ``__init__`` to a tuple or list of numbers written
    out, or to a parameter whose default is one (``loc_normalize_mean=(0., 0., 0., 0.)``): a
    constant table, converted again wherever a method turns it into a tensor."""
    value = ctx.init_self_value(expr, use)
    if value is None:
        return False
    init = ctx.function_of(value)
    if value.__class__ is ast.Name:
        positional = [*init.args.posonlyargs, *init.args.args]
        defaults = dict(zip([a.arg for a in positional][::-1], init.args.defaults[::-1]))
        b = ctx.binding_at(value.id, value)
        value = defaults.get(value.id) if b is not None and b.kind == "param" else None
    return value is not None and value.__class__ in (ast.Tuple, ast.List) and bool(value.elts) and all(
        e.__class__ is ast.Constant and type(e.value) in (int, float) or e.__class__ is ast.UnaryOp
        and e.operand.__class__ is ast.Constant and type(e.operand.value) in (int, float) for e in value.elts)

