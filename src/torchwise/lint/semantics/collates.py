"""What a loader's ``collate_fn`` makes of its batches: batches built on the device (the collate
function is handed the device), or NumPy arrays with no tensor in them (nothing that
``pin_memory`` could pin). The collate function is found in this file, through a ``lambda``
or ``partial``, as a method of the loader's dataset class, or in another module of the project."""

from __future__ import annotations

import ast
import builtins
import re

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.devices import is_device_expr


def _collate_value(ctx: Context, loader: ast.Call) -> AST | None:
    """The ``collate_fn=`` of a loader, through a name bound to it."""
    value = next((k.value for k in loader.keywords if k.arg == "collate_fn"), None)
    if value is not None and value.__class__ is ast.Name:
        value = ctx.resolve(value, loader)
    return value


def _inner_call(value: AST | None) -> tuple[ast.Call | None, list[AST]]:
    """The call a collate value makes and the arguments it adds to the batch: ``lambda batch:
    collate(batch, args, device)`` -> (that call, its other arguments); ``partial(collate,
    device=device)`` -> (the partial, its arguments after the function)."""
    if value.__class__ is ast.Lambda and value.body.__class__ is ast.Call:
        own = {a.arg for a in value.args.args}
        call = value.body
        extra = [a for a in call.args if not (a.__class__ is ast.Name and a.id in own)]
        return call, extra + [k.value for k in call.keywords]
    if value.__class__ is ast.Call and last_name(value.func) == "partial" and value.args:
        return value, [*value.args[1:], *(k.value for k in value.keywords)]
    return None, []


def _cpu(node: AST) -> bool:
    if node.__class__ is ast.Call and node.args:  # torch.device("cpu")
        node = node.args[0]
    return node.__class__ is ast.Constant and node.value == "cpu"


def device_collate(ctx: Context, loader: ast.Call) -> bool:
    """The collate function is handed a device - ``collate_fn=lambda batch: collate(batch, args,
    device)``, ``partial(collate, device=dev)`` - or is a function of this file with a ``device``
    parameter that defaults to one (``def collate(batch, steps, device=device)``): it builds
    its batches on the device, where there is nothing to pin. A ``"cpu"`` device is no GPU."""
    value = _collate_value(ctx, loader)
    if value is None:
        return False
    call, extra = _inner_call(value)
    if any(is_device_expr(ctx, a, loader) and not _cpu(a) for a in extra):
        return True
    target = call.args[0] if call is not None and last_name(call.func) == "partial" else (call.func if call is not None else value)
    if target.__class__ is not ast.Name:
        return False
    defs = [f for f in ctx.nodes.get(ast.FunctionDef, ()) if f.name == target.id]
    if len(defs) != 1:
        return False
    args = defs[0].args
    defaults = dict(zip([a.arg for a in args.args][len(args.args) - len(args.defaults):], args.defaults))
    defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
    default = defaults.get("device")
    return default is not None and not (default.__class__ is ast.Constant and default.value in (None, "cpu")) and not _cpu(default)


# ----------------------------------------------------------------------------- NumPy batches

_BUILTINS = frozenset(dir(builtins))  # len, max, sorted, ValueError, ...
_TENSOR_WORDS = lazy_compile(r"torch|[Tt]ensor|default_collate")


def _torch_imported(ctx: Context) -> bool:
    """Does the module import torch at its top level (other than ``torch.utils.data``, whose
    ``Dataset``/``DataLoader`` make no tensors)?"""
    for node in ctx.tree.body:
        if node.__class__ is ast.Import and any(a.name.split(".")[0] == "torch" and not a.name.startswith("torch.utils.data")
                                                for a in node.names):
            return True
        if node.__class__ is ast.ImportFrom and (node.module or "").split(".")[0] == "torch" \
                and not (node.module or "").startswith("torch.utils.data"):
            return True
    return False


def _top_class(ctx: Context, name: str) -> tuple[Context, ast.ClassDef] | None:
    """The top-level class ``name`` of this file, or of exactly one other module of the project
    (parsed once per process)."""
    if name in ctx.local_classes:
        return ctx, ctx.local_classes[name]
    pattern = re.compile(rf"^class {name}\b", re.M)
    found = [(p, t) for p, t in ctx.project.files if p != ctx.path and f"class {name}" in t and pattern.search(t)]
    if len(found) != 1:
        return None
    other = parsed_file(ctx.project, *found[0])
    node = next((n for n in other.tree.body if n.__class__ is ast.ClassDef and n.name == name), None) if other else None
    return (other, node) if node is not None else None


