"""What PyTorch code means: losses, models, devices, training loops, grad-free regions.

Shared knowledge the rules build on, expressed as queries on a :class:`~torchwise.lint.engine.Context`.
Every predicate here answers "evidently yes" or "not evidently": when in doubt it says no,
so rules built on it stay silent rather than guess.
"""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, DEF_TYPES, SCOPE_TYPES, Context, last_name, root_name

LOSS_FUNCTIONALS = frozenset({
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "gaussian_nll_loss", "hinge_embedding_loss", "margin_ranking_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "soft_margin_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "cosine_embedding_loss", "ctc_loss",
})
_LOSS_CALLABLE = re.compile(
    r"^(criterion|criterion_\w+|\w+_criterion|loss_fn|loss_func|lossfn|loss_function|loss_fct|"
    r"\w+_loss_fn|compute_loss|calc_loss|get_loss)$",
    re.I,
)
_MODEL_NAME = re.compile(r"^_?(model|net|network|[a-z0-9_]+_model|[a-z0-9_]+_net|model_[a-z0-9_]+)$")
_DEVICE_STR = re.compile(r"^(cuda|cpu|mps|xpu|hpu|meta|npu|xla)(:\d+)?$")
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
    "sort", "to_dense", "type_as", "repeat", "expand", "std", "var",
})
# Collectives of a distributed helper (``accelerator.gather(x)``): the result stays on x's device.
_GATHERS = frozenset({"gather", "gather_for_metrics", "all_gather", "reduce"})
_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "tensor", "linspace"})
_BACKWARD_OWNERS = frozenset({"accelerator", "fabric", "engine", "model_engine", "trainer", "self"})
SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})


# --------------------------------------------------------------------------- training steps
def is_backward_call(ctx: Context, call: ast.Call) -> bool:
    func = call.func
    if func.__class__ is ast.Attribute:
        return func.attr in ("backward", "manual_backward")
    elif func.__class__ is ast.Name and func.id == "backward":
        return ctx.qualname(func) == "torch.autograd.backward"
    return False


def backward_calls(ctx: Context) -> list[ast.Call]:
    found = ctx._cache.get("sem:backward")
    if found is None:
        found = [c for c in ctx.calls_named("backward", "manual_backward") if is_backward_call(ctx, c)]
        ctx._cache["sem:backward"] = found
    return found


