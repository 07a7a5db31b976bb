"""Host reads in the loss of every training step (TW207), outside the training loop itself: in a
loss function of the file that the step calls every step - directly, through a helper that hands
its arguments on (``cal_performance(pred, gold)`` -> ``cal_loss(pred, gold)``), or from the
training loop of another module that imports it - and in the methods of a loss module on the
forward path (``SetCriterion.forward``, ``NMTLossCompute._stats``), and in a model's ``forward``
that computes its own loss (``loss_item = {"loss": loss.item()}``): ``.item()`` of a loss it
computes (``Munch(real=loss_real.item())``) or of a tensor made from what it is given
(``n_word = non_pad_mask.sum().item()``, ``num_boxes = torch.clamp(num_boxes / world, min=1).item()``)."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.callers import project_calls, star_calls
from torchwise.lint.semantics.callshapes import call_shape, left_off
from torchwise.lint.semantics.castreads import cast_operand, settings_gated, side_output
from torchwise.lint.semantics.hostnumbers import host_number
from torchwise.lint.semantics.devices import SYNC_METHODS, is_device_tensor
from torchwise.lint.semantics.evalblocks import off_training_path
from torchwise.lint.semantics.forwardpath import batch_function, takes_batch
from torchwise.lint.semantics.forwardreads import from_inputs
from torchwise.lint.semantics.hostreads import holds_device_values, host_reader, own_loss_reads
from torchwise.lint.semantics.masks import assigns_targets, in_loss_module, in_losses_module, made_as_mask, on_host, selects_from_arguments
from torchwise.lint.semantics.ndarrays import is_ndarray
from torchwise.lint.semantics.once import forward_path_function
from torchwise.lint.semantics.rarely import runs_rarely
from torchwise.lint.semantics.remotemethods import remote_method_step
from torchwise.lint.semantics.steps import hot_region_of, is_eval_name, runs_periodically
from torchwise.lint.semantics.ondevice import on_accelerator
from torchwise.lint.semantics.shapevalues import only_metadata
from torchwise.lint.semantics.stepopeners import step_opener_reads
from torchwise.lint.semantics.stepvalues import step_device_value, step_loss_terms
from torchwise.lint.semantics.values import local_function

PerStep = Callable[[Context, ast.Call], bool]  # the rule's own check that a call of this file runs every step


def every_step_call(ctx: Context, func: AST, per_step: PerStep, depth: int = 1, param: str | None = None) -> str | None:
    """Where the training step calls ``func`` every step with device tensors: ``"line N"`` for a
    call of this file (also through a helper of this file that hands its own parameters on), or
    ``"path:N"`` for a call in the training loop of another module that imports this one. With
    ``param``, only a call that hands something other than ``None`` for it."""
    key = ("sem:loss-step-call", id(func), depth, param)
    if key in ctx._cache:
        return ctx._cache[key]
    ctx._cache[key] = None  # (a recursive helper)
    calls = [c for c in ctx.calls_named(func.name) if local_function(ctx, c) is func and _hands(func, c, param)]
    found = next((f"line {c.lineno}" for c in calls if hot_region_of(ctx, c) is not None
                  and _hands_device_values(ctx, c) and per_step(ctx, c)), None)
    if found is None and ctx.parent(func) is ctx.tree:  # a model's training forward computes its loss with it
        found = next((f"line {c.lineno}, in {f.name}()" for c in calls if (f := _training_forward(ctx, c)) is not None), None)
    if found is None and depth > 0:  # through a helper that hands on its own arguments (cal_performance -> cal_loss)
        callers = {id(f): f for c in calls if (f := ctx.function_of(c)) is not None and f is not func
                   and hot_region_of(ctx, c) is None and _passes_parameters(c, f)}
        found = next((w for f in callers.values() if (w := every_step_call(ctx, f, per_step, depth - 1)) is not None), None)
    if found is None and ctx.parent(func) is ctx.tree:
        found = next((f"{other.path}:{c.lineno}" for other, c in project_calls(ctx, func.name)
                      if hot_region_of(other, c) is not None and not runs_periodically(other, c) and not runs_rarely(other, c)
                      and _hands(func, c, param) and _hands_device_values(other, c)), None)
    if found is None and ctx.parent(func) is ctx.tree:  # from a loss module's forward, or a method the loop calls, in another module
        found = next((w for other, c in _project_and_star_calls(ctx, func.name) if _hands(func, c, param) and _passes_parameters(c, other.function_of(c))
                      and (w := remote_method_step(other, c)) is not None), None)
    if found is None and depth > 0 and ctx.parent(func) is ctx.tree:  # through a helper of another module that hands
        found = next((w for other, c in project_calls(ctx, func.name)  # its own arguments on (loss_calc -> cross_entropy_2d)
                      if (w := _via_remote_helper(other, c, func, per_step, depth, param)) is not None), None)
    ctx._cache[key] = found
    return found


def _project_and_star_calls(ctx: Context, name: str):
    """The project's calls of the module-level ``name``: imported by name or module, or through ``from this import *``."""
    yield from project_calls(ctx, name)
    yield from star_calls(ctx, name)


