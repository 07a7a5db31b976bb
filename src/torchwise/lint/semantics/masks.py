"""Boolean-mask selections of device tensors in the loss of every step (TW207): ``x[mask]``,
``x[mask] = 0``, ``x[mask, :]`` and ``x.masked_select(mask)`` give a result whose size depends
on the data, so the host waits for the GPU to learn it. Found in the ``forward`` of a loss module
(``MultiBoxLoss``, ``FocalLoss``: ``loc_data[pos_idx]``, ``targets[positive_indices, :] = 0``)
and in a model's ``forward`` where the selection feeds its loss (``logits.view(-1, n)[active_loss]``
handed to ``loss_fct``). NumPy arrays (anything that went through ``.numpy()``/``.cpu()`` or
``np.``) and code that computes no loss (inference, data transforms) are left alone."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.devices import device_move_target, gpu_evident, is_device_tensor
from torchwise.lint.semantics.forwardreads import from_inputs
from torchwise.lint.semantics.losses import is_loss_call
from torchwise.lint.semantics.once import forward_path_function, sampler_off_step
from torchwise.lint.semantics.padstrip import strips_padded_rows
from torchwise.lint.semantics.steps import hot_region_of, is_eval_name
from torchwise.lint.semantics.syncs import mask_like
from torchwise.lint.semantics.values import local_function

# methods and torch functions whose result is a boolean tensor
_TESTS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal",
                    "bool", "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "logical_xor"})
# methods that keep a mask a mask (its shape changes, its values stay booleans)
_SHAPING = frozenset({"unsqueeze", "expand_as", "expand", "view", "reshape", "squeeze", "flatten", "contiguous", "t",
                      "repeat", "to", "cuda", "detach", "view_as", "reshape_as", "transpose", "permute"})
_HOST = frozenset({"numpy", "cpu", "tolist", "item"})


def made_as_mask(ctx: Context, expr: AST, use: AST, depth: int = 3) -> bool:
    """A boolean tensor by its making: a comparison (``conf_t > 0``), a test method or function
    (``gold.ne(pad)``, ``torch.ge(iou, 0.5)``, ``x.int().bool()``), its negation or combination
    (``~m``, ``a & b``), a reshaped mask (``pos.unsqueeze(2).expand_as(x)``), a name bound to
    one, any name ``mask_like`` accepts (``non_pad_mask``), or a parameter or unpacked name of a
    flag (``is_expert``, ``has_target``)."""
    cls = expr.__class__
    if cls is ast.Compare:
        return len(expr.ops) == 1 and expr.ops[0].__class__ in (ast.Eq, ast.NotEq, ast.Lt, ast.Gt, ast.LtE, ast.GtE)
    if cls is ast.UnaryOp:
        return expr.op.__class__ is ast.Invert and made_as_mask(ctx, expr.operand, use, depth)
    if cls is ast.BinOp and expr.op.__class__ in (ast.BitAnd, ast.BitOr, ast.BitXor):
        return made_as_mask(ctx, expr.left, use, depth) or made_as_mask(ctx, expr.right, use, depth)
    if cls is ast.BinOp and expr.op.__class__ is ast.Mult:  # (t >= 0) * (t != 255): a logical and of two masks
        return _compared_mask(expr.left) and _compared_mask(expr.right)
    if cls is ast.Call:
        func = expr.func
        name = last_name(func)
        q = ctx.qualname(func)
        if name in _TESTS and (q is None or q.startswith("torch.")):
            return True
        if name in ("type", "to") and q is None and any(ctx.qualname(a) == "torch.bool" for a in [*expr.args, *(k.value for k in expr.keywords)]):
            return True  # torch.floor(keep + torch.rand(n)).type(torch.bool), x.to(dtype=torch.bool)
        return name in _SHAPING and q is None and func.__class__ is ast.Attribute and made_as_mask(ctx, func.value, use, depth)
    if cls is ast.Name:
        if mask_like(ctx, expr, use):
            return True
        b = ctx.binding_at(expr.id, use)
        if b is not None and b.kind in ("param", "unpack") and expr.id.startswith(("is_", "has_")):
            return True  # obs, action, done, is_expert = batch: a flag per row, named as one
        return depth > 0 and b is not None and b.kind == "assign" and b.value is not None \
            and made_as_mask(ctx, b.value, b.node, depth - 1)
    return mask_like(ctx, expr, use)


def _compared_mask(expr: AST) -> bool:
    """A comparison or a ``.bool()`` cast: a factor of a mask product by its making."""
    return expr.__class__ is ast.Compare and len(expr.ops) == 1 and expr.ops[0].__class__ in (ast.Eq, ast.NotEq, ast.Lt, ast.Gt, ast.LtE, ast.GtE) \
        or expr.__class__ is ast.Call and last_name(expr.func) == "bool" and not expr.args


def mask_of(ctx: Context, sub: ast.Subscript) -> AST | None:
    """The boolean mask ``sub`` selects with (``x[m]``, ``x[m, :]``, ``x[m, 4]``), or None."""
    index = sub.slice
    parts = index.elts if index.__class__ is ast.Tuple else [index]
    return next((p for p in parts if p.__class__ is not ast.Slice and made_as_mask(ctx, p, sub)), None)


def scalar_store(ctx: Context, sub: ast.Subscript) -> bool:
    """``x[mask] = 0`` (also ``x[mask, :] = -1``, ``x[mask] = float("-inf")``, ``x[mask] = s.item()``): PyTorch
    fills a Python number through ``masked_fill_``, which keeps the shape and needs no sync. A tensor
    value needs the mask's count first (``index_put_`` runs ``nonzero``): ``x[mask] = y[mask]``, and
    also a 0-dim device tensor such as ``x[mask] = x.min()`` or ``1 / pos_num`` with ``pos_num = mask.sum()``
    (the fast path takes only a number or a CPU scalar)."""
    stmt = ctx.parent(sub)
    if sub.ctx.__class__ is not ast.Store or stmt.__class__ is not ast.Assign:
        return False
    value = stmt.value.operand if stmt.value.__class__ is ast.UnaryOp else stmt.value
    if value.__class__ is ast.Constant:
        return True
    if value.__class__ is ast.Call and value.func.__class__ is ast.Name and value.func.id in ("float", "int") \
            and all(a.__class__ is ast.Constant for a in value.args):
        return True  # float("-inf")
    return value.__class__ is ast.Call and not value.args and not value.keywords and last_name(value.func) == "item"


def on_host(ctx: Context, expr: AST, func: AST, depth: int = 4) -> bool:
    """Does ``expr`` evidently hold a host array: made with NumPy (``np.``) or taken off the device
    (``.numpy()``, ``.cpu()``, ``.tolist()``), directly or through names bound in ``func``?"""
    for node in ast.walk(expr):
        if node.__class__ is ast.Call:
            q = ctx.qualname(node.func)
            if (q or "").startswith("numpy.") or (node.func.__class__ is ast.Attribute and node.func.attr in _HOST):
                return True
        elif node.__class__ is ast.Name and depth > 0:
            b = ctx.binding_at(node.id, expr)
            if b is not None and b.kind in ("assign", "aug") and b.value is not None and b.value is not expr \
                    and ctx.function_of(b.node) is func and on_host(ctx, b.value, func, depth - 1):
                return True
    return False


_MASK_INDEXES = (ast.Name, ast.Attribute, ast.Compare, ast.UnaryOp, ast.Call)


def forward_mask_selections(ctx: Context) -> list[tuple[AST, AST, list[int] | None]]:
    """``(node, function, other lines)`` of the boolean-mask selections in what every forward pass
    runs: ``x[mask]`` / ``x[mask] = y`` on a device tensor in a module's ``forward`` or a helper it
    calls (other lines None: one per statement), a random mask's in a module's method on the forward
    path (an edge dropout: ``values[(torch.rand(n) + keep).int().bool()]``), then those of a loss (:func:`loss_mask_selections`),
    each with the lines of the loss's others."""
    if not gpu_evident(ctx) and not ctx.project.moves_to_device:
        return []
    found: list[tuple[AST, AST, list[int] | None]] = []
    statements: set[int] = set()
    for sub in ctx.nodes.get(ast.Subscript, ()):
        if sub.slice.__class__ not in _MASK_INDEXES or not mask_like(ctx, sub.slice, sub) or scalar_store(ctx, sub):
            continue
        func = forward_path_function(ctx, sub) if id(ctx.statement_of(sub)) not in statements else None
        if func is not None and (is_device_tensor(ctx, sub.value, sub) or _mask_on_device(ctx, sub.slice, sub)
                                 or module_method(ctx, func) and strips_padded_rows(ctx, sub, func)) \
                and hot_region_of(ctx, sub) is None \
                and not _unused_loss(ctx, func):
            statements.add(id(ctx.statement_of(sub)))
            found.append((sub, func, None))
    random = "rand" in ctx.source or "bernoulli" in ctx.source
    for node, value, mask in _selections(ctx, lambda f: module_method(ctx, f)) if random else ():
        func = ctx.function_of(node)
        if id(ctx.statement_of(node)) in statements or func is None or not module_method(ctx, func):
            continue
        if _random_draw(ctx, mask, node) and forward_path_function(ctx, node) is not None and hot_region_of(ctx, node) is None \
                and not on_host(ctx, value, func) and from_inputs(ctx, value, func):
            statements.add(id(ctx.statement_of(node)))
            found.append((node, func, None))
    by_function: dict[int, list[AST]] = {}
    for node, func in loss_mask_selections(ctx):
        if id(ctx.statement_of(node)) not in statements:
            by_function.setdefault(id(func), [func]).append(node)
    for func, *nodes in by_function.values():  # each selection waits; the finding names the loss's others
        lines = sorted({n.lineno for n in nodes})
        for node in nodes:
            found.append((node, func, [n for n in lines if n != node.lineno]))
    return found