def is_optimizer_step(ctx: Context, call: ast.Call) -> bool:
    """``opt.step()``, ``self.optimizer.step()``, ``scaler.step(opt)``; never a scheduler or env."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.attr != "step":
        return False
    recv = func.value
    built = ctx.constructed_from(recv, call)
    if built is not None:
        if built.startswith("torch.optim.lr_scheduler"):
            return False
        if built.startswith("torch.optim."):
            return True
        if built.endswith("GradScaler"):
            return bool(call.args)
    name = last_name(recv)
    if name is None:
        return False
    low = name.lower()
    if "sched" in low:
        return False
    if "scaler" in low:
        return bool(call.args)
    return "optim" in low or low in ("opt", "optimizer") or low.startswith("opt_") or low.endswith("_opt")


def optimizer_steps(ctx: Context) -> list[ast.Call]:
    found = ctx._cache.get("sem:steps")
    if found is None:
        found = [c for c in ctx.calls_named("step") if is_optimizer_step(ctx, c)]
        ctx._cache["sem:steps"] = found
    return found


def training_calls(ctx: Context) -> list[ast.Call]:
    return backward_calls(ctx) + optimizer_steps(ctx)


def hot_loops(ctx: Context) -> dict[int, AST]:
    """Loops that run a training step each pass: the innermost loop around a backward/step."""
    found = ctx._cache.get("sem:hot")
    if found is None:
        found = {}
        for call in training_calls(ctx):
            loops = ctx.enclosing_loops(call)
            if loops:
                found[id(loops[0])] = loops[0]
        ctx._cache["sem:hot"] = found
    return found


def training_loops(ctx: Context) -> dict[int, AST]:
    """Every loop that contains a training step somewhere in its body (outer loops included)."""
    found = ctx._cache.get("sem:train")
    if found is None:
        found = {}
        for call in training_calls(ctx):
            for loop in ctx.enclosing_loops(call):
                found[id(loop)] = loop
        ctx._cache["sem:train"] = found
    return found


def hot_loop_of(ctx: Context, node: AST) -> AST | None:
    hot = hot_loops(ctx)
    for loop in ctx.enclosing_loops(node):
        if id(loop) in hot:
            return loop
    return None


def backwarded_names(ctx: Context, scope: AST) -> dict[str, list[tuple[int, int]]]:
    """Names a backward pass was started from in ``scope`` -> positions of those calls.

    Understands ``loss.backward()``, ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``,
    ``self.manual_backward(loss)`` and ``torch.autograd.backward(loss)``.
    """
    key = ("sem:bwnames", id(scope))
    found = ctx._cache.get(key)
    if found is None:
        found = {}
        for call in backward_calls(ctx):
            if ctx.scope_of(call) is not scope:
                continue
            target: AST | None = None
            func = call.func
            if (
                func.__class__ is ast.Attribute
                and func.attr == "backward"
                and ctx.qualname(func) is None
                and (last_name(func.value) or "").lower() not in _BACKWARD_OWNERS
            ):
                target = func.value  # loss.backward(), scaler.scale(loss).backward()
                if target.__class__ is ast.Call and last_name(target.func) == "scale" and target.args:
                    target = target.args[0]
            elif call.args:  # torch.autograd.backward(loss), accelerator.backward(loss)
                target = call.args[0]
            if target is not None and target.__class__ is ast.BinOp and target.op.__class__ in (ast.Div, ast.Mult):
                # (loss / accum_steps).backward(), accelerator.backward(loss * scale)
                target = target.left if target.left.__class__ is ast.Name else (
                    target.right if target.left.__class__ is ast.Constant else None)
            if target is not None and target.__class__ is ast.Name:
                found.setdefault(target.id, []).append((call.lineno, call.col_offset))
        for positions in found.values():
            positions.sort()
        ctx._cache[key] = found
    return found


def was_backwarded(ctx: Context, expr: AST, use: AST) -> bool:
    """Was a backward pass started from the name ``expr`` after its last binding before ``use``?"""
    if expr.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(expr.id, use)
    start = b.pos if b is not None else (0, 0)
    positions = backwarded_names(ctx, ctx.scope_of(use)).get(expr.id)
    return bool(positions) and positions[-1] >= start


# --------------------------------------------------------------------------- losses
def is_loss_class(ctx: Context, built: str | None) -> bool:
    if built is None:
        return False
    if built.startswith("torch.nn.") and built.endswith("Loss") and built.count(".") == 2:
        return True
    if built.startswith("local:"):
        name = built[6:]
        bases = ctx.local_class_bases(name)
        if any(b.startswith("torch.nn.") and (b.endswith("Loss") or b.endswith("._Loss")) for b in bases):
            return True
    return False


def is_loss_call(ctx: Context, call: ast.Call, heuristic: bool = True) -> bool:
    """A call that evidently computes a loss value (``heuristic``: also trust names such as
    ``criterion(...)``/``loss_fn(...)`` whose construction is not visible)."""
    func = call.func
    q = ctx.qualname(func)
    if q is not None:
        return q.startswith("torch.nn.functional.") and q.rsplit(".", 1)[1] in LOSS_FUNCTIONALS
    if func.__class__ is ast.Call:  # nn.CrossEntropyLoss()(out, y)
        return is_loss_class(ctx, ctx._call_target(func))
    if is_loss_class(ctx, ctx.constructed_from(func, call)):
        return True
    if not heuristic:
        return False
    name = last_name(func)
    return bool(name and _LOSS_CALLABLE.match(name))


def is_loss_value(ctx: Context, expr: AST | None, use: AST | None = None, depth: int = 4, heuristic: bool = True) -> bool:
    """Does ``expr`` evidently hold a loss tensor (with its autograd graph)?"""
    if expr is None or depth <= 0:
        return False
    use = use or expr
    cls = expr.__class__
    if cls is ast.Call:
        if is_loss_call(ctx, expr, heuristic):
            return True
        func = expr.func
        if func.__class__ is ast.Attribute and func.attr in ("mean", "sum") and not expr.args:
            return is_loss_value(ctx, func.value, use, depth - 1, heuristic)
        return False
    if cls is ast.BinOp:
        return is_loss_value(ctx, expr.left, use, depth - 1, heuristic) or is_loss_value(ctx, expr.right, use, depth - 1, heuristic)
    if cls is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is None:
            return False
        if b.kind in ("assign", "walrus"):
            if is_loss_value(ctx, b.value, b.node, depth - 1, heuristic):
                return True
        elif b.kind == "aug":
            if is_loss_value(ctx, b.value, b.node, depth - 1, heuristic):
                return True
        # a backward pass was started from this name after its last binding
        positions = backwarded_names(ctx, ctx.scope_of(use)).get(expr.id)
        return bool(positions) and positions[-1] >= b.pos
    return False


# --------------------------------------------------------------------------- models and modules
# first words that make ``create_model``/``unwrap_model`` a function returning a model, not one
_FACTORY_VERBS = frozenset({
    "create", "build", "get", "load", "make", "unwrap", "init", "initialize", "setup", "prepare", "wrap",
    "convert", "export", "save", "freeze", "compile", "fuse", "copy", "to", "download", "restore", "select",
    "construct", "instantiate", "resume", "apply", "replace", "print", "count", "check", "is", "has",
})


# top-level packages whose "models" and "nets" are not torch modules
_OTHER_FRAMEWORKS = frozenset({
    "cv2", "onnxruntime", "onnx", "tensorflow", "tf", "keras", "jax", "flax", "openvino", "tensorrt", "trt",
    "coremltools", "ct", "paddle", "sklearn", "xgboost", "lightgbm", "tflite_runtime", "mxnet", "caffe",
})


_MODULE_ONLY_METHODS = frozenset({"parameters", "named_parameters", "named_modules", "modules", "children",
                                  "load_state_dict", "register_forward_hook", "register_buffer"})


def _used_as_module(ctx: Context) -> set[str]:
    """Expressions (as written) on which the file calls methods only modules have."""
    found = ctx._cache.get("sem:used_as_module")
    if found is None:
        found = set()
        for call in ctx.calls_named(*_MODULE_ONLY_METHODS):
            func = call.func
            if func.__class__ is ast.Attribute and func.value.__class__ in (ast.Name, ast.Attribute) and ctx.qualname(func) is None:
                found.add(ctx.text(func.value))
        ctx._cache["sem:used_as_module"] = found
    return found


def _self_attr_from_locals(ctx: Context, expr: ast.Attribute, use: AST) -> str | None:
    """``self.net`` never assigned as such, but a method binds a local ``net`` and then copies its
    locals onto the instance (``self.__dict__.update(locals())``): what built that local."""
    cls = ctx.class_of(use)
    if cls is None or ctx.self_attr_values(cls, expr.attr):
        return None
    kinds = set()
    for item in cls.body:
        if item.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef):
            for b in ctx.bindings(item).get(expr.attr, ()):
                if b.kind == "assign" and b.value is not None:
                    kinds.add(ctx.constructed_from(b.value, b.node, 0))
    return kinds.pop() if len(kinds) == 1 else None


_TEST_DIRS = frozenset({"tests", "test", "testing", "unittests", "unit_tests", "integration_tests"})


def is_test_path(path: str) -> bool:
    """A test file: under a ``tests``/``test`` folder, or named ``test_*.py``, ``*_test.py``,
    ``conftest.py``. Tests build tiny loaders and models on purpose and check that things *can*
    be done (scripted, wrapped in DataParallel...); performance and device advice does not apply."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    return any(p in _TEST_DIRS for p in parts[:-1])