def _via_remote_helper(other: Context, call: ast.Call, func: AST, per_step: PerStep, depth: int, param: str | None) -> str | None:
    """Where a module-level helper of another module, which hands ``func`` its own parameters
    (``def loss_calc(pred, label, device): ... return cross_entropy_2d(pred, label)``), is itself
    called every step with device tensors (semantics of :func:`every_step_call` there)."""
    helper = other.function_of(call)
    if helper is None or other.parent(helper) is not other.tree or hot_region_of(other, call) is not None \
            or not _hands(func, call, param) or not _passes_parameters(call, helper) \
            or runs_periodically(other, call) or runs_rarely(other, call):
        return None
    return every_step_call(other, helper, per_step, depth - 1)


def _training_forward(ctx: Context, call: ast.Call) -> AST | None:
    """The method of a model class around ``call`` when it runs on every training forward pass
    (``forward``, ``forward_train``: semantics.forwardpath) and hands the call what it was given
    or what it computed from that (``rkd_loss(feature_student["pooled_feat"], ...)``)."""
    func = batch_function(ctx, call)
    if func is None or ctx.parent(func).__class__ is not ast.ClassDef or off_training_path(ctx, call, func) \
            or runs_rarely(ctx, call) or not on_accelerator(ctx, call):
        return None
    return func if any(from_inputs(ctx, a, func) for a in call.args) else None


def _hands(func: AST, call: ast.Call, param: str | None) -> bool:
    """Does ``call`` hand ``func`` something for ``param`` (not ``None``, nor a ``None`` default)?"""
    shape = call_shape(call) if param is not None else None
    return shape is None or not left_off(func, shape, param)


def guarding_parameter(ctx: Context, node: AST, func: AST) -> str | None:
    """``p`` of the innermost ``if p is not None:`` / ``if p:`` around ``node`` in ``func``, for a
    parameter ``p`` of ``func`` (``if entropy is not None:`` in ``def CDAN(x, net, entropy=None)``)."""
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    for if_node, in_body in ctx.enclosing_ifs(node):
        test = if_node.test
        name = test if test.__class__ is ast.Name else (
            test.left if test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.IsNot
            and test.comparators[0].__class__ is ast.Constant and test.comparators[0].value is None else None)
        if in_body and name.__class__ is ast.Name and name.id in params:
            return name.id
    return None


def _hands_device_values(ctx: Context, call: ast.Call) -> bool:
    return any(holds_device_values(ctx, a, call) or step_device_value(ctx, a, call) for a in [*call.args, *(k.value for k in call.keywords)]) \
        or _backwarded_result(ctx, call)


def _backwarded_result(ctx: Context, call: ast.Call) -> bool:
    """``critic_loss, loss_dict = iq_loss(agent, q, v, next_v, batch)`` ... ``critic_loss.backward()``
    in code on an accelerator: the loss it hands back (alone or first) is the step's backward
    pass, so it computed on the device what it was handed (however the caller got it)."""
    stmt = ctx.parent(call)
    if stmt.__class__ is not ast.Assign or stmt.value is not call or len(stmt.targets) != 1:
        return False
    target = stmt.targets[0]
    if target.__class__ in (ast.Tuple, ast.List) and target.elts:
        target = target.elts[0]
    return target.__class__ is ast.Name and target.id in step_loss_terms(ctx, ctx.scope_of(call)) and on_accelerator(ctx, call)


