"""Reads of tensor values on the host: functions that read their arguments that way (a
``reduce_loss_dict`` calling ``.item()`` on every loss, ``SummaryWriter.add_scalar``), and
values that hold device tensors or losses."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.argreads import host_read_of_arguments, reads_of_arguments
from torchwise.lint.semantics.callshapes import Shape, call_shape, left_off
from torchwise.lint.semantics.castreads import cast_operand, loss_named, settings_gated, settings_value
from torchwise.lint.semantics.devices import is_device_tensor
from torchwise.lint.semantics.gatedreads import gated_argument
from torchwise.lint.semantics.hostnumbers import host_number
from torchwise.lint.semantics.losses import is_loss_value
from torchwise.lint.semantics.ndarrays import is_ndarray
from torchwise.lint.semantics.projectcode import function_verdict
from torchwise.lint.semantics.steps import hot_loops, is_eval_name, names_feeding_backward
from torchwise.lint.semantics.values import local_function

# logging calls that read a tensor argument on the host: method name -> index of that argument
LOGGING_READERS = {"add_scalar": 1, "add_scalars": 1, "add_histogram": 1, "log_value": 1}
# library functions among them that read what they are handed (tensorboard_logger's float(value))
_LIBRARY_READERS = frozenset({"tensorboard_logger.log_value", "tensorboard_logger.tensorboard_logger.log_value"})
_WRITER_HINTS = ("writer", "summary", "tb", "logger", "board")


def host_reader(ctx: Context, call: ast.Call) -> str | None:
    """How ``call`` reads its tensor arguments on the host, said for a message (``"it calls
    .item() on line 12"``, ``"... at models/base_model.py:318"``, ``"it reads the tensor on the host"``);
    None when it evidently does not. Evaluation helpers (``test()``, ``evaluate()``) are left
    out: reading their results is what they are for, whatever runs them - not a helper of the
    file that only reports on what it is handed (:func:`_reporter`). Kept per call."""
    key = ("sem:host-reader", id(call))
    if key not in ctx._cache:
        ctx._cache[key] = _host_reader(ctx, call)
    return ctx._cache[key]


def _host_reader(ctx: Context, call: ast.Call) -> str | None:
    func = call.func
    name = last_name(func)
    if not name or is_eval_name(name) and not _reporter(ctx, call):
        return None
    if name == "log_value":  # tensorboard_logger's, by name or as a method of its Logger; not a project's own
        built = ctx.constructed_from(func.value, call) or "" if func.__class__ is ast.Attribute else ""
        return "it reads the tensor on the host" if ctx.qualname(func) in _LIBRARY_READERS or built.startswith("tensorboard_logger.") else None
    if func.__class__ is ast.Attribute and name in LOGGING_READERS and ctx.qualname(func) is None:
        owner = (last_name(func.value) or "").lower()
        built = ctx.constructed_from(func.value, call) or ""
        writer = any(h in owner for h in _WRITER_HINTS) or built.endswith("SummaryWriter")
        return "it reads the tensor on the host" if writer else None
    target = local_function(ctx, call)
    if target is not None:
        read = _cached_host_read(ctx, target, call)
        return f"it {read[1]} on line {read[0]}" if read is not None else None
    owner = _owner_module(ctx, func, call)
    if owner is False:
        return None  # a library's function or object (torch.log, np.log, a wandb run)
    module = owner if isinstance(owner, str) else None
    where = function_verdict(ctx.project, "host_read_blocks", name, _host_read_line, module=module)
    shape = call_shape(call) if where is not None else None
    if shape is not None:  # not a read under a test of a parameter this call hands None: loss.CDAN(x, net, None)
        where = function_verdict(ctx.project, "host_read_blocks", name, lambda f: _live_read_line(f, shape),
                                 module=module, variant=shape)
    if where is None and _metric_object(ctx, func):
        where = function_verdict(ctx.project, "host_read_blocks", "__call__", _host_read_line, every=False)
    return f"it reads its arguments on the host at {where}" if where else None


def _reporter(ctx: Context, call: ast.Call) -> bool:
    """``print_eval(name, scores, labels, loss)``: a function of this file named for evaluation that
    only works on what it is handed - no loop of its own, no ``.eval()``, no ``no_grad`` - so it
    evaluates nothing itself: a metric or a progress print, called wherever the step calls it."""
    target = local_function(ctx, call)
    if target is None or target.__class__ is ast.Lambda:
        return False
    return not any(n.__class__ in (ast.For, ast.While, ast.With) or n.__class__ is ast.Call and last_name(n.func) in (
        "eval", "no_grad", "inference_mode") for n in ctx.walk_body(target.body))


def _owner_module(ctx: Context, func: AST, call: ast.Call) -> str | bool:
    """Where the project's imports say ``func`` is defined: a module's name (``log()`` of
    ``logger = Logger(...)`` with ``from utils import Logger``: ``"utils"``), ``True`` when it
    is the project's but its file is not known (a package, this file), ``False`` when the name
    resolves to a library (``torch.log``)."""
    if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id in ("self", "cls"):
        return True  # a method of the class or of a base class elsewhere in the project
    dotted = ctx.qualname(func)
    if dotted is None and func.__class__ is ast.Attribute:
        if _container(ctx, func.value, call):
            return False  # metrics.update(...) of metrics = dict(): a container's method
        dotted = ctx.constructed_from(func.value, call)
    if dotted is None or dotted.startswith("local:"):
        return True
    parts = dotted.lstrip(".").split(".")[:-1]
    if not parts:
        return True
    files, folders = _project_modules(ctx)
    if parts[-1] in files:
        return parts[-1]
    return parts[-1] in folders or parts[0] in folders


_CONTAINERS = frozenset({"dict", "list", "set", "OrderedDict", "defaultdict", "deque", "Counter"})


def _container(ctx: Context, expr: AST, use: AST) -> bool:
    """A name bound to a dict, list or set (a literal, ``dict()``, ``OrderedDict()``)."""
    b = ctx.binding_at(expr.id, use) if expr.__class__ is ast.Name else None
    value = b.value if b is not None and b.kind == "assign" else None
    return value.__class__ in (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp) or (
        value.__class__ is ast.Call and (last_name(value.func) or "") in _CONTAINERS)


def _project_modules(ctx: Context) -> tuple[frozenset[str], frozenset[str]]:
    """The stems of the project's files and the names of its folders."""
    key = ("sem:project-modules",)
    found = ctx.project.answers.get(key) if ctx.project.files else None
    if found is None:
        paths = [p.replace("\\", "/") for p, _ in ctx.project.files] or [ctx.path.replace("\\", "/")]
        files = frozenset(p.rsplit("/", 1)[-1].rsplit(".", 1)[0] for p in paths)
        folders = frozenset(part for p in paths for part in p.split("/")[:-1] if part)
        found = (files, folders)
        if ctx.project.files:
            ctx.project.answers[key] = found
    return found


def _metric_object(ctx: Context, func: AST) -> bool:
    """``metric(outputs, target)`` with ``for metric in metrics``: a metric object (not a
    function of the project) whose ``__call__`` is one of the project's."""
    if func.__class__ is not ast.Name or "metric" not in func.id.lower():
        return False
    b = ctx.binding_at(func.id, func)
    return b is not None and b.kind in ("for", "param", "assign")


def _host_read_line(func: AST) -> int | None:
    read = host_read_of_arguments(func)
    return read[0] if read is not None else None


def _live_read_line(func: AST, shape: Shape) -> int | None:
    read = host_read_of_arguments(func, lambda param: not left_off(func, shape, param))
    return read[0] if read is not None else None


def _cached_host_read(ctx: Context, func: AST, call: ast.Call) -> tuple[int, str] | None:
    """The first read of ``func`` that ``call`` runs: not one under a test of a parameter the
    call hands nothing, ``None``, or a sink kept only at intervals (:func:`.gated_argument`)."""
    key = ("sem:hostread", id(func))
    reads = ctx._cache.get(key)
    if reads is None:
        reads = ctx._cache[key] = reads_of_arguments(func)
    for line, what, guard in reads:
        if guard is None or not gated_argument(ctx, call, func, guard):
            return line, what
    return None


def read_in_own_loop(ctx: Context, target: AST, call: ast.Call) -> bool:
    """Does the first read of the file's function ``target`` that ``call`` runs lie in a training
    loop of ``target`` itself (a learner's ``_train_critic`` stepping the critic per time step)? It
    is judged where it is, once per step of that loop, not again at every call."""
    read = _cached_host_read(ctx, target, call)
    return read is not None and any(
        loop.lineno <= read[0] <= (loop.end_lineno or loop.lineno) and ctx.function_of(loop) is target
        for loop in hot_loops(ctx).values())


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
    if is_device_tensor(ctx, expr, use):
        return True
    # a loss, or a term of the loss that is backpropagated in this function (l_total += l_pix); not a
    # Python number weighted into it (a ramp-up weight from a helper returning float(...))
    return (is_loss_value(ctx, expr, use) or expr.__class__ is ast.Name and expr.id in names_feeding_backward(ctx, ctx.scope_of(use))
            and not _moved_later(ctx, expr, use) and not is_ndarray(ctx, expr, use, methods=True)) and not host_number(ctx, expr, use)
    # (a NumPy array feeds the backward pass only through its conversion: one_hot = index_to_one_hot(actions, n) of a
    # project helper returning np.zeros(...), then to_tensor_var(one_hot): host data handed to a converter)


def _moved_later(ctx: Context, name: ast.Name, use: AST) -> bool:
    """``x`` read before the line that moves it to the device (``x, lengths = to_cuda(x, lengths)``,
    ``x = x.cuda()``): what feeds the backward pass is the moved copy; here it is still the host's."""
    pos = (use.lineno, use.col_offset)
    for b in ctx.bindings(ctx.scope_of(use)).get(name.id, ()):
        value = b.value
        if b.pos > pos and b.kind in ("assign", "unpack") and value.__class__ is ast.Call and any(
                a.__class__ is ast.Name and a.id == name.id for a in [value.func.value if value.func.__class__ is ast.Attribute
                                                                    else None, *value.args]):
            words = (last_name(value.func) or "").lower()
            if words in ("cuda", "to") or "cuda" in words or "device" in words:
                return True
    return False


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


# methods that log or collect a value read on the host (a per-step read there is the pitfall)


def own_loss_reads(ctx: Context, func: AST) -> list[ast.Call]:
    """``.item()`` (or ``float()``/``int()``) of the losses a loss function computes itself and hands
    back for logging (``return loss, Munch(real=loss_real.item(), fake=loss_fake.item())``,
    ``loss_dict['l2'] = float(loss_l2)``): outside any loop of its own and any ``if`` but a test of
    the run's settings (``if self.opts.l2_lambda > 0:``), on a name the function binds to a loss."""
    key = ("sem:own-loss-reads", id(func))
    found = ctx._cache.get(key)
    if found is None:
        found = []
        for node in ctx.walk_body(func.body):
            if node.__class__ is not ast.Call:
                continue
            if node.func.__class__ is ast.Attribute and node.func.attr == "item":
                recv = node.func.value
            elif (recv := cast_operand(ctx, node)) is None:  # float(loss_l2): the same read (semantics.castreads)
                continue
            if recv.__class__ is not ast.Name or ctx.enclosing_loops(node) or not settings_gated(ctx, node):
                continue
            b = ctx.binding_at(recv.id, node)
            if b is None or b.kind not in ("assign", "aug") or ctx.function_of(b.node) is not func \
                    or node.func.__class__ is ast.Name and (host_number(ctx, recv, node) or settings_value(b.value)
                                                            or b.kind == "aug" and host_number(ctx, b.value, b.node)):
                continue
            if b.kind == "aug":  # dis_loss += (real + fake) / 2: a sum of loss terms (total += percept_loss * w: a cast's)
                if "loss" in recv.id.lower() or node.func.__class__ is ast.Name and loss_named(b.value):
                    found.append(node)
                continue
            if is_loss_value(ctx, recv, node) or ("loss" in recv.id.lower() and b.value.__class__ in (ast.Call, ast.BinOp, ast.UnaryOp)):
                found.append(node)  # loss_real = adv_loss(out, 1): a loss by its name and making
        ctx._cache[key] = found
    return found


def printed_tensor(ctx: Context, call: ast.Call) -> ast.AST | None:
    """The device tensor ``print(...)`` shows: an argument, an f-string field, a ``.format()`` or
    ``%``-format argument."""
    for arg in call.args:
        if arg.__class__ is ast.Name:
            if is_device_tensor(ctx, arg, call):
                return arg
        elif arg.__class__ is ast.JoinedStr:
            for part in arg.values:
                if part.__class__ is ast.FormattedValue and part.value.__class__ is ast.Name and is_device_tensor(ctx, part.value, call):
                    return part.value
        elif arg.__class__ is ast.Call and arg.func.__class__ is ast.Attribute and arg.func.attr == "format":
            for part in arg.args:  # print("loss {:.4f}".format(loss)): formatting reads the value
                if part.__class__ is ast.Name and is_device_tensor(ctx, part, call):
                    return part
        elif arg.__class__ is ast.BinOp and arg.op.__class__ is ast.Mod and arg.left.__class__ is ast.Constant \
                and isinstance(arg.left.value, str):  # print("loss %.4f" % (step, loss)): %-formatting reads it too
            parts = arg.right.elts if arg.right.__class__ is ast.Tuple else [arg.right]
            for part in parts:
                if part.__class__ is ast.Name and is_device_tensor(ctx, part, call):
                    return part
    return None


_COMPARE_OPS = (ast.Lt, ast.Gt, ast.LtE, ast.GtE, ast.Eq, ast.NotEq)
_PREDICATES = frozenset({"isnan", "isinf", "isfinite", "any", "all", "equal", "allclose"})


def tensor_test(ctx: Context, test: ast.AST, use: ast.AST) -> ast.AST | None:
    """The part of an ``if``/``while`` test that needs a device value on the host, if any."""
    cls = test.__class__
    if cls is ast.BoolOp:
        for v in test.values:
            found = tensor_test(ctx, v, use)
            if found is not None:
                return found
        return None
    if cls is ast.UnaryOp and test.op.__class__ is ast.Not:
        return tensor_test(ctx, test.operand, use)
    if cls is ast.Compare:
        if len(test.ops) == 1 and test.ops[0].__class__ in (ast.In, ast.NotIn):
            # `if class_id in y:`: a tensor's __contains__ is (y == class_id).any(), read as a Python bool
            if test.left.__class__ is ast.Constant and isinstance(test.left.value, str):
                return None  # 'reduce_sim' in outputs: a key of a dict the model returned
            return test if _plain_tensor(ctx, test.comparators[0], use) else None
        if not all(op.__class__ in _COMPARE_OPS for op in test.ops):
            return None
        if any(c.__class__ is ast.Constant and c.value is None for c in [test.left, *test.comparators]):
            return None
        if any(is_loop_counter(ctx, c) for c in [test.left, *test.comparators]):
            return None  # `if i == start:`: a pass counter compared with a number read once
        for side in [test.left, *test.comparators]:
            if _plain_tensor(ctx, side, use):
                return test
        return None
    if cls is ast.Call:
        name = last_name(test.func)
        if name in _PREDICATES:
            q = ctx.qualname(test.func)
            if q is not None:
                if q.startswith("torch.") and test.args and _plain_tensor(ctx, test.args[0], use):
                    return test
            elif test.func.__class__ is ast.Attribute and _plain_tensor(ctx, _compared(test.func.value), use):
                return test
        return None
    if cls is ast.Name and _plain_tensor(ctx, test, use):
        return test
    return None


def _compared(expr: ast.AST) -> ast.AST:
    """The tensor a one-sided comparison tests (``grad_norms`` of ``(grad_norms == 0).any()``)."""
    if expr.__class__ is ast.Compare and len(expr.comparators) == 1:
        left, right = expr.left, expr.comparators[0]
        return right if left.__class__ is ast.Constant else left
    return expr


def _plain_tensor(ctx: Context, expr: ast.AST, use: ast.AST) -> bool:
    """A device tensor used as is (not via .item(), .shape, len(), ...)."""
    if expr.__class__ is ast.Attribute:
        return False  # .shape, .device, .requires_grad, self.x ...
    if expr.__class__ is ast.Call:
        func = expr.func
        if func.__class__ is ast.Name:
            return False  # len(x), float(x) (float() is reported as its own .item-like sync? no)
        if func.__class__ is ast.Attribute and func.attr in ("size", "dim", "numel", "item", "tolist", "cpu", "numpy"):
            return False
    return is_device_tensor(ctx, expr, use)