_VERSION_TEST = re.compile(r"version|greater|less|_ge_|_lt_|hasattr|TORCH_\d|torch_\d|_\d_\d", re.I)
_FALLBACK_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "TypeError", "NameError"})


def in_compat_fallback(ctx: Context, node: AST, new_api: re.Pattern[str] | None = None) -> bool:
    """Is ``node`` the old-API branch of code that supports several library versions?

    Inside ``except AttributeError/ImportError/TypeError`` (the new API was missing), or in an
    ``if``/conditional expression that tests a version (``_TORCH_GREATER_EQUAL_2_4``,
    ``is_torch_version(...)``, ``hasattr(torch, "amp")``) or whose other branch uses the new API
    (``new_api`` matched against its source text)."""
    child = node
    for anc in ctx.ancestors(node):
        cls = anc.__class__
        if cls is ast.ExceptHandler and getattr(child, "_tw_field", "") == "body":
            names = [last_name(t) for t in ([anc.type] if anc.type is not None and anc.type.__class__ is not ast.Tuple
                                                else getattr(anc.type, "elts", []))]
            if anc.type is None or _FALLBACK_ERRORS.intersection(n for n in names if n):
                return True
        if cls in (ast.If, ast.IfExp):
            field = getattr(child, "_tw_field", "")
            if field in ("body", "orelse"):
                if _VERSION_TEST.search(ctx.text(anc.test)):
                    return True
                if new_api is not None:
                    other = anc.orelse if field == "body" else anc.body
                    others = other if isinstance(other, list) else [other]
                    if any(new_api.search(ctx.text(o)) for o in others):
                        return True
        child = anc
    return False


def is_model_name(name: str | None) -> bool:
    if not name or not _MODEL_NAME.match(name):
        return False
    return name.lstrip("_").split("_", 1)[0] not in _FACTORY_VERBS


def is_module_class(ctx: Context, built: str | None) -> bool:
    """Is this (canonical or ``local:``) class name an ``nn.Module`` subclass?"""
    if built is None:
        return False
    if built.startswith("torch.nn."):
        last = built.rsplit(".", 1)[1]
        return built.count(".") == 2 and last[:1].isupper() and not last.endswith("Loss") and last != "Parameter"
    if built.startswith(("torchvision.models.", "timm.create_model")):
        return True
    if built.startswith("local:"):
        bases = ctx.local_class_bases(built[6:])
        return any(b.startswith("torch.nn.") for b in bases)
    return False