def _mask_on_device(ctx: Context, index: AST, use: AST) -> bool:
    """A mask a method of the file makes on the device (``bool_masked_pos =
    self._mask_center_rand(center)``, which returns ``mask.to(center.device)``): what it selects
    from is on the device too (a CUDA mask cannot index a CPU tensor)."""
    if index.__class__ is ast.UnaryOp and index.op.__class__ is ast.Invert:
        index = index.operand
    b = ctx.binding_at(index.id, use) if index.__class__ is ast.Name else None
    maker = local_function(ctx, b.value) if b is not None and b.kind == "assign" and b.value.__class__ is ast.Call else None
    if maker is None or maker.__class__ is ast.Lambda:
        return False
    for ret in ctx.walk_body(maker.body):
        value = ret.value if ret.__class__ is ast.Return else None
        if value.__class__ is ast.Name:
            bound = ctx.binding_at(value.id, ret)
            value = bound.value if bound is not None and bound.kind == "assign" else None
        if value.__class__ is ast.Call and device_move_target(ctx, value) is not None and is_device_tensor(ctx, value, value):
            return True
    return False


def loss_mask_selections(ctx: Context) -> list[tuple[AST, AST]]:
    """``(node, function)`` of each boolean-mask selection of a device tensor in a loss module's
    ``forward`` (or a method it calls), or in a model's ``forward`` whose loss takes the selection;
    one per statement, outside the training loop itself (the rule's own loop checks see those)."""
    key = ("sem:loss-mask-selections",)
    found = ctx._cache.get(key)
    if found is not None:
        return found
    found = ctx._cache[key] = []
    if not gpu_evident(ctx) and not ctx.project.moves_to_device:
        return found
    statements: set[int] = set()
    for node, value, mask in _selections(ctx, lambda f: in_loss_module(ctx, f) or (f.name == "forward" and bool(
            _loss_arguments(ctx, f)[0]))):
        stmt = ctx.statement_of(node)
        func = ctx.function_of(node)
        if id(stmt) in statements or func is None or not (
                in_loss_module(ctx, func) or (func.name == "forward" and _feeds_loss(ctx, stmt, node, func))):
            continue
        if forward_path_function(ctx, node) is None or hot_region_of(ctx, node) is not None:
            continue
        if sampler_off_step(ctx, func) or on_host(ctx, value, func) or on_host(ctx, mask, func) or _unused_loss(ctx, func) \
                or assigns_targets(func):
            continue
        if is_device_tensor(ctx, value, node) or is_device_tensor(ctx, mask, node) or from_inputs(ctx, value, func) \
                or from_inputs(ctx, mask, func):
            statements.add(id(stmt))
            found.append((node, func))
    return found


