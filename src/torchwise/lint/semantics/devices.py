"""Devices and tensors: device and dtype expressions, moves to a device, evidence that code
targets a GPU, and values that evidently hold a tensor on the accelerator."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, SCOPE_TYPES, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.factorynames import COMMON
from torchwise.lint.semantics.globalnames import every_global, placeholder
from torchwise.lint.semantics.importedtensors import imported_device_tensor
from torchwise.lint.semantics.losses import is_loss_call, is_loss_value
from torchwise.lint.semantics.mappedmoves import maps_a_move
from torchwise.lint.semantics.models import is_module_instance
from torchwise.lint.semantics.unpackednames import unpacked_value
from torchwise.lint.semantics.values import local_function


_DEVICE_STR = lazy_compile(r"^(cuda|cpu|mps|xpu|hpu|meta|npu|xla)(:\d+)?$")
_DEVICE_NAMES = frozenset({"rank", "local_rank", "gpu", "gpu_id", "device_id", "devices", "dev"})
DTYPES = frozenset({
    "float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "int8", "int16",
    "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble",
    "float8_e4m3fn", "float8_e5m2",
})
# Tensor methods that keep a value on the device it was on (used to follow a chain to its root).
_DEVICE_KEEPING = frozenset({
    "detach", "float", "double", "half", "mean", "sum", "max", "min", "abs", "argmax", "argmin",
    "softmax", "log_softmax", "sigmoid", "eq", "ne", "gt", "lt", "ge", "le", "squeeze", "unsqueeze",
    "view", "reshape", "flatten", "norm", "sqrt", "exp", "log", "clone", "contiguous", "long", "int",
    "isnan", "isinf", "isfinite", "any", "all", "clamp", "pow", "mul", "add", "sub", "div", "topk",
    "sort", "to_dense", "type_as", "repeat", "expand", "std", "var", "gather", "index_select", "masked_fill",
    "permute", "transpose", "t", "prod", "cumsum", "square", "neg", "tanh", "relu", "log1p", "expm1", "round",
    "sign", "clamp_min", "clamp_max", "logsumexp", "amax", "amin", "maximum", "minimum",
})
# Collectives of a distributed helper (``accelerator.gather(x)``): the result stays on x's device.
_GATHERS = frozenset({"gather", "gather_for_metrics", "all_gather", "reduce"})
_BACKWARD_OWNERS = frozenset({"accelerator", "fabric", "engine", "model_engine", "trainer", "self"})
SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})
_GRAD_NORMS = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_norm_"})


def is_device_expr(ctx: Context, expr: AST | None, use: AST | None = None, depth: int = 3) -> bool:
    """Does ``expr`` evidently denote a device (not a dtype, not a tensor)?"""
    if expr is None or depth <= 0:
        return False
    cls = expr.__class__
    if cls is ast.Constant:
        return isinstance(expr.value, str) and bool(_DEVICE_STR.match(expr.value))
    if cls is ast.Call:
        q = ctx.qualname(expr.func)
        if (q is None or not q.startswith("torch.")) and not expr.args:
            # model._device(), self.get_device(), a project helper's get_device(): a getter of the device
            name = (last_name(expr.func) or "").lower()
            return "device" in name and not name.startswith(("set", "to_", "move"))
        return q == "torch.device"
    if cls is ast.Attribute:  # (args.device.type: the device's kind, "cuda")
        return "device" in expr.attr.lower() or expr.attr in _DEVICE_NAMES or expr.attr == "type" and is_device_expr(ctx, expr.value, use, depth - 1)
    if cls is ast.IfExp:
        return is_device_expr(ctx, expr.body, use, depth - 1) and is_device_expr(ctx, expr.orelse, use, depth - 1)
    if cls is ast.Name:
        low = expr.id.lower()
        if "device" in low or low in _DEVICE_NAMES:
            return True
        b = ctx.binding_at(expr.id, use or expr)
        if b is None or placeholder(ctx, b):  # global cuda; cuda = torch.device('cuda') in main()
            return every_global(ctx, expr.id, lambda v: is_device_expr(ctx, v, v, depth - 1))
        if b.kind == "assign":
            return is_device_expr(ctx, b.value, b.node, depth - 1)
    return False


def is_cpu_device(ctx: Context, expr: AST, use: AST, depth: int = 2) -> bool:
    """``"cpu"``, ``torch.device("cpu")``, or a name bound to one of them in this scope."""
    cls = expr.__class__
    if cls is ast.Constant:
        return expr.value == "cpu"
    if cls is ast.Call:
        return ctx.qualname(expr.func) == "torch.device" and len(expr.args) == 1 and is_cpu_device(ctx, expr.args[0], use, 0)
    if cls is ast.Name and depth > 0:
        b = ctx.binding_at(expr.id, use)
        return b is not None and b.kind == "assign" and is_cpu_device(ctx, b.value, b.node, depth - 1)
    return False


def is_dtype_expr(ctx: Context, expr: AST | None) -> bool:
    if expr is None:
        return False
    q = ctx.qualname(expr)
    if q is not None and q.startswith("torch.") and q.rsplit(".", 1)[1] in DTYPES:
        return True
    name = last_name(expr)
    return bool(name and "dtype" in name.lower())


def device_move_target(ctx: Context, call: ast.Call) -> AST | bool | None:
    """For ``x.cuda(...)`` -> True; for ``x.to(device, ...)`` -> the device expression; else None."""
    func = call.func
    if func.__class__ is not ast.Attribute:
        return None
    if func.attr == "cuda":
        if ctx.qualname(func) is not None:  # torch.cuda is a module, not a method call
            return None
        return True
    if func.attr == "to":
        kw = None
        for k in call.keywords:
            if k.arg == "device":
                kw = k.value
        if kw is not None:
            return kw
        if call.args and is_device_expr(ctx, call.args[0], call):
            return call.args[0]
    return None


def _gpu_evidence(ctx: Context) -> list[AST]:
    """The nodes that show the file targets a GPU: ``.cuda()``, a ``"cuda"`` string, ``torch.cuda``."""
    found = ctx._cache.get("sem:gpu")
    if found is None:
        found = []
        if "cuda" in ctx.source:
            found += [c for c in ctx.calls_named("cuda") if c.func.__class__ is ast.Attribute and ctx.qualname(c.func) is None]
            found += [n for n in ctx.nodes.get(ast.Constant, ()) if isinstance(n.value, str) and n.value.startswith("cuda") and _DEVICE_STR.match(n.value)]
            found += [n for n in ctx.nodes.get(ast.Attribute, ()) if n.attr == "cuda" and ctx.qualname(n) == "torch.cuda"]
        ctx._cache["sem:gpu"] = found
    return found


def gpu_evident(ctx: Context) -> bool:
    """Does the file evidently target a GPU (``.cuda()``, a ``"cuda"`` string, ``torch.cuda``)?"""
    return bool(_gpu_evidence(ctx))


def file_moves_to_device(ctx: Context) -> bool:
    """Does the file move something to a device (``.to(self.device)``, ``.cuda()``) anywhere?"""
    found = ctx._cache.get("sem:filemoves")
    if found is None:
        found = any(device_move_target(ctx, c) is not None for c in ctx.calls_named("to", "cuda"))
        ctx._cache["sem:filemoves"] = found
    return found


def moves_near(ctx: Context, node: AST) -> bool:
    """Does the function around ``node``, or another method of its class, move data to a device?"""
    func = ctx.function_of(node)
    if func is None:
        return False
    klass = ctx.class_of(node)
    scopes = [m for m in klass.body if m.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)] if klass else [func]
    return any(scope_moves_to_device(ctx, m, 0) for m in scopes)


def gpu_evident_near(ctx: Context, node: AST) -> bool:
    """The file targets a GPU (:func:`gpu_evident`), or the code around ``node`` (its function or
    class) moves data to a device chosen elsewhere (``.to(self.device)``, the device set in a
    base class or a helper of another module) in a project that names CUDA."""
    return gpu_evident(ctx) or (ctx.project.targets_gpu and file_moves_to_device(ctx) and moves_near(ctx, node))


def gpu_evident_for(ctx: Context, node: AST) -> bool:
    """Is there GPU evidence that ``node`` sees: in its own function, an enclosing one, or at module
    level? (A file may mix CPU-only functions with GPU ones, e.g. tests or benchmarks.)"""
    evidence = _gpu_evidence(ctx)
    if not evidence:
        return False
    scopes = {id(ctx.tree)} | {id(a) for a in ctx.ancestors(node) if isinstance(a, SCOPE_TYPES)}
    return any(id(ctx.scope_of(e)) in scopes for e in evidence)


_PLACERS = frozenset({"setup", "setup_module", "setup_dataloaders", "prepare", "prepare_model", "prepare_data_loader"})


def scope_moves_to_device(ctx: Context, scope: AST, depth: int = 1) -> bool:
    """Does this function (or module) put data on a device: ``.cuda()``/``.to(device)``, a
    Fabric/Accelerate ``setup``/``prepare`` (which place model and batches), or a call of a
    function of this file that moves what it returns (``x, y = get_batch()``)?"""
    key = ("sem:moves", id(scope), depth)
    found = ctx._cache.get(key)
    if found is None:
        found = any(ctx.scope_of(c) is scope and device_move_target(ctx, c) is not None for c in ctx.calls_named("cuda", "to"))
        if not found:
            for call in ctx.calls_named(*_PLACERS):
                func = call.func
                if func.__class__ is ast.Attribute and ctx.scope_of(call) is scope and _is_placer(func.value):
                    found = True
                    break
        if not found and depth > 0:
            for call in ctx.nodes.get(ast.Call, ()):
                if ctx.scope_of(call) is scope and returns_device_data(ctx, call, depth - 1):
                    found = True
                    break
        ctx._cache[key] = found
    return found


def _is_placer(expr: AST) -> bool:
    name = (last_name(expr) or "").lower()
    return "fabric" in name or "accelerator" in name


def returns_device_data(ctx: Context, call: ast.Call, depth: int = 0) -> bool:
    """A call of a function of this file that moves data to a device and returns it."""
    if call.func.__class__ is not ast.Name:
        return False
    func = local_function(ctx, call)
    if func is None or func.__class__ is ast.Lambda:
        return False
    if not any(n.__class__ is ast.Return and n.value is not None for n in ast.walk(func)):
        return False
    return scope_moves_to_device(ctx, func, depth)


def _moving_method(ctx: Context, call: ast.Call) -> bool:
    """``images, masks = self.cuda(*items)`` with ``def cuda(self, *args): return (x.to(self.device)
    for x in args)``: a method of the file's class every ``return`` of which hands back its
    arguments moved to a device (a generator, list or tuple of moves)."""
    if call.func.__class__ is not ast.Attribute or not (call.args or call.keywords):
        return False
    func = local_function(ctx, call)
    if func is None or func.__class__ is ast.Lambda:
        return False
    returns = [n.value for n in ast.walk(func) if n.__class__ is ast.Return]
    return bool(returns) and all(_moved_items(ctx, r) for r in returns)


def _moved_items(ctx: Context, value: AST | None) -> bool:
    if value.__class__ in (ast.GeneratorExp, ast.ListComp):
        value = value.elt
    elif value.__class__ is ast.Call and value.func.__class__ is ast.Name and value.func.id in ("tuple", "list") \
            and len(value.args) == 1 and value.args[0].__class__ in (ast.GeneratorExp, ast.ListComp):
        value = value.args[0].elt
    elif value.__class__ in (ast.Tuple, ast.List) and value.elts:
        return all(_moved_items(ctx, e) for e in value.elts)
    if value.__class__ is not ast.Call:
        return False
    target = device_move_target(ctx, value)
    return target is not None and (target is True or not is_cpu_device(ctx, target, value))


def is_device_tensor(ctx: Context, expr: AST | None, use: AST | None = None, depth: int = 8) -> bool:
    """Does ``expr`` evidently hold a tensor computed on the accelerator?

    Yes for a loss, the output of a model call, the result of ``.cuda()``/``.to(device)``, and
    arithmetic or device-keeping methods (``.detach()``, ``.sum()``, ``argmax``...) of those,
    also through a helper that reduces or gathers it across processes (``reduce_tensor(loss)``).
    No for anything that went through ``.cpu()``/``.item()``/``.numpy()``/``.tolist()``.
    ``depth`` bounds the assignments followed back from a name; the parts of one expression
    are all looked at.
    """
    if expr is None or depth <= 0:
        return False
    use = use or expr
    cls = expr.__class__
    if cls is ast.Name:
        return _name_holds_device_tensor(ctx, expr, use, depth)
    if cls is ast.Call:
        return _call_gives_device_tensor(ctx, expr, use, depth)
    if cls is ast.BinOp:
        return is_device_tensor(ctx, expr.left, use, depth) or is_device_tensor(ctx, expr.right, use, depth)
    if cls is ast.Compare:
        return is_device_tensor(ctx, expr.left, use, depth) or any(
            is_device_tensor(ctx, c, use, depth) for c in expr.comparators
        )
    if cls is ast.UnaryOp:
        return is_device_tensor(ctx, expr.operand, use, depth)
    if cls is ast.Subscript:
        return is_device_tensor(ctx, expr.value, use, depth)
    if cls is ast.Attribute and expr.attr not in _METADATA and not expr.attr.startswith(("num_", "n_")):
        # loss.data, out.logits, and the fields of a batch object moved whole (data = data.to(device);
        # data.train_mask): parts of a device value; not its .shape, .device, .num_nodes
        if expr.value.__class__ is ast.Name and expr.value.id in ("self", "cls"):
            return False
        return is_device_tensor(ctx, expr.value, use, depth - 1)
    return False


# pre-0.4 wrappers and einops' reshapes (rearrange(x, 'b c h w -> b (h w) c')): the result is on their tensor's device
_WRAPPERS = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable", "einops.rearrange", "einops.repeat", "einops.reduce"})
# attributes of a tensor or batch object that are plain Python values, not device tensors
_METADATA = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "grad_fn", "layout",
                       "is_leaf", "names", "batch_size", "size"})


def _name_holds_device_tensor(ctx: Context, expr: ast.Name, use: AST, depth: int) -> bool:
    if is_loss_value(ctx, expr, use):
        return True
    b = ctx.binding_at(expr.id, use)
    if b is None:
        return False
    if b.kind == "import":  # from utils import std, of std = torch.tensor(...).cuda() in utils.py
        return b.node.__class__ is ast.ImportFrom and imported_device_tensor(ctx, expr.id, b.node)
    if b.kind in ("assign", "walrus", "aug"):
        return is_device_tensor(ctx, b.value, b.node, depth - 1)
    if b.kind == "unpack" and b.value is not None:
        if (value := unpacked_value(ctx, b)).__class__ is ast.Call:  # (output, z, q = model_output: semantics.unpackednames)
            return _is_model_call(ctx, value) or returns_device_data(ctx, value) or _moving_method(ctx, value)
        if b.value.__class__ in (ast.Tuple, ast.List) and 0 <= b.index < len(b.value.elts):
            return is_device_tensor(ctx, b.value.elts[b.index], b.node, depth - 1)  # x, y = x.to(d), y.to(d)
    return False


# libraries whose functions named like a reduction are not collectives over tensors
_NOT_COLLECTIVES = ("functools.", "operator.", "numpy.", "builtins.", "torch.")


def _collective_result(ctx: Context, expr: ast.Call, use: AST, depth: int) -> bool:
    """``accelerator.gather(x)``, ``reduce_tensor(loss, n)``, ``utils.all_reduce_mean(x)``: a
    helper that reduces or gathers a device tensor across processes returns one."""
    func = expr.func
    name = (last_name(func) or "").lower()
    q = ctx.qualname(func)
    if func.__class__ is ast.Attribute and func.attr in _GATHERS and q is None:
        return bool(expr.args) and is_device_tensor(ctx, expr.args[0], use, depth)
    if ("reduce" in name or "gather" in name) and not (q or "").startswith(_NOT_COLLECTIVES):
        return any(is_device_tensor(ctx, a, use, depth) for a in expr.args[:2])
    return False


def _call_gives_device_tensor(ctx: Context, expr: ast.Call, use: AST, depth: int) -> bool:
    func = expr.func
    target = device_move_target(ctx, expr)
    if target is not None:
        return target is True or not is_cpu_device(ctx, target, expr)  # not x.to(loss_device), loss_device = torch.device("cpu")
    if _is_model_call(ctx, expr) or is_loss_call(ctx, expr) or returns_device_data(ctx, expr):
        return True
    if any(a.__class__ is ast.Lambda for a in expr.args) and maps_a_move(expr, lambda c: _moves_to_accelerator(ctx, c)):
        return True  # nest.map(lambda t: t.to(device), batch): semantics.mappedmoves
    q = ctx.qualname(func)
    if q is not None and q.startswith("torch.") and q.rsplit(".", 1)[1] in COMMON:
        dev = next((k.value for k in expr.keywords if k.arg == "device"), None)
        # torch.randint(..., device=latents.device): made on the device (not a "cpu" literal)
        return dev is not None and not (dev.__class__ is ast.Constant and dev.value == "cpu") and is_device_expr(ctx, dev, use)
    if _collective_result(ctx, expr, use, depth):
        return True
    if q in _GRAD_NORMS:
        return gpu_evident(ctx)  # the total norm, a tensor on the parameters' device
    if q in _WRAPPERS and expr.args:  # Variable(delta.data, requires_grad=True): the same storage, the same device
        return is_device_tensor(ctx, expr.args[0], use, depth - 1)
    if func.__class__ is ast.Attribute:
        if func.attr in SYNC_METHODS:
            return False
        if func.attr in ("stack", "cat", "concat") and expr.args and q in ("torch.stack", "torch.cat", "torch.concat"):
            # torch.stack([x] * n), torch.cat((a, b)): on the device of the parts
            parts = expr.args[0]
            if parts.__class__ is ast.BinOp:
                parts = parts.left if parts.left.__class__ in (ast.List, ast.Tuple) else parts.right
            elts = parts.elts if parts.__class__ in (ast.List, ast.Tuple) else []
            return any(is_device_tensor(ctx, e, use, depth) for e in elts)
        if func.attr == "to" and q is None:
            return is_device_tensor(ctx, func.value, use, depth)  # pred.to(torch.float32): a dtype change
        if func.attr in _DEVICE_KEEPING:
            if q is not None:  # torch.argmax(out, 1) and friends (math.isnan(x) is a Python bool)
                return q.startswith("torch.") and bool(expr.args) and is_device_tensor(ctx, expr.args[0], use, depth)
            return is_device_tensor(ctx, func.value, use, depth)
    return False


def _moves_to_accelerator(ctx: Context, call: ast.Call) -> bool:
    target = device_move_target(ctx, call)
    return target is not None and (target is True or not is_cpu_device(ctx, target, call))


def _is_model_call(ctx: Context, call: ast.Call) -> bool:
    func = call.func
    if func.__class__ not in (ast.Name, ast.Attribute):
        return False
    if func.__class__ is ast.Attribute and func.attr == "forward":
        return is_module_instance(ctx, func.value, call)
    return is_module_instance(ctx, func, call)


_EXITS = frozenset({"exit", "_exit", "quit", "abort"})


def gpu_setup_line(func: AST) -> int | None:
    """The line where a function makes the program GPU-only: ``init_process_group("nccl")``,
    ``assert torch.cuda.is_available()``, or an exit/raise when no GPU is there; else None."""
    for node in ast.walk(func):
        if node.__class__ is ast.Call and last_name(node.func) == "init_process_group":
            if any(n.__class__ is ast.Constant and n.value == "nccl" for n in ast.walk(node)):
                return node.lineno
        if node.__class__ is ast.Assert and _checks_gpu(node.test):
            return node.lineno
        if node.__class__ is ast.If and _checks_gpu(node.test) and node.test.__class__ is ast.UnaryOp:
            if any(_exits(stmt) for stmt in node.body):
                return node.lineno
    return None


def _checks_gpu(test: AST) -> bool:
    return any(n.__class__ is ast.Attribute and n.attr in ("is_available", "device_count") for n in ast.walk(test))


def _exits(stmt: ast.stmt) -> bool:
    if stmt.__class__ is ast.Raise:
        return True
    return stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call and last_name(stmt.value.func) in _EXITS