def is_module_instance(ctx: Context, expr: AST | None, use: AST | None = None, by_name: bool = True) -> bool:
    """Is ``expr`` evidently an ``nn.Module`` (built from one here, or named ``model``/``net``)?"""
    if expr is None:
        return False
    built = ctx.constructed_from(expr, use)
    if is_module_class(ctx, built):
        return True
    if built is None and expr.__class__ in (ast.Name, ast.Attribute) and ctx.text(expr) in _used_as_module(ctx):
        return True  # netD.parameters() handed to an optimizer, netD.train(): a module whatever its name
    if built is None and expr.__class__ is ast.Attribute and root_name(expr) is not None and root_name(expr).id == "self":
        built = _self_attr_from_locals(ctx, expr, use or expr)
    if built is not None and built.split(".", 1)[0] in _OTHER_FRAMEWORKS:
        return False  # an OpenCV/ONNX Runtime/TensorFlow... model named like a torch one
    if by_name and expr.__class__ in (ast.Name, ast.Attribute):
        if expr.__class__ is ast.Name:
            b = ctx.binding_at(expr.id, use or expr)
            if b is not None and b.kind in ("def", "class", "import"):
                return False  # a function or class named like a model, not an instance
        return is_model_name(last_name(expr))
    return False


# --------------------------------------------------------------------------- devices
def is_device_expr(ctx: Context, expr: AST | None, use: AST | None = None, depth: int = 3) -> bool:
    """Does ``expr`` evidently denote a device (not a dtype, not a tensor)?"""
    if expr is None or depth <= 0:
        return False
    cls = expr.__class__
    if cls is ast.Constant:
        return isinstance(expr.value, str) and bool(_DEVICE_STR.match(expr.value))
    if cls is ast.Call:
        q = ctx.qualname(expr.func)
        return q == "torch.device"
    if cls is ast.Attribute:
        return "device" in expr.attr.lower() or expr.attr in _DEVICE_NAMES
    if cls is ast.IfExp:
        return is_device_expr(ctx, expr.body, use, depth - 1) and is_device_expr(ctx, expr.orelse, use, depth - 1)
    if cls is ast.Name:
        low = expr.id.lower()
        if "device" in low or low in _DEVICE_NAMES:
            return True
        b = ctx.binding_at(expr.id, use or expr)
        if b is not None and b.kind == "assign":
            return is_device_expr(ctx, b.value, b.node, depth - 1)
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


def producing_call(ctx: Context, expr: AST | None, use: AST | None = None, depth: int = 4) -> ast.Call | None:
    """The call whose result ``expr`` evidently is: ``expr`` itself, or the call a name was last
    assigned from (following up to ``depth - 1`` plain assignments back from ``use``)."""
    use = use or expr
    while expr is not None and depth > 0:
        if expr.__class__ is ast.Call:
            return expr  # type: ignore[return-value]
        if expr.__class__ is not ast.Name:
            return None
        b = ctx.binding_at(expr.id, use)
        if b is None or b.kind not in ("assign", "walrus"):
            return None
        expr, use, depth = b.value, b.node, depth - 1
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
        found = False
        for call in ctx.calls_named("cuda", "to"):
            if device_move_target(ctx, call) is not None and ctx.scope_of(call) is scope:
                found = True
                break
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