def selects_from_arguments(ctx: Context, node: AST, func: AST) -> bool:
    """``output[output == target]`` in a metric helper: the selected tensor is made from the
    helper's parameters and never went to the host (``.cpu()``, NumPy); evaluation helpers and
    target building (:func:`assigns_targets`) left out."""
    value = node.value if node.__class__ is ast.Subscript else node.func.value
    return from_inputs(ctx, value, func) and not on_host(ctx, value, func) and not is_eval_name(func.name) \
        and not assigns_targets(func)


_ASSIGNERS = ("target", "assign", "match")


def assigns_targets(func: AST) -> bool:
    """A function that builds, matches or partitions the targets (``build_targets``,
    ``split_on_targets``, ``assign_anchors``, ``match``): how many targets each anchor, cell or
    vocabulary bucket gets depends on the data by design, and the selection is the algorithm."""
    name = getattr(func, "name", "").lower()
    return any(word in name for word in _ASSIGNERS)


def _selections(ctx: Context, wanted: Callable[[AST], bool]) -> list[tuple[AST, AST, AST]]:
    """``(node, selected value, mask)`` for ``x[mask]`` (read or written) and ``x.masked_select(mask)``
    in the functions ``wanted`` accepts (asked once per function, before the mask)."""
    verdicts: dict[int, bool] = {}

    def in_wanted(node: AST) -> bool:
        func = ctx.function_of(node)
        if func is None:
            return False
        if id(func) not in verdicts:
            verdicts[id(func)] = wanted(func)
        return verdicts[id(func)]

    found = []
    for sub in ctx.nodes.get(ast.Subscript, ()):
        if sub.slice.__class__ is ast.Constant or not in_wanted(sub) or scalar_store(ctx, sub):
            continue
        mask = mask_of(ctx, sub)
        if mask is not None:
            found.append((sub, sub.value, mask))
    for call in ctx.calls_named("masked_select") if "masked_select" in ctx.source else ():
        if call.func.__class__ is ast.Attribute and call.args and in_wanted(call):
            found.append((call, call.func.value, call.args[0]))
    return found


