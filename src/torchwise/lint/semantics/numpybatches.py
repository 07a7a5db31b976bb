"""Batches that become NumPy arrays before anything reaches a device (for TW203): the loop over a
loader hands the batch's tensors (the batch, or its parts: ``batch["image"]``) to a function - of this file, or of the project module it is
imported from - whose first act is to turn them into arrays (``image, label =
image.squeeze(0).cpu().detach().numpy(), label.squeeze(0).cpu().detach().numpy()``: a volume
evaluated slice by slice, each slice resized on the host and copied on its own). The batch itself
never goes to the GPU, so pinning it would not help."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name, root_name
from torchwise.lint.semantics.projecthelpers import project_function

_WRAPPERS = frozenset({"enumerate", "tqdm", "iter"})
_MOVES = frozenset({"cuda", "to"})
# calls that only read a value on the host: sizes, text, logs
_HOST_CALLS = frozenset({"len", "print", "str", "int", "float", "format", "info", "debug", "warning", "append",
                         "size", "dim", "join", "basename"})


def _loop_sources(ctx: Context, name: str, func: AST | None) -> list[ast.For]:
    """The loops of ``func`` (None: the module's top level) over the loader ``name``."""
    loops = []
    for node in ctx.nodes.get(ast.For, ()):
        it = node.iter
        while it.__class__ is ast.Call and it.args and last_name(it.func) in _WRAPPERS:
            it = it.args[0]
        if it.__class__ is ast.Name and it.id == name and ctx.function_of(node) is func:
            loops.append(node)
    return loops


def _batch_names(loop: ast.For) -> set[str]:
    target = loop.target
    if loop.iter.__class__ is ast.Call and last_name(loop.iter.func) == "enumerate" and target.__class__ is ast.Tuple:
        target = ast.Tuple(elts=target.elts[1:])  # the index is no batch
    return {n.id for n in ast.walk(target) if n.__class__ is ast.Name}


def _mentions(node: AST, names: set[str]) -> bool:
    return any(n.__class__ is ast.Name and n.id in names for n in ast.walk(node))


def _numpy_first(where: Context, func: AST, params: set[str]) -> bool:
    """``func`` turns at least one of ``params`` into a NumPy array in the first statement that
    names it, and moves none of the others to a device as they are."""
    converted = set()
    for p in params:
        first = next((s for s in func.body if _mentions(s, {p})), None)
        if first is None or first.__class__ is not ast.Assign or len(first.targets) != 1:
            continue
        target, value = first.targets[0], first.value
        pairs = list(zip(target.elts, value.elts)) if target.__class__ is ast.Tuple and value.__class__ is ast.Tuple \
            and len(target.elts) == len(value.elts) else [(target, value)]
        for t, v in pairs:
            if t.__class__ is ast.Name and t.id == p and _mentions(v, {p}) and any(
                    n.__class__ is ast.Attribute and n.attr == "numpy" for n in ast.walk(v)):
                converted.add(p)
    if not converted:
        return False
    for node in ast.walk(func):
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in _MOVES:
            root = root_name(node.func.value)
            if root is not None and root.id in params - converted:
                return False  # another part of the batch goes to the device as it is
    return True


def batches_become_numpy(ctx: Context, call: ast.Call) -> bool:
    """Every loop over the loader built by ``call`` hands its batch only to host reads and to
    functions that turn it into NumPy first (:func:`_numpy_first`), and moves none of it itself."""
    stmt = ctx.parent(call)
    if stmt.__class__ is not ast.Assign or len(stmt.targets) != 1 or stmt.targets[0].__class__ is not ast.Name:
        return False
    loops = _loop_sources(ctx, stmt.targets[0].id, ctx.function_of(call))
    handed = False
    for loop in loops:
        derived = _batch_names(loop)
        for node in ctx.walk_body(loop.body):
            if node.__class__ is ast.Assign and _mentions(node.value, derived):
                derived |= {n.id for t in node.targets for n in ast.walk(t) if n.__class__ is ast.Name}
        for node in ctx.walk_body(loop.body):
            if node.__class__ is not ast.Call:
                continue
            func = node.func
            if func.__class__ is ast.Attribute and _mentions(func.value, derived):
                if func.attr in _MOVES:
                    return False  # the loop copies (part of) the batch itself
                continue  # a method of the batch: .size(), .numpy()
            given = {_part_of(a, derived) for a in [*node.args, *(k.value for k in node.keywords)]} - {None}
            if not given and not any(_mentions(a, derived) for a in [*node.args, *(k.value for k in node.keywords)]):
                continue
            if last_name(func) in _HOST_CALLS or (ctx.qualname(func) or "").startswith(("numpy.", "logging.", "os.", "math.")):
                continue
            found = project_function(ctx, node)
            if found is None or not given:
                return False  # the batch goes to the model, or to code we cannot see
            where, target = found
            params = _params_given(target, node, given)
            if params is None or not _numpy_first(where, target, params):
                return False
            handed = True
    return handed


def _params_given(func: AST, call: ast.Call, given: set[str]) -> set[str] | None:
    """The parameters of ``func`` that ``call`` fills with the names in ``given``."""
    names = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    out = set()
    for i, a in enumerate(call.args):
        if a.__class__ is ast.Starred:
            return None
        if _part_of(a, given) is not None and i < len(names):
            out.add(names[i])
    for k in call.keywords:
        if k.arg is None:
            return None
        if _part_of(k.value, given) is not None:
            out.add(k.arg)
    return out


def _part_of(arg: AST, names: set[str]) -> str | None:
    """The batch name ``arg`` hands on: the name itself, or a constant key, index or attribute of
    it (``sampled_batch["image"]``, ``batch[0]``, ``data.x``)."""
    while arg.__class__ in (ast.Subscript, ast.Attribute):
        if arg.__class__ is ast.Subscript and arg.slice.__class__ is not ast.Constant:
            return None
        arg = arg.value
    return arg.id if arg.__class__ is ast.Name and arg.id in names else None