def is_device_tensor(ctx: Context, expr: AST | None, use: AST | None = None, depth: int = 8) -> bool:
    """Does ``expr`` evidently hold a tensor computed on the accelerator?

    Yes for a loss, the output of a model call, the result of ``.cuda()``/``.to(device)``, and
    arithmetic or device-keeping methods (``.detach()``, ``.sum()``, ``argmax``...) of those.
    No for anything that went through ``.cpu()``/``.item()``/``.numpy()``/``.tolist()``.
    """
    if expr is None or depth <= 0:
        return False
    use = use or expr
    cls = expr.__class__
    if cls is ast.Name:
        if is_loss_value(ctx, expr, use):
            return True
        b = ctx.binding_at(expr.id, use)
        if b is None:
            return False
        if b.kind in ("assign", "walrus", "aug"):
            return is_device_tensor(ctx, b.value, b.node, depth - 1)
        if b.kind == "unpack" and b.value is not None and b.value.__class__ is ast.Call:
            return _is_model_call(ctx, b.value) or returns_device_data(ctx, b.value)
        return False
    if cls is ast.Call:
        func = expr.func
        if device_move_target(ctx, expr) is not None:
            return True
        if _is_model_call(ctx, expr) or is_loss_call(ctx, expr) or returns_device_data(ctx, expr):
            return True
        q = ctx.qualname(func)
        if q is not None and q.startswith("torch.") and q.rsplit(".", 1)[1] in _FACTORIES:
            dev = next((k.value for k in expr.keywords if k.arg == "device"), None)
            # torch.randint(..., device=latents.device): made on the device (not a "cpu" literal)
            return dev is not None and not (dev.__class__ is ast.Constant and dev.value == "cpu") and is_device_expr(ctx, dev, use)
        if func.__class__ is ast.Attribute and func.attr in _GATHERS and q is None:
            if expr.args and is_device_tensor(ctx, expr.args[0], use, depth - 1):
                return True
        if func.__class__ is ast.Attribute:
            if func.attr in SYNC_METHODS:
                return False
            if func.attr in ("stack", "cat", "concat") and expr.args and ctx.qualname(func) in (
                "torch.stack", "torch.cat", "torch.concat"
            ):  # torch.stack([x] * n), torch.cat((a, b)): on the device of the parts
                parts = expr.args[0]
                if parts.__class__ is ast.BinOp:
                    parts = parts.left if parts.left.__class__ in (ast.List, ast.Tuple) else parts.right
                elts = parts.elts if parts.__class__ in (ast.List, ast.Tuple) else []
                return any(is_device_tensor(ctx, e, use, depth - 1) for e in elts)
            if func.attr in _DEVICE_KEEPING:
                q = ctx.qualname(func)
                if q is not None:  # torch.argmax(out, 1) and friends
                    return bool(expr.args) and is_device_tensor(ctx, expr.args[0], use, depth - 1)
                return is_device_tensor(ctx, func.value, use, depth - 1)
        return False
    if cls is ast.BinOp:
        return is_device_tensor(ctx, expr.left, use, depth - 1) or is_device_tensor(ctx, expr.right, use, depth - 1)
    if cls is ast.Compare:
        return is_device_tensor(ctx, expr.left, use, depth - 1) or any(
            is_device_tensor(ctx, c, use, depth - 1) for c in expr.comparators
        )
    if cls is ast.UnaryOp:
        return is_device_tensor(ctx, expr.operand, use, depth - 1)
    if cls is ast.Subscript:
        return is_device_tensor(ctx, expr.value, use, depth - 1)
    return False


def _is_model_call(ctx: Context, call: ast.Call) -> bool:
    func = call.func
    if func.__class__ not in (ast.Name, ast.Attribute):
        return False
    if func.__class__ is ast.Attribute and func.attr == "forward":
        return is_module_instance(ctx, func.value, call)
    return is_module_instance(ctx, func, call)


# --------------------------------------------------------------------------- grad-free regions
def _is_grad_off(ctx: Context, expr: AST, depth: int = 2) -> bool:
    """A context manager or decorator that turns autograd off: torch's own, a wrapper named for
    one (``smart_inference_mode()``, ``torch_no_grad``), or a function of this file whose body
    uses one (a decorator factory returning ``torch.inference_mode()(fn)``)."""
    call = expr if expr.__class__ is ast.Call else None
    target = call.func if call is not None else expr
    name = last_name(target)
    if name in ("no_grad", "inference_mode"):
        if call is not None and name == "inference_mode" and call.args and _is_false(call.args[0]):
            return False
        return True
    if name == "set_grad_enabled" and call is not None and call.args and _is_false(call.args[0]):
        return True
    if name and ("no_grad" in name or "inference_mode" in name) and not (call is not None and call.args and _is_false(call.args[0])):
        return True
    if depth > 0 and target.__class__ is ast.Name:
        bound = ctx.resolve(target)
        if bound is not target and bound.__class__ is ast.IfExp:
            # context = torch.no_grad if eval_with_no_grad else nullcontext: off whenever it is asked to be
            return _is_grad_off(ctx, bound.body, depth - 1) or _is_grad_off(ctx, bound.orelse, depth - 1)
        func = local_function(ctx, ast.Call(func=target, args=[], keywords=[]))
        if func is not None and func.__class__ is not ast.Lambda:
            for sub in ast.walk(func):
                if sub is not func and sub.__class__ in (ast.Call, ast.Attribute, ast.Name):
                    inner = last_name(sub)
                    if inner in ("no_grad", "inference_mode") and ctx.qualname(sub if sub.__class__ is not ast.Call else sub.func) in (
                        "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad",
                        "torch.autograd.grad_mode.inference_mode",
                    ):
                        return True
    return False


def _is_false(node: AST) -> bool:
    return node.__class__ is ast.Constant and node.value is False


