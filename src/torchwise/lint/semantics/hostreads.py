"""Reads of tensor values on the host: functions that read their arguments that way (a
``reduce_loss_dict`` calling ``.item()`` on every loss, ``SummaryWriter.add_scalar``), and
values that hold device tensors or losses."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, argument, last_name, root_name
from torchwise.lint.semantics.devices import SYNC_METHODS, is_device_tensor
from torchwise.lint.semantics.losses import is_loss_value
from torchwise.lint.semantics.projectcode import function_verdict
from torchwise.lint.semantics.steps import is_eval_name, is_optimizer_step, names_feeding_backward
from torchwise.lint.semantics.values import local_function

# logging calls that read a tensor argument on the host: method name -> index of that argument
LOGGING_READERS = {"add_scalar": 1, "add_scalars": 1, "add_histogram": 1}
_WRITER_HINTS = ("writer", "summary", "tb", "logger", "board")
_READS = SYNC_METHODS - {"cpu"}  # .cpu() alone may move a module; .item()/.tolist()/.numpy() read values


def _derived(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names that carry (part of) the function's arguments: the parameters, and names assigned
    or looped over from them (``for name, value in loss_dict.items()``)."""
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]]
    derived = {p for p in params if p not in ("self", "cls")}
    flows = []  # (names read, names bound) of each binding statement
    for node in ast.walk(func):
        cls = node.__class__
        if cls in (ast.Assign, ast.For, ast.comprehension, ast.AugAssign):
            source = node.iter if cls in (ast.For, ast.comprehension) else node.value
            targets = node.targets if cls is ast.Assign else [node.target]
            reads = {n.id for n in ast.walk(source) if n.__class__ is ast.Name}
            binds = {n.id for t in targets for n in ast.walk(t) if n.__class__ is ast.Name}
            flows.append((reads, binds))
    for _ in range(3):  # a few passes reach names bound from names bound from parameters
        before = len(derived)
        for reads, binds in flows:
            if reads & derived:
                derived |= binds
        if len(derived) == before:
            break
    return derived


def host_read_of_arguments(func: AST) -> ast.Call | None:
    """The first ``.item()``/``.tolist()``/``.numpy()`` in ``func`` on a value that comes from
    its arguments (not from ``self``): ``func`` reads what it is given on the host."""
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return None
    derived = _derived(func)
    for node in ast.walk(func):
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in _READS:
            root = root_name(node.func.value)
            if root is not None and root.id in derived:
                return node
    return None


def host_reader(ctx: Context, call: ast.Call) -> str | None:
    """How ``call`` reads its tensor arguments on the host, said for a message (``"it calls
    .item() on line 12"``, ``"... at models/base_model.py:318"``, ``"it reads the tensor on the host"``);
    None when it evidently does not. Evaluation helpers (``test()``, ``evaluate()``) are left
    out: reading their results is what they are for, whatever runs them."""
    func = call.func
    name = last_name(func)
    if not name or is_eval_name(name):
        return None
    if func.__class__ is ast.Attribute and name in LOGGING_READERS and ctx.qualname(func) is None:
        owner = (last_name(func.value) or "").lower()
        built = ctx.constructed_from(func.value, call) or ""
        writer = any(h in owner for h in _WRITER_HINTS) or built.endswith("SummaryWriter")
        return "it reads the tensor on the host" if writer else None
    target = local_function(ctx, call)
    if target is not None:
        read = _cached_host_read(ctx, target)
        return f"it calls .{read.func.attr}() on line {read.lineno}" if read is not None else None
    where = function_verdict(ctx.project, "host_read_blocks", name, _host_read_line)
    return f"it reads its arguments with .item() or the like at {where}" if where else None


def _host_read_line(func: AST) -> int | None:
    read = host_read_of_arguments(func)
    return read.lineno if read is not None else None


def _cached_host_read(ctx: Context, func: AST) -> ast.Call | None:
    key = ("sem:hostread", id(func))
    if key not in ctx._cache:
        ctx._cache[key] = host_read_of_arguments(func)
    return ctx._cache[key]


def read_arguments(ctx: Context, call: ast.Call) -> list[AST]:
    """The arguments of ``call`` that its host read applies to."""
    index = LOGGING_READERS.get(last_name(call.func) or "")
    if index is not None and local_function(ctx, call) is None:
        return [call.args[index]] if len(call.args) > index else [k.value for k in call.keywords if k.arg == "scalar_value"]
    return [*call.args, *(k.value for k in call.keywords)]


def holds_device_values(ctx: Context, expr: AST, use: AST) -> bool:
    """A device tensor or a loss, or a dict/list that collects them (``loss_dict["l_pix"] = l_pix``,
    ``{"ce": loss}``)."""
    if _device_value(ctx, expr, use):
        return True
    if expr.__class__ is ast.Dict:
        return any(v is not None and _device_value(ctx, v, use) for v in expr.values)
    if expr.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(expr.id, use)
    if b is None or b.kind != "assign":
        return False
    if b.value.__class__ is ast.Dict and holds_device_values(ctx, b.value, b.node):
        return True
    scope = ctx.scope_of(use)
    for node in ctx.walk_body(getattr(scope, "body", [])):
        if node.__class__ is ast.Assign and any(
            t.__class__ is ast.Subscript and t.value.__class__ is ast.Name and t.value.id == expr.id for t in node.targets
        ):  # loss_dict[key] = value
            if _device_value(ctx, node.value, node):
                return True
        elif node.__class__ is ast.Call and last_name(node.func) == "append" and node.func.__class__ is ast.Attribute:
            if node.func.value.__class__ is ast.Name and node.func.value.id == expr.id and node.args:
                if _device_value(ctx, node.args[0], node):
                    return True
    return False


def _device_value(ctx: Context, expr: AST, use: AST) -> bool:
    if is_device_tensor(ctx, expr, use) or is_loss_value(ctx, expr, use):
        return True
    # a term of the loss that is backpropagated in this function (l_total += l_pix)
    return expr.__class__ is ast.Name and expr.id in names_feeding_backward(ctx, ctx.scope_of(use))


def is_loop_counter(ctx: Context, expr: AST) -> bool:
    """A Python int counting passes: the target of ``for i in range(...)`` or the index of
    ``for i, x in enumerate(...)``."""
    if expr.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(expr.id, expr)
    if b is None or b.kind != "for" or b.value.__class__ is not ast.Call:
        return False
    name = last_name(b.value.func)
    return (name in ("range", "trange") and b.index == -1) or (name == "enumerate" and b.index == 0)