_RANDOM = frozenset({"torch.rand", "torch.rand_like", "torch.bernoulli", "torch.randn", "torch.randn_like", "torch.randint"})


def _random_draw(ctx: Context, mask: AST, use: AST, depth: int = 3) -> bool:
    """A mask drawn at random on each call (``(torch.rand(n) + keep).int().bool()``,
    ``torch.rand(n) < p``, ``x.bernoulli()``): a dropout of edges or tokens by selection."""
    for node in ast.walk(mask):
        if node.__class__ is ast.Call and (ctx.qualname(node.func) in _RANDOM or last_name(node.func) in ("bernoulli", "bernoulli_")):
            return True
        if node.__class__ is ast.Name and depth > 0:
            b = ctx.binding_at(node.id, use)
            if b is not None and b.kind in ("assign", "aug") and b.value is not None and _random_draw(ctx, b.value, b.node, depth - 1):
                return True
    return False


def module_method(ctx: Context, func: AST) -> bool:
    klass = ctx.parent(func)
    return klass.__class__ is ast.ClassDef and any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name))


def in_loss_module(ctx: Context, func: AST) -> bool:
    """A method of an ``nn.Module`` class named as a loss (``FocalLoss``, ``MultiBoxLoss``,
    ``LabelSmoothingCriterion``): its ``forward`` runs on every training step."""
    klass = ctx.parent(func)
    if klass.__class__ is not ast.ClassDef:
        return False
    name = klass.name.lower()
    named = "loss" in name or "criterion" in name or in_losses_module(ctx)
    return named and any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)) \
        and not _unused_class(ctx, klass)