def under_no_grad(ctx: Context, node: AST) -> bool:
    """Is ``node`` inside ``with torch.no_grad()/inference_mode()``, or in a function decorated
    with either (checked up through enclosing functions), or after ``set_grad_enabled(False)``?"""
    child = node
    for anc in ctx.ancestors(node):
        cls = anc.__class__
        if cls in (ast.With, ast.AsyncWith) and getattr(child, "_tw_field", "") == "body":
            if any(_is_grad_off(ctx, item.context_expr) for item in anc.items):
                return True
        elif cls in (ast.FunctionDef, ast.AsyncFunctionDef):
            if any(_is_grad_off(ctx, d) for d in anc.decorator_list):
                return True
        child = anc
    scope = ctx.scope_of(node)
    for call in ctx.calls_named("enter_context"):
        # with ExitStack() as stack: stack.enter_context(torch.no_grad()) ... (detectron2's evaluator)
        if call.args and _is_grad_off(ctx, call.args[0]) and ctx.scope_of(call) is scope:
            w = next((a for a in ctx.ancestors(call) if a.__class__ in (ast.With, ast.AsyncWith)), None)
            if w is not None and ctx.contains(w, node) and (call.lineno, call.col_offset) < (node.lineno, node.col_offset):
                return True
    for call in ctx.calls_named("set_grad_enabled"):
        if call.args and _is_false(call.args[0]) and ctx.scope_of(call) is scope and (call.lineno, call.col_offset) < (node.lineno, node.col_offset):
            if ctx.parent(call).__class__ is ast.Expr:
                return True
    return False


def is_zero_grad_like(ctx: Context, node: AST) -> bool:
    """``*.zero_grad(...)``, ``p.grad = None``, ``p.grad.zero_()``, ``del p.grad`` and the like."""
    cls = node.__class__
    if cls is ast.Call:
        name = last_name(node.func)
        if name and "zero_grad" in name:
            return True
        func = node.func
        if func.__class__ is ast.Attribute and func.attr in ("zero_", "fill_", "detach_", "requires_grad_"):
            inner = func.value
            while inner.__class__ is ast.Attribute or inner.__class__ is ast.Call:
                if inner.__class__ is ast.Attribute and inner.attr == "grad":
                    return True
                inner = inner.value if inner.__class__ is ast.Attribute else inner.func
        return False
    if cls in (ast.Assign, ast.AnnAssign, ast.Delete):
        targets = node.targets if cls is not ast.AnnAssign else [node.target]
        for t in targets:
            if t.__class__ is ast.Attribute and t.attr == "grad":
                return True
    return False


def local_function(ctx: Context, call: ast.Call) -> AST | None:
    """The function defined in this file that ``call`` calls (by simple or ``self.`` name)."""
    func = call.func
    name = None
    if func.__class__ is ast.Name:
        name = func.id
    elif func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id in ("self", "cls"):
        name = func.attr
    if name is None:
        return None
    table = ctx._cache.get("sem:funcs")
    if table is None:
        table = {}
        for cls in (ast.FunctionDef, ast.AsyncFunctionDef):
            for f in ctx.nodes.get(cls, ()):
                table.setdefault(f.name, []).append(f)
        ctx._cache["sem:funcs"] = table
    defs = table.get(name)
    return defs[0] if defs and len(defs) == 1 else None


def body_nodes(ctx: Context, node: AST, follow_calls: int = 1) -> list[AST]:
    """Nodes executed by ``node``'s body, including nested defs (closures run there too) and the
    bodies of local functions it calls (``follow_calls`` levels deep)."""
    out: list[AST] = []
    seen: set[int] = set()
    todo: list[tuple[AST, int]] = [(node, follow_calls)]
    while todo:
        current, level = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for sub in ast.walk(current):
            out.append(sub)
            if level > 0 and sub.__class__ is ast.Call:
                target = local_function(ctx, sub)
                if target is not None:
                    todo.append((target, level - 1))
    return out


def _is_modulo_test(ctx: Context, test: AST) -> bool:
    """A test with a modulo (``step % 100 == 0``) or a call to a helper of this file that returns
    one (``divisible_by(step, 100)``, ``def divisible_by(n, d): return n % d == 0``)."""
    for n in ast.walk(test):
        if n.__class__ is ast.BinOp and n.op.__class__ is ast.Mod:
            return True
        if n.__class__ is ast.Call:
            target = local_function(ctx, n)
            if target is not None and target.__class__ is not ast.Lambda:
                for r in ast.walk(target):
                    if r.__class__ is ast.Return and r.value is not None and any(
                        m.__class__ is ast.BinOp and m.op.__class__ is ast.Mod for m in ast.walk(r.value)
                    ):
                        return True
    return False


def runs_periodically(ctx: Context, node: AST) -> bool:
    """Inside ``if step % N == 0`` (or a test calling a local modulo helper): once per interval."""
    return any(_is_modulo_test(ctx, if_node.test) for if_node, _ in ctx.enclosing_ifs(node))