def _collate_target(ctx: Context, loader: ast.Call) -> tuple[Context, ast.FunctionDef, ast.ClassDef | None] | None:
    """The collate function of a loader and the class it is a method of: a function of this file
    or of another module (``collate_fn=collate_batch``), or a method of the loader's dataset
    (``collate_fn=dataset.collate_fn``, the dataset's class defined here or in another module)."""
    value = _collate_value(ctx, loader)
    call, _ = _inner_call(value) if value is not None else (None, [])
    if call is not None:
        value = call.args[0] if last_name(call.func) == "partial" and call.args else call.func
    if value.__class__ is ast.Name:
        found = _helper_def(ctx, value.id)
        return (found[0], found[1], None) if found is not None else None
    if value.__class__ is not ast.Attribute or value.value.__class__ is not ast.Name:
        return None
    built = ctx.constructed_from(value.value, loader)
    if built is None:
        return None
    found = _top_class(ctx, built.rsplit(":", 1)[-1].rsplit(".", 1)[-1])
    if found is None:
        return None
    method = next((n for n in found[1].body if n.__class__ is ast.FunctionDef and n.name == value.attr), None)
    return (found[0], method, found[1]) if method is not None else None


def numpy_collate(ctx: Context, loader: ast.Call) -> bool:
    """Does the loader's collate function return NumPy arrays and no tensor? Its module imports
    no torch (beyond ``torch.utils.data``), it builds arrays with NumPy, and every function it
    calls - methods of its class, functions of its module, helpers of other modules of the project -
    names no tensor either (``pad_1D``/``pad_2D`` padding with ``np.pad``). ``pin_memory`` pins
    tensors only: for such a loader it changes nothing (the consumer converts with
    ``torch.from_numpy`` later)."""
    if not any(k.arg == "collate_fn" for k in loader.keywords):
        return False
    target = _collate_target(ctx, loader)
    if target is None:
        return False
    octx, func, klass = target
    if _torch_imported(octx):
        return False
    return _numpy_only(octx, func, klass)


def _numpy_only(ctx: Context, func: ast.FunctionDef, klass: ast.ClassDef | None, need_numpy: bool = True) -> bool:
    """``func`` and what it calls (two levels) name no tensor, and some of it calls NumPy (unless
    ``need_numpy`` is False: then also library functions imported by name - ``unzip``, ``concat`` -
    from modules other than torch's and the project's are let through)."""
    methods = {n.name: n for n in klass.body if n.__class__ is ast.FunctionDef} if klass is not None else {}
    todo, seen, numpy_used = [(ctx, func, 2)], set(), False
    while todo:
        octx, fn, depth = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if _TENSOR_WORDS.search(octx.text(fn)):
            return False
        for node in ast.walk(fn):
            if node.__class__ is not ast.Call:
                continue
            f = node.func
            q = octx.qualname(f) or ""
            if q.startswith("numpy."):
                numpy_used = True
                continue
            if f.__class__ is ast.Attribute:
                root = f.value
                if root.__class__ is ast.Name and root.id == "self" and octx is ctx and f.attr in methods:
                    if depth > 0:
                        todo.append((octx, methods[f.attr], depth - 1))
                    continue
                if root.__class__ is ast.Name and root.id in octx.imports and _project_module(octx, octx.imports[root.id]):
                    return False  # a function of another module of the project (helpers.batchify(...)): not followed
                continue  # a method of a value (idx.reshape, out.append), a library function (math.ceil)
            if f.__class__ is not ast.Name or f.id in _BUILTINS:
                continue
            if any(n.__class__ is ast.FunctionDef and n.name == f.id for n in ast.walk(fn)):
                continue  # a helper nested in the function (checked with it)
            found = _helper_def(octx, f.id)
            if found is None and not need_numpy and _library_name(octx, f):
                continue
            if found is None or depth <= 0:
                return False
            todo.append((found[0], found[1], depth - 1))
    return numpy_used or not need_numpy


def _library_name(ctx: Context, f: ast.Name) -> bool:
    """A name imported from a library other than torch (``from toolz.sandbox import unzip``)."""
    q = ctx.qualname(f) or ""
    return "." in q and q.split(".")[0] not in ("torch", "torchvision", "torchtext", "transformers") \
        and not _project_module(ctx, q.rsplit(".", 1)[0])


def collate_names_no_tensor(ctx: Context, loader: ast.Call) -> bool:
    """Does the loader's ``collate_fn`` (a function of this file or the project, or a ``def`` nested
    in the function that builds the loader) and what it calls name no tensor?"""
    target = _collate_target(ctx, loader)
    if target is None:
        value = _collate_value(ctx, loader)
        if value.__class__ is ast.FunctionDef:
            return _numpy_only(ctx, value, None, need_numpy=False)
        outer = ctx.function_of(loader)
        if value.__class__ is not ast.Name or outer is None:
            return False
        nested = [n for n in outer.body if n.__class__ is ast.FunctionDef and n.name == value.id]
        if len(nested) != 1:
            return False
        target = (ctx, nested[0], None)
    octx, func, klass = target
    return _numpy_only(octx, func, klass, need_numpy=False)