def in_losses_module(ctx: Context) -> bool:
    """The file is a module of losses by its path (``kd_losses/rkd.py``, ``losses.py``,
    ``loss/focal.py``): its ``nn.Module`` classes are losses (``RKD``, ``Attention``)."""
    found = ctx._cache.get("sem:losses-module")
    if found is None:
        path = ctx.path.replace("\\", "/").lower()
        found = ctx._cache["sem:losses-module"] = "loss" in "/".join(path.split("/")[-2:])
    return found


def _unused_loss(ctx: Context, func: AST) -> bool:
    """``func`` is a method of a loss class nothing in the project builds (its steps never run)."""
    klass = ctx.parent(func)
    return klass.__class__ is ast.ClassDef and ("loss" in klass.name.lower() or "criterion" in klass.name.lower()) \
        and _unused_class(ctx, klass)


def _unused_class(ctx: Context, klass: ast.ClassDef) -> bool:
    """A class nothing in the project names (``GHMCLoss`` beside the ``BalancedLoss`` the trainer
    builds): no other module's text mentions it, and this module names it only in its own body
    or in ``__all__``. Known only when the project's files were read (not for a lone file)."""
    files = ctx.project.files
    if not files or not any(p == ctx.path for p, _ in files):
        return False
    key = ("sem:unused-class", ctx.path, klass.name)
    found = ctx.project.answers.get(key)
    if found is None:
        name = klass.name
        found = not any(name in t for p, t in files if p != ctx.path) and not any(
            n.__class__ is ast.Name and n.id == name and not _inside(ctx, n, klass) for n in ctx.nodes.get(ast.Name, ())) \
            and not _picked_by_name(ctx, name)
        ctx.project.answers[key] = found
    return found


def _picked_by_name(ctx: Context, name: str) -> bool:
    """The module builds its classes by a computed name (``eval(loss_fn_name)(...)``,
    ``globals()[name](...)``) and lists ``name`` as a string (``__all__``, a choices list): a
    configuration file picks it."""
    if f"'{name}'" not in ctx.source and f'"{name}"' not in ctx.source:
        return False
    return any(c.args and c.args[0].__class__ is not ast.Constant for c in ctx.calls_named("eval")
               if c.func.__class__ is ast.Name) or "globals()[" in ctx.source


def _inside(ctx: Context, node: AST, outer: AST) -> bool:
    while node is not None and node is not outer:
        node = ctx.parent(node)
    return node is outer


def _feeds_loss(ctx: Context, stmt: AST, node: AST, func: AST) -> bool:
    """The selection is an argument of a loss call (``loss_fct(logits[active], ...)``) or is bound
    to a name a loss call of the function takes (``active_logits = ...[active_loss]``)."""
    inside, names = _loss_arguments(ctx, func)
    if id(node) in inside:
        return True
    if stmt.__class__ is not ast.Assign or getattr(node, "ctx", None).__class__ is ast.Store:
        return False
    return any(t.__class__ is ast.Name and t.id in names for t in stmt.targets)


def _loss_arguments(ctx: Context, func: AST) -> tuple[frozenset[int], frozenset[str]]:
    """The nodes inside the arguments of ``func``'s loss calls, and the names those arguments read."""
    key = ("sem:loss-arguments", id(func))
    found = ctx._cache.get(key)
    if found is None:
        nodes = [n for call in ast.walk(func) if call.__class__ is ast.Call and is_loss_call(ctx, call)
                 for arg in [*call.args, *(k.value for k in call.keywords)] for n in ast.walk(arg)]
        found = ctx._cache[key] = (frozenset(id(n) for n in nodes), frozenset(n.id for n in nodes if n.__class__ is ast.Name))
    return found