def in_except_handler(ctx: Context, node: AST) -> bool:
    """In the body of an ``except`` clause within its own function: a recovery path, not every step."""
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, DEF_TYPES):
            return False
        if anc.__class__ is ast.ExceptHandler and getattr(child, "_tw_field", "") == "body":
            return True
        child = anc
    return False


# --------------------------------------------------------------------------- datasets and loaders
def local_dataset_class(ctx: Context, expr: AST | None, use: AST) -> ast.ClassDef | None:
    """The class of this file that ``expr`` (a loader's dataset) is an instance of, if evident."""
    if expr is None:
        return None
    built = ctx.constructed_from(ctx.resolve(expr, use), use)
    if built is None or not built.startswith("local:"):
        return None
    return ctx.local_classes.get(built[6:])


def getitem_of(klass: ast.ClassDef | None) -> ast.FunctionDef | None:
    if klass is None:
        return None
    for item in klass.body:
        if item.__class__ is ast.FunctionDef and item.name == "__getitem__":
            return item
    return None


def moves_to_device(ctx: Context, fn: AST, follow_calls: int = 1) -> bool:
    """Does ``fn``'s body put tensors on a device (``.cuda()``, ``.to(device)``), itself or
    through a helper of this file it calls?"""
    for node in body_nodes(ctx, fn, follow_calls=follow_calls):
        if node.__class__ is ast.Call and device_move_target(ctx, node) is not None:
            return True
    return False


def _collate_function(ctx: Context, loader: ast.Call) -> AST | None:
    """The function of this file a loader's ``collate_fn`` runs (through ``partial(fn, ...)``)."""
    value = None
    for k in loader.keywords:
        if k.arg == "collate_fn":
            value = k.value
    if value is None:
        return None
    for _ in range(3):
        if value.__class__ is ast.Name:
            b = ctx.binding_at(value.id, loader)
            if b is not None and b.kind == "assign" and b.value is not None:
                value = b.value
                continue
            break
        if value.__class__ is ast.Call and last_name(value.func) == "partial" and value.args:
            value = value.args[0]
            continue
        break
    if value.__class__ is ast.Lambda:
        return value
    if value.__class__ in (ast.Name, ast.Attribute):
        fake = ast.Call(func=value, args=[], keywords=[])
        return local_function(ctx, fake)
    return None


def loader_yields_device_batches(ctx: Context, loader: ast.Call, dataset: AST | None) -> bool:
    """Do the loader's batches come out already on a device? Its ``collate_fn`` (a function of
    this file, also through ``partial``) or the dataset's ``__getitem__`` moves them there, or the
    dataset wraps tensors that are on a device (``TensorDataset(x.to(device))``)."""
    collate = _collate_function(ctx, loader)
    if collate is not None and moves_to_device(ctx, collate):
        return True
    getitem = getitem_of(local_dataset_class(ctx, dataset, loader))
    if getitem is not None and moves_to_device(ctx, getitem):
        return True
    if dataset is not None:
        made = producing_call(ctx, dataset, loader)
        if made is not None and last_name(made.func) == "TensorDataset":
            return any(is_device_tensor(ctx, a, made) for a in made.args)
    return False


_INDEX_NAME = re.compile(r"(^|_)(idx|index|indices|perm)$", re.I)
_INDEX_MAKERS = frozenset({"nonzero", "arange", "randperm", "argwhere"})


def is_index_collection(ctx: Context, expr: AST | None, use: AST, depth: int = 4) -> bool:
    """Does a loader iterate over positions rather than data: ``range(n)``, a tensor of indices
    (``mask.nonzero().view(-1)``, ``torch.arange``/``randperm``), or a name such as ``train_idx``?
    Its batches are small index tensors used to slice data held elsewhere."""
    if expr is None or depth <= 0:
        return False
    cls = expr.__class__
    if cls is ast.Call:
        func = expr.func
        name = last_name(func)
        if func.__class__ is ast.Name and name == "range":
            return True
        if name in _INDEX_MAKERS:
            return True
        if func.__class__ is ast.Attribute and name in ("view", "reshape", "flatten", "squeeze", "to", "long", "cpu", "split"):
            return is_index_collection(ctx, func.value, use, depth - 1)
        return False
    if cls is ast.Subscript:
        return is_index_collection(ctx, expr.value, use, depth - 1)
    if cls is ast.Name:
        if _INDEX_NAME.search(expr.id):
            return True
        b = ctx.binding_at(expr.id, use)
        if b is not None and b.kind == "assign" and b.value is not None:
            return is_index_collection(ctx, b.value, b.node, depth - 1)
        return False
    if cls is ast.Attribute:
        return bool(_INDEX_NAME.search(expr.attr))
    return False