def _hands_back_step_loss(ctx: Context, func: AST) -> bool:
    """A function of the file whose call in a training loop hands back (alone or first) the loss
    that loop backpropagates: ``loss, correct = _do_fwd_pass(model, batch)`` ... ``loss.backward()``
    - a forward-pass helper that runs every step, like a loss function."""
    return any(local_function(ctx, c) is func and hot_region_of(ctx, c) is not None and _backwarded_result(ctx, c)
               for c in ctx.calls_named(func.name))


def _passes_parameters(call: ast.Call, func: AST) -> bool:
    """Does ``call`` hand ``func``'s own parameters on (``cal_loss(pred, gold, ...)`` in ``cal_performance(pred, gold)``)?"""
    params = {a.arg for a in func.args.args} - {"self", "cls"} if func is not None and func.__class__ is not ast.Lambda else set()
    return any(a.__class__ is ast.Name and a.id in params for a in call.args)


def loss_reads(ctx: Context, per_step: PerStep) -> list[tuple[ast.Call, AST, str]]:
    """``(read, function, where it runs every step)`` for the ``.item()`` reads of
    loss functions the step calls every step and of loss modules' methods on the forward path."""
    readers = _reader_names(ctx)
    if ".item()" not in ctx.source and "float(" not in ctx.source and "int(" not in ctx.source and not readers:
        return []
    # the functions that read at all: an .item() or a cast of their own, or a call of a reader
    reading = {id(ctx.function_of(c)) for name in ("item", "float", "int", *readers) for c in ctx.calls_by_name.get(name, ())}
    found = []
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef):
        for func in ctx.nodes.get(kind, ()):
            if id(func) not in reading:
                continue
            if in_loss_module(ctx, func):
                reads = _input_reads(ctx, func) if forward_path_function(ctx, func.body[0]) is not None else []
                where = "every training step" if reads else None
            elif func.name == "forward" and takes_batch(ctx, func):  # a model's forward that computes its loss
                reads = own_loss_reads(ctx, func)
                where = "every training step" if reads else None
            elif "zero_grad" in ctx.text(func) and step_opener_reads(ctx, func) and on_accelerator(ctx, func.body[0]):
                reads = step_opener_reads(ctx, func)  # process(): zero_grad(), the losses, .item() of them for the logs
                where = "which opens every training step (it zeroes the gradients)"
            elif "loss" in func.name.lower() or ctx.parent(func) is ctx.tree and (in_losses_module(ctx) or _hands_back_step_loss(ctx, func)):
                # (a function named for a loss, or any function of a module of losses: loss.CDAN(...))
                named = "loss" in func.name.lower()  # (a helper of a losses module handing on to a reader: found there)
                reads = own_loss_reads(ctx, func) + _input_reads(ctx, func) + (_reader_calls(ctx, func) if named else [])
                for read in dict.fromkeys(reads):  # (a read under `if entropy is not None:`: a call that hands it)
                    where = every_step_call(ctx, func, per_step, param=guarding_parameter(ctx, read, func))
                    if where is not None:
                        found.append((read, func, f"which the training step calls every step ({where})"))
                continue
            else:
                continue
            if where is not None:
                found += [(read, func, where) for read in dict.fromkeys(reads)]
    return found


def _reader_calls(ctx: Context, func: AST) -> list[ast.Call]:
    """Calls of a helper that reads what it is given on the host (``to_cpu(torch.cat((lbox, lobj,
    lcls, loss)))``, a project function or one of this file) with tensors the loss computed."""
    out = []
    readers = _reader_names(ctx)
    for node in ctx.walk_body(func.body) if readers else ():
        if node.__class__ is ast.Call and node.args and last_name(node.func) in readers \
                and not runs_periodically(ctx, node) and not runs_rarely(ctx, node) \
                and any(from_inputs(ctx, a, func) or step_device_value(ctx, a, node) for a in node.args) \
                and host_reader(ctx, node) is not None:
            out.append(node)
    return out


