"""Copies to the device that no ``.to()`` spells (TW205): a new CPU tensor used as an index of a
tensor on the accelerator (``top_vec[torch.arange(top_vec.size(0)).unsqueeze(1), clss]``, also one a
helper of the file returns, ``summary[cycle_index(n, 1)]``) or
written into one (``gain[2:6] = torch.tensor(p.shape)[[3, 2, 3, 2]]`` with ``gain`` made with
``device=``): PyTorch copies it across first, every time. Also index arrays NumPy draws on the
host (:func:`host_index_arrays`): ``idx = np.random.randint(0, n, size=b)``, then
``self._states[idx]`` of a replay buffer that ``__init__`` made with ``device=``."""

from __future__ import annotations

import ast
from typing import Callable, Iterator, TypeVar

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.cpudevices import cpu_parameter
from torchwise.lint.semantics.devices import device_move_target, file_moves_to_device, is_cpu_device, is_device_tensor
from torchwise.lint.semantics.handoff import returned_new
from torchwise.lint.semantics.starnames import star_qualname
from torchwise.lint.semantics.stored import name_positions

T = TypeVar("T")
# the factories that make index tensors and small tables worth a look (a cheap text test first)
_NEEDLES = ("arange(", "tensor(", "Tensor(", "randperm(", "randint(", "from_numpy(")


def implicit_moves(ctx: Context, made: Callable[[AST], T | None]) -> Iterator[tuple[AST, AST, T, str]]:
    """``(where to report, the device tensor, what made says of the new tensor, "indexes"|"is written into")``
    for each new CPU tensor (``made`` says so) that indexes or is written into a tensor on the device."""
    if not any(n in ctx.source for n in _NEEDLES) or not (ctx.project.moves_to_device or file_moves_to_device(ctx)):
        return
    for sub in ctx.nodes.get(ast.Subscript, ()):
        if sub.ctx.__class__ is not ast.Load:
            continue
        index = sub.slice
        parts = index.elts if index.__class__ is ast.Tuple else [index]
        for part in parts:
            if part.__class__ is not ast.Call:
                continue
            found = made(part)
            if found is None and part.func.__class__ is ast.Name:
                found = returned_new(ctx, part, made)  # summary[cycle_index(n, 1)], the helper returning torch.arange(n) + 1
            if found is not None and _on_device(ctx, sub.value, sub):
                yield part, sub.value, found, "indexes"
                break
    for stmt in ctx.nodes.get(ast.Assign, ()):
        target = stmt.targets[0] if len(stmt.targets) == 1 else None
        if target is None or target.__class__ is not ast.Subscript or stmt.value.__class__ not in (ast.Call, ast.Subscript):
            continue
        found = made(stmt.value)
        if found is not None and _on_device(ctx, target.value, stmt):
            yield stmt.value, target.value, found, "is written into"


def host_index_arrays(ctx: Context) -> Iterator[tuple[ast.Call, AST]]:
    """``(the NumPy call, the device tensor)`` for each index array that NumPy draws or counts out
    on the host (``np.random.randint/choice/permutation``, ``np.arange``) and that indexes a tensor
    on the accelerator - directly, ``fps_idx[:, np.random.choice(n, k, False)]``, or through a name
    at its first use after it was bound, ``idx = np.random.randint(0, size, size=b)`` then
    ``self._states[idx]``. Reported once, at the NumPy call."""
    if "random." not in ctx.source and "arange(" not in ctx.source or not (
            ctx.project.moves_to_device or file_moves_to_device(ctx)):
        return
    seen: set[int] = set()
    for sub in ctx.nodes.get(ast.Subscript, ()):
        if sub.ctx.__class__ is not ast.Load:
            continue
        index = sub.slice
        for part in index.elts if index.__class__ is ast.Tuple else [index]:
            call = _drawn_index(ctx, part, sub)
            if call is not None and id(call) not in seen and _on_device(ctx, sub.value, sub):
                seen.add(id(call))
                yield call, sub.value
                break


def _drawn_index(ctx: Context, part: AST, use: AST) -> ast.Call | None:
    if part.__class__ is ast.Name:
        if part.id not in _drawn_names(ctx):
            return None  # never bound to such a draw in the file: no binding to look up
        b = ctx.binding_at(part.id, use)
        if b is None or b.kind != "assign" or b.value.__class__ is not ast.Call or ctx.scope_of(b.node) is not ctx.scope_of(use):
            return None
        here = (part.lineno, part.col_offset)
        if any(b.pos <= pos < here for pos in name_positions(ctx).get(part.id, ())):
            return None  # used before: reported there, or changed on the host
        part = b.value
    return part if part.__class__ is ast.Call and _host_draw(ctx, part) else None