_TENSOR_METHODS = frozenset({"view", "reshape", "long", "float", "int", "clone", "unsqueeze", "squeeze", "contiguous",
                             "flatten", "t", "item", "type", "to", "bool", "half", "size", "numel", "dim"})


# Calls that only pick where to slice: a random offset, index arithmetic.
_INDEX_DRAWS = frozenset({
    "torch.randint", "random.randint", "random.randrange", "random.random", "numpy.random.randint",
    "numpy.random.choice", "len", "min", "max", "int",
})


def getitem_slices_only(ctx: Context, klass: ast.ClassDef) -> bool:
    """``__getitem__`` that only slices stored tensors (``return self.x[i], self.y[i]``, index
    arithmetic or a random offset, ``.view``/``.long()``, a move to the device): no file
    reading, decoding or transform calls."""
    item = getitem_of(klass)
    if item is None:
        return False
    if not any(n.__class__ is ast.Subscript for n in ast.walk(item)):
        return False
    for node in ast.walk(item):
        if node.__class__ is ast.Call:
            func = node.func
            if func.__class__ is ast.Attribute and (func.attr in _TENSOR_METHODS or func.attr == "cuda"):
                continue
            q = ctx.qualname(func) or (func.id if func.__class__ is ast.Name else None)
            if q in _INDEX_DRAWS:
                continue
            return False
        elif node.__class__ in (ast.For, ast.While, ast.With, ast.Try):
            return False
    return True


def getitem_reads_nothing(klass: ast.ClassDef | None) -> bool:
    """A dataset whose ``__getitem__`` hands back stored constants and the index (a prompt
    dataset for sampling): no call, no indexing into stored data, so no per-item tensor."""
    getitem = getitem_of(klass)
    if getitem is None:
        return False
    for node in ast.walk(getitem):
        if node.__class__ is ast.Call:
            return False
        if node.__class__ is ast.Subscript and node.ctx.__class__ is ast.Load:
            return False
    return True


_EXTERNAL_ROOTS = ("torch", "torchvision", "torchaudio", "torchtext", "datasets", "transformers")


def imported_class_name(ctx: Context, func: AST) -> str | None:
    """The name a called class was imported under in its own module (``from .data import
    Shards as S`` -> ``Shards``; ``data.Shards``/``pkg.data.Shards`` -> ``Shards``), when it comes
    from an import of this file that is not torch or another library listed here; else None."""
    if func.__class__ is ast.Name:
        if func.id in ctx.local_classes:
            return None
        for node in ctx.nodes.get(ast.ImportFrom, ()):
            for alias in node.names:
                if (alias.asname or alias.name) == func.id:
                    if not node.level and (node.module or "").split(".", 1)[0] in _EXTERNAL_ROOTS:
                        return None
                    return alias.name
        return None
    if func.__class__ is ast.Attribute:
        root = root_name(func)
        if root is None:
            return None
        q = ctx.qualname(func)
        if q is not None:
            return None if q.split(".", 1)[0] in _EXTERNAL_ROOTS else func.attr
        # a module imported relatively (from . import data; data.Shards(...))
        for node in ctx.nodes.get(ast.ImportFrom, ()):
            if node.level and any((a.asname or a.name) == root.id for a in node.names):
                return func.attr
    return None


def project_dataset(ctx: Context, expr: AST | None, use: AST):
    """The project facts (:class:`~torchwise.lint.project.DatasetFacts`) of the dataset class,
    defined in another module of the project, that ``expr`` is an instance of; None when the
    class is not evident or not the project's."""
    if expr is None or not ctx.project.datasets:
        return None
    if expr.__class__ is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
        expr = ctx.single_self_value(expr, use)
        if expr is None:
            return None
    call = producing_call(ctx, expr, use)
    if call is None:
        return None
    return ctx.project.dataset(imported_class_name(ctx, call.func))


def is_def(node: AST) -> bool:
    return isinstance(node, DEF_TYPES)


__all__ = [
    "LOSS_FUNCTIONALS", "SYNC_METHODS", "backward_calls", "body_nodes", "backwarded_names", "device_move_target",
    "getitem_of", "getitem_reads_nothing", "getitem_slices_only", "imported_class_name", "project_dataset", "gpu_evident", "hot_loop_of", "hot_loops", "is_backward_call", "is_device_expr", "is_device_tensor",
    "is_dtype_expr", "is_loss_call", "is_loss_class", "is_loss_value", "is_model_name", "is_module_class",
    "in_compat_fallback", "in_except_handler", "is_index_collection", "is_module_instance", "is_optimizer_step", "is_test_path", "is_zero_grad_like", "loader_yields_device_batches", "local_dataset_class", "local_function",
    "moves_to_device", "optimizer_steps",
    "root_name", "runs_periodically", "scope_moves_to_device", "training_calls", "training_loops", "under_no_grad",
]