def top_class(ctx: Context, name: str) -> tuple[Context, ast.ClassDef] | None:
    """The top-level class ``name`` of this file or of exactly one other module of the project."""
    return _top_class(ctx, name)


def _project_module(ctx: Context, qualname: str) -> bool:
    """Is the module ``qualname`` (``utils.tools``, ``helpers``) a file of the project?"""
    stem = qualname.rsplit(".", 1)[-1]
    return any(p.rsplit("/", 1)[-1] in (f"{stem}.py", "__init__.py") and f"/{stem}" in p for p, _ in ctx.project.files)


def _helper_def(ctx: Context, name: str) -> tuple[Context, ast.FunctionDef] | None:
    """The function ``name`` called in ``ctx``: a top-level ``def`` of the file, or one imported
    from a module of the project (``from utils.tools import pad_1D``)."""
    for node in ctx.tree.body:
        if node.__class__ is ast.FunctionDef and node.name == name:
            return ctx, node
    source = next((n for n in ctx.nodes.get(ast.ImportFrom, ()) if any((a.asname or a.name) == name for a in n.names)), None)
    if source is None or not source.module:
        return None
    alias = next(a for a in source.names if (a.asname or a.name) == name)
    stem = source.module.rsplit(".", 1)[-1]
    files = [(p, t) for p, t in ctx.project.files if p.rsplit("/", 1)[-1] == f"{stem}.py" and f"def {alias.name}" in t]
    if len(files) != 1:
        return None
    other = parsed_file(ctx.project, *files[0])
    node = next((n for n in other.tree.body if n.__class__ is ast.FunctionDef and n.name == alias.name), None) if other else None
    return (other, node) if node is not None else None


def identity_collate(call: ast.Call) -> bool:
    """``collate_fn=lambda x: x`` (or ``lambda batch: batch``): batches are lists of raw items."""
    for kw in call.keywords:
        if kw.arg == "collate_fn" and kw.value.__class__ is ast.Lambda:
            args, body = kw.value.args.args, kw.value.body
            return len(args) == 1 and body.__class__ is ast.Name and body.id == args[0].arg
    return False


def graph_collate(ctx: Context, loader: ast.Call) -> bool:
    """Does the loader's ``collate_fn`` return DGL graph batches - ``dgl.batch(graphs)``, alone or
    first in the returned tuple? A function of this file or the project, also one a factory returns
    (``collate_fn=batcher()`` with an inner ``def`` that batches), each arm of a conditional
    (``labeled_batcher() if finetune else batcher()``). ``pin_memory`` pins tensors, not graphs."""
    value = next((k.value for k in loader.keywords if k.arg == "collate_fn"), None)
    if value is None or "dgl" not in ctx.source and not any("dgl.batch(" in t for _, t in ctx.project.files):
        return False
    arms = [value.body, value.orelse] if value.__class__ is ast.IfExp else [value]
    return all(_batches_graphs(ctx, arm) for arm in arms)


def _batches_graphs(ctx: Context, value: AST) -> bool:
    factory = value.__class__ is ast.Call and not value.args and not value.keywords
    name = value.func if factory else value
    if name.__class__ is not ast.Name:
        return False
    found = _helper_def(ctx, name.id)
    if found is None:
        return False
    octx, func = found
    if factory:  # def batcher(): def batcher_dev(batch): ...; return batcher_dev
        ret = next((s.value for s in func.body if s.__class__ is ast.Return), None)
        func = next((s for s in func.body if s.__class__ is ast.FunctionDef and ret.__class__ is ast.Name and s.name == ret.id), None)
        if func is None:
            return False
    returns = [n for n in octx.walk_body(func.body) if n.__class__ is ast.Return and n.value is not None]
    return bool(returns) and all(_graph_value(octx, r.value.elts[0] if r.value.__class__ is ast.Tuple and r.value.elts else r.value, r)
                                 for r in returns)


def _graph_value(ctx: Context, expr: AST, at: AST) -> bool:
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, at)
        if b is None or b.kind not in ("assign", "unpack") or b.node.__class__ is not ast.Assign:
            return False
        return _graph_value(ctx, _part(b.node, expr.id), b.node)
    return expr.__class__ is ast.Call and (ctx.qualname(expr.func) or "") == "dgl.batch"


def _part(assign: ast.Assign, name: str) -> AST:
    """The value a name takes in ``a, b = dgl.batch(qs), dgl.batch(ks)`` (or ``a = dgl.batch(qs)``)."""
    target, value = assign.targets[0], assign.value
    if target.__class__ is ast.Tuple and value.__class__ is ast.Tuple and len(target.elts) == len(value.elts):
        return next((v for t, v in zip(target.elts, value.elts) if t.__class__ is ast.Name and t.id == name), value)
    return value if target.__class__ is ast.Name else assign