def _reader_names(ctx: Context) -> frozenset[str]:
    """Names of the calls of this file that may read their arguments on the host: functions of
    the project that mention a host read, and functions of this file (asked once per file)."""
    found = ctx._cache.get("sem:reader-names")
    if found is None:
        candidates = set(ctx.project.host_read_blocks) | {f.name for f in ctx.nodes.get(ast.FunctionDef, ())}
        found = ctx._cache["sem:reader-names"] = frozenset(n for n in candidates if n in ctx.calls_by_name)
    return found


_FLOAT = frozenset({"float"})


def _input_reads(ctx: Context, func: AST) -> list[ast.Call]:
    """``.item()`` (or ``float()``) of a tensor computed from the function's parameters, on the device (not through
    ``.cpu()``/NumPy), outside a log interval or a branch that rarely runs. (``.tolist()`` there
    mostly turns indices into host lookups the loss needs: ``[gts[i] for i in idx.tolist()]``.)"""
    out = []
    for node in ctx.walk_body(func.body):
        if node.__class__ is not ast.Call:
            continue
        if node.func.__class__ is ast.Attribute and node.func.attr == "item" and not node.args:
            subject = node.func.value
        elif (subject := cast_operand(ctx, node, _FLOAT)) is None or host_number(ctx, subject, node) or side_output(ctx, subject, node) \
                or only_metadata(subject) or _sized(ctx, subject, node) \
                or not settings_gated(ctx, node):
            continue  # float(diff) per sample, as .item() (semantics.castreads); not of a number
        if (from_inputs(ctx, subject, func) or is_device_tensor(ctx, subject, node)) and not on_host(ctx, subject, func) \
                and not only_metadata(subject) \
                and not runs_periodically(ctx, node) and not runs_rarely(ctx, node):
            out.append(node)
    return out


def _sized(ctx: Context, name: AST, use: AST) -> bool:
    """``batch_size`` of ``batch_size = x.size(0)``: a number made from shapes alone."""
    b = ctx.binding_at(name.id, use) if name.__class__ is ast.Name else None
    return b is not None and b.kind == "assign" and b.value is not None and only_metadata(b.value)


_MASK_INDEXES = (ast.Compare, ast.UnaryOp, ast.Name, ast.Attribute, ast.Call, ast.BinOp)


def loss_mask_reads(ctx: Context, per_step: PerStep) -> list[tuple[AST, AST, str]]:
    """``(selection, function, where it runs every step)`` for each boolean-mask selection
    (``x[mask]``, ``x.masked_select(mask)``; one per statement) in a loss function the training
    step calls every step with device tensors, or in a helper that selects from what it is handed
    (a metric: ``output[output == target]``) - outside the training loop itself."""
    found: list[tuple[AST, AST, str]] = []
    statements: set[int] = set()
    for sub in sorted(ctx.nodes.get(ast.Subscript, ()), key=_position):  # (the first selection of a statement)
        index = sub.slice
        if index.__class__ is ast.Tuple and index.elts:  # obs[is_expert.squeeze(1), ...], x[:, label == k]: the one entry no slice
            index = next((e for e in index.elts if e.__class__ is not ast.Slice), index.elts[0])
        if sub.ctx.__class__ is not ast.Load or index.__class__ not in _MASK_INDEXES:
            continue
        stmt = ctx.statement_of(sub)
        if id(stmt) not in statements and hot_region_of(ctx, sub) is None:
            hit = _masked_in_loss(ctx, sub, index, per_step)
            if hit is not None:
                statements.add(id(stmt))
                found.append(hit)
    for call in ctx.calls_named("nonzero") if "nonzero" in ctx.source else ():
        mask = _nonzero_subject(call)
        if mask is not None and hot_region_of(ctx, call) is None and id(ctx.statement_of(call)) not in statements:
            hit = _nonzero_in_loss(ctx, call, mask, per_step)
            if hit is not None:
                statements.add(id(ctx.statement_of(call)))
                found.append(hit)
    for call in ctx.calls_named("masked_select") if "masked_select" in ctx.source else ():
        if call.func.__class__ is ast.Attribute and call.args and hot_region_of(ctx, call) is None:
            hit = _masked_in_loss(ctx, call, call.args[0], per_step)
            if hit is not None:
                found.append(hit)
    return found