def _host_draw(ctx: Context, call: ast.Call) -> bool:
    q = ctx.qualname(call.func) or star_qualname(ctx, call.func, numpy=True) or ""
    if not q.startswith("numpy.random."):
        return q == "numpy.arange"
    # a draw without a size is one number: `Q[0, np.random.randint(0, n)]` is a plain integer index
    sized = _SIZE_AT.get(q[13:])
    return sized is None or len(call.args) >= sized or any(k.arg == "size" for k in call.keywords)


# NumPy draws that give one number unless given a size: the size's place among the arguments
_SIZE_AT = {"randint": 3, "choice": 2, "uniform": 3, "normal": 3, "rand": 1, "randn": 1, "random": 1,
            "random_sample": 1, "integers": 3, "binomial": 3, "poisson": 2, "exponential": 2}


def _drawn_names(ctx: Context) -> set[str]:
    """The names the file binds (``name = ...``) to a NumPy draw or ``np.arange``: the only names
    :func:`_drawn_index` can follow to one (a text of the index, once per file)."""
    found = ctx._cache.get("sem:drawn-names")
    if found is None:
        found = ctx._cache["sem:drawn-names"] = set()
        for stmt in [*ctx.nodes.get(ast.Assign, ()), *ctx.nodes.get(ast.AnnAssign, ())]:
            if stmt.value.__class__ is ast.Call and _host_draw(ctx, stmt.value):
                for t in stmt.targets if stmt.__class__ is ast.Assign else [stmt.target]:
                    if t.__class__ is ast.Name:
                        found.add(t.id)
    return found


def _device_attribute(ctx: Context, expr: AST, use: AST) -> bool:
    """``self._states`` that the class only ever sets to a torch factory given a device that is not
    the CPU (``torch.zeros((size, dim), device=device)``) or to a tensor moved with ``.to(device)``."""
    cls = ctx.class_of(use) if expr.value.__class__ is ast.Name and expr.value.id == "self" else None
    values = ctx.self_attr_values(cls, expr.attr) if cls is not None else []
    for value in values:
        if value.__class__ is not ast.Call:
            return False
        device = device_move_target(ctx, value)
        if device is None and (ctx.qualname(value.func) or "").startswith("torch."):
            device = next((k.value for k in value.keywords if k.arg == "device"), None)
        if device is None or device is not True and is_cpu_device(ctx, device, value):
            return False
        init = ctx.function_of(value)
        if device.__class__ is ast.Name and init is not None and init.name == "__init__" \
                and cpu_parameter(ctx, cls, init, device.id):
            return False  # ReplayBuffer(dim, size) everywhere, with device="cpu" by default: kept on the host
    return bool(values)


def _on_device(ctx: Context, expr: AST, use: AST) -> bool:
    """A tensor on the accelerator: a model's output or a name bound to one, or to a factory
    given ``device=`` (``gain = torch.ones(7, device=targets.device)``), or an attribute the class
    only sets so (:func:`_device_attribute`)."""
    if expr.__class__ is ast.Attribute and _device_attribute(ctx, expr, use):
        return True
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, use)
        value = b.value if b is not None and b.kind == "assign" else None
        if value is not None and value.__class__ is ast.Call and any(k.arg == "device" for k in value.keywords) \
                and (ctx.qualname(value.func) or "").startswith("torch."):
            return True
    return expr.__class__ in (ast.Name, ast.Attribute) and (is_device_tensor(ctx, expr, use) or _computed_on_device(ctx, expr, use))


_HOST = frozenset({"cpu", "numpy", "item", "tolist", "len", "int", "float", "list", "tuple", "str", "print"})


def _computed_on_device(ctx: Context, expr: AST, use: AST, depth: int = 3) -> bool:
    """``summary = torch.sigmoid(model.pool(node_emb, batch.batch))`` with ``node_emb =
    model.gnn(batch.x, ...)`` and ``batch = batch.to(device)``: a name bound to what a call computes
    from a tensor on the device (a submodule of a model handed in, a pooling function), through
    such calls and names - not a host conversion or a NumPy function."""
    if depth <= 0:
        return False
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, use)
        value = b.value if b is not None and b.kind == "assign" else None
        return value is not None and value.__class__ is ast.Call and _computed_on_device(ctx, value, b.node, depth)
    if expr.__class__ is not ast.Call or (last_name(expr.func) or "") in _HOST:
        return False
    q = ctx.qualname(expr.func) or ""
    if q.startswith(("numpy.", "math.")) or q.startswith("torch.") and not expr.args:
        return False
    return any(is_device_tensor(ctx, a, use) or _computed_on_device(ctx, a, use, depth - 1) for a in expr.args[:2])