def _position(node: AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _masked_in_loss(ctx: Context, node: AST, index: AST, per_step: PerStep) -> tuple[AST, AST, str] | None:
    func = ctx.function_of(node) if index.__class__ in _MASK_INDEXES else None
    if func is None or not made_as_mask(ctx, index, node) or _host_mask(ctx, index, node):
        return None
    if "loss" not in func.name.lower() and not selects_from_arguments(ctx, node, func):
        return None  # (a metric helper: only a selection from what it is handed)
    where = every_step_call(ctx, func, per_step, param=guarding_parameter(ctx, node, func))
    return (node, func, where) if where is not None else None


def _host_mask(ctx: Context, index: AST, use: AST) -> bool:
    """``emb[masked > 0]`` with ``masked`` a NumPy array the caller made (semantics.ndarrays): the
    mask is on the host, so is the size of the selection - no wait for the GPU."""
    while index.__class__ is ast.UnaryOp:
        index = index.operand
    side = index.left if index.__class__ is ast.Compare else index
    return side.__class__ is ast.Name and is_ndarray(ctx, side, use, methods=True)


def mask_read_kind(node: AST) -> str:
    """How a :func:`loss_mask_reads` hit is said in a message."""
    return "boolean mask's .nonzero()" if node.__class__ is ast.Call and last_name(node.func) == "nonzero" else "boolean-mask selection"


def _nonzero_subject(call: ast.Call) -> AST | None:
    """``m`` of ``m.nonzero()``, ``m.data.nonzero()`` or ``torch.nonzero(m)``."""
    func = call.func
    if func.__class__ is not ast.Attribute:
        return None
    if func.value.__class__ is ast.Name and func.value.id in ("torch", "th"):
        subject = call.args[0] if call.args else None
    else:
        subject = func.value
    while subject.__class__ is ast.Attribute and subject.attr == "data":
        subject = subject.value
    return subject


def _nonzero_in_loss(ctx: Context, call: ast.Call, mask: AST, per_step: PerStep) -> tuple[AST, AST, str] | None:
    """``(labels == k).nonzero()``, ``torch.nonzero(binary_mask).size(0)`` in a loss function or a
    helper of what it is handed (a mining or metric helper) that the step calls every step with
    device tensors: the size of the result has to reach the host, as a boolean-mask selection's."""
    func = ctx.function_of(call)
    if func is None or not made_as_mask(ctx, mask, call) or runs_rarely(ctx, call) or runs_periodically(ctx, call):
        return None
    if not from_inputs(ctx, mask, func) or on_host(ctx, mask, func) or is_eval_name(func.name) or assigns_targets(func):
        return None
    where = every_step_call(ctx, func, per_step, param=guarding_parameter(ctx, call, func))
    return (call, func, where) if where is not None else None


def loss_read_messages(ctx: Context, per_step: Callable[[Context, ast.Call], bool]) -> list[tuple[AST, str]]:
    """``(read, message)`` of each :func:`loss_reads` read outside the training loop itself (reads
    there are the rule's own loop checks), on an accelerator where the step calls it directly."""
    out: list[tuple[AST, str]] = []
    lines: set[int] = set()  # (one per line: float(a) - float(b))
    for read, func, where in loss_reads(ctx, per_step):
        if hot_region_of(ctx, read) is None and (where != "every training step" or on_accelerator(ctx, read)) \
                and (cast_operand(ctx, read) is None or read.lineno not in lines):
            lines.add(read.lineno)
            what = f".{read.func.attr}()" if read.func.__class__ is ast.Attribute and read.func.attr in SYNC_METHODS else (
                ctx.text(read) if cast_operand(ctx, read) is not None else f"{ctx.text(read.func)}(), which reads what it is given on the host,")
            out.append((read, f"{what} in {func.name}(), {where}, waits for the GPU"))
    return out
