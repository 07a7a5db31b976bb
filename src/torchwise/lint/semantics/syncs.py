"""Host synchronisations: the calls that read a value on the host (``.item()``, ``float(t)``,
``print(t)``, ``nonzero()``: :func:`sync_call`), and those that are not a value read: indexing with a boolean mask (the result's
size depends on the data, so the host waits to learn it), reads of a module's own
parameters inside its methods (every forward), and explicit ``torch.cuda.synchronize()`` calls
(where a loop already waits, where it measures time, where a read follows; not under an opt-in
timing option, ``if args.time_exp:`` with ``default=0``, whose branch reads a timer)."""

from __future__ import annotations

import ast
import os
from typing import Callable, Iterator

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.semantics.delegation import delegated_loop_of
from torchwise.lint.semantics.devices import SYNC_METHODS, is_device_tensor
from torchwise.lint.semantics.hostreads import printed_tensor
from torchwise.lint.semantics.optiondefaults import option_default
from torchwise.lint.semantics.steps import hot_region_of, is_backward_call, is_optimizer_step, runs_periodically
from torchwise.lint.semantics.stepvalues import step_subject

# TW207's suggestions for an explicit synchronize and for a repeat by counts read per element
DROP_FIX = "drop it: later kernels and reads wait for the GPU where they need to"
REPEAT_FIX = "repeat by the whole count tensor at once: torch.repeat_interleave(x, counts, dim=0)"
SYNC_FIX = ("drop it, keep the values on the device (loss.detach()) and read them once per log interval; "
            "to time steps, use CUDA events or time a whole interval")

_NOT_PER_CALL = ("__init__", "reset", "init", "extra_repr", "__repr__", "__str__", "load", "save", "build")


def _is_mask(ctx: Context, expr: AST, use: AST, depth: int = 2) -> bool:
    """A boolean tensor on the device: a comparison of device tensors (``mask == 0``,
    ``y == y``), its negation (``~mask``), a name bound to one, or a device tensor named
    ``*mask`` (``data.train_mask`` of a batch moved to the device)."""
    cls = expr.__class__
    if cls is ast.Compare:
        return len(expr.ops) == 1 and expr.ops[0].__class__ in (ast.Eq, ast.NotEq, ast.Lt, ast.Gt, ast.LtE, ast.GtE) and (
            is_device_tensor(ctx, expr.left, use) or is_device_tensor(ctx, expr.comparators[0], use))
    if cls is ast.UnaryOp and expr.op.__class__ is ast.Invert:
        return _is_mask(ctx, expr.operand, use, depth)
    if cls is ast.Name and depth > 0:
        b = ctx.binding_at(expr.id, use)
        if b is not None and b.kind == "assign" and b.value is not None and b.value.__class__ in (ast.Compare, ast.UnaryOp):
            return _is_mask(ctx, b.value, b.node, depth - 1)
        if b is not None and b.kind == "assign" and bool_cast(ctx, b.value):
            return is_device_tensor(ctx, b.value.func.value, b.node)  # pos = pos.to(device).to(torch.bool)
    if cls in (ast.Name, ast.Attribute):
        return (last_name(expr) or "").lower().endswith("mask") and is_device_tensor(ctx, expr, use)
    return False


def mask_like(ctx: Context, index: AST, use: AST) -> bool:
    """An index that is a boolean mask by its making or its name, device or not evident:
    ``~mask``, ``x > 0``, ``non_pad_mask``, ``labels.bool()``, a name bound to a comparison."""
    cls = index.__class__
    if cls is ast.Compare or (cls is ast.UnaryOp and index.op.__class__ is ast.Invert):
        return True
    if cls is ast.Call and index.func.__class__ is ast.Attribute and index.func.attr == "bool" and not index.args:
        return True
    if cls in (ast.Name, ast.Attribute):
        name = (last_name(index) or "").lower()
        if name.endswith("mask"):
            return True
        if cls is ast.Name and index.id in _compared_names(ctx):
            b = ctx.binding_at(index.id, use)
            return b is not None and b.kind == "assign" and b.value is not None and b.value.__class__ in (ast.Compare, ast.UnaryOp)
    return False


def _compared_names(ctx: Context) -> frozenset[str]:
    """Names the file assigns a comparison or a negation to (``keep = dist < r``): the candidates
    for a mask bound to a name (one pass over the assignments, cached)."""
    found = ctx._cache.get("sem:compared-names")
    if found is None:
        found = ctx._cache["sem:compared-names"] = frozenset(
            a.targets[0].id for a in ctx.nodes.get(ast.Assign, ())
            if len(a.targets) == 1 and a.targets[0].__class__ is ast.Name and a.value.__class__ in (ast.Compare, ast.UnaryOp))
    return found


_RESHAPES = frozenset({"view", "reshape", "flatten", "squeeze", "unsqueeze", "contiguous"})


def boolean_mask_index(ctx: Context, sub: ast.Subscript) -> bool:
    """``out[mask]`` read with a boolean mask on the device (``pred[is_labeled]``,
    ``outputs[mask == 0]``, ``out[data.train_mask]``, ``out[pred < n, :]``) from a device tensor."""
    if sub.ctx.__class__ is not ast.Load:
        return False
    index = sub.slice
    if index.__class__ is ast.Tuple:  # out[mask, :], masks[:, :, keep]: the one entry that is no slice
        rest = [e for e in index.elts if e.__class__ is not ast.Slice]
        index = rest[0] if len(rest) == 1 and len(index.elts) > 1 else None
    while index.__class__ is ast.Call and index.func.__class__ is ast.Attribute and index.func.attr in _RESHAPES:
        index = index.func.value  # logit.flatten(0, 1)[mask.view(-1)]: the same mask, reshaped
    if index.__class__ not in (ast.Compare, ast.UnaryOp, ast.Name, ast.Attribute):
        return False
    cast = False  # a device mask cast to bool (ids[pos]): indexing with it sizes the result on the host whatever ids is
    if index.__class__ is ast.Name and not (index.id.lower().endswith("mask") or index.id.startswith(("is_", "has_"))):
        bound = ctx.binding_at(index.id, sub)
        cast = bound is not None and bound.kind == "assign" and bool_cast(ctx, bound.value)
        if bound is None or bound.kind != "assign" or bound.value.__class__ not in (ast.Compare, ast.UnaryOp) and not cast:
            return False
    return _is_mask(ctx, index, sub) and (cast or is_device_tensor(ctx, sub.value, sub))


def bool_cast(ctx: Context, value: AST | None) -> bool:
    """A tensor cast to ``bool`` by the call that makes it: ``m.bool()``, ``m.to(torch.bool)``,
    ``m.type(torch.bool)`` (``pos = pos.to(device).flatten(1).to(torch.bool)``: a mask, whatever its name)."""
    if value.__class__ is not ast.Call or value.func.__class__ is not ast.Attribute or value.keywords:
        return False
    if value.func.attr == "bool":
        return not value.args
    return value.func.attr in ("to", "type") and len(value.args) == 1 and ctx.qualname(value.args[0]) == "torch.bool"


def parameter_read(ctx: Context, call: ast.Call) -> str | None:
    """``self.gamma.item()`` in a method of an ``nn.Module`` class of this file, where
    ``self.gamma`` is an ``nn.Parameter`` (or a registered buffer): the method runs in the
    forward pass, so the read waits for the GPU on every step. Returns ``self.gamma``."""
    recv = call.func.value if call.func.__class__ is ast.Attribute else None
    if recv is not None and recv.__class__ is ast.Subscript and recv.slice.__class__ is ast.Constant:
        recv = recv.value  # self.params[0].item(): one entry of a buffer of settings
    if recv is None or recv.__class__ is not ast.Attribute or recv.value.__class__ is not ast.Name or recv.value.id != "self":
        return None
    func = ctx.function_of(call)
    klass = ctx.class_of(call)
    if func is None or klass is None or func.name.lower().lstrip("_").startswith(_NOT_PER_CALL):
        return None
    if not any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)):
        return None
    if any(last_name(v.func) == "Parameter" for v in ctx.self_attr_values(klass, recv.attr) if v.__class__ is ast.Call):
        return f"self.{recv.attr}"
    for c in ctx.calls_named("register_buffer"):
        if ctx.class_of(c) is klass and c.args and c.args[0].__class__ is ast.Constant and c.args[0].value == recv.attr:
            return f"self.{recv.attr}"
    return None


_TIMERS = frozenset({"time", "perf_counter", "monotonic", "elapsed_time", "record"})


def measures_time(ctx: Context, region: ast.AST) -> bool:
    """Does the loop (or step function) measure time: ``time.time()``, ``perf_counter()``, CUDA events?"""
    return any(n.__class__ is ast.Call and last_name(n.func) in _TIMERS for n in ast.walk(region))


_BENCH_PREFIXES = ("test", "bench", "time_", "timing", "profile", "measure", "speed")


def timing_benchmark(ctx: Context, loop: ast.AST) -> bool:
    """``for i in range(1000):`` repeating one step on the same inputs (the loop variable unused)
    in a benchmark function (``test_NSA``, ``benchmark_layer``...) that reads a timer before the
    loop and again after it: the loop measures speed or memory, and what it trains is thrown away."""
    if loop.__class__ is not ast.For or loop.target.__class__ is not ast.Name or loop.iter.__class__ is not ast.Call \
            or last_name(loop.iter.func) != "range":
        return False
    func = ctx.function_of(loop)
    if func is None or func.__class__ is ast.Lambda:
        return False
    name = func.name.lower().lstrip("_")
    if not (name.startswith(_BENCH_PREFIXES) or "benchmark" in name):
        return False
    var = loop.target.id
    if any(n.__class__ is ast.Name and n.id == var for b in loop.body for n in ast.walk(b)):
        return False  # the step depends on the iteration: it may read new data each time
    start, end = loop.lineno, loop.end_lineno or loop.lineno
    timers = [n.lineno for n in ast.walk(func) if n.__class__ is ast.Call and last_name(n.func) in _TIMERS
              and not start <= n.lineno <= end]
    return any(t < start for t in timers) and any(t > end for t in timers)


def read_after(ctx: Context, region: ast.AST, call: ast.Call) -> bool:
    """A host read (``loss.item()``) later in the loop: it would wait for the GPU anyway, so the
    explicit synchronize adds no stall of its own. Not a read under a log interval (``if step %
    20 == 0:``): the synchronize still stalls the other steps (a batch timer's)."""
    pos = (call.lineno, call.col_offset)
    return any(n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr in SYNC_METHODS
               and (n.lineno, n.col_offset) > pos and not runs_periodically(ctx, n) for n in ast.walk(region))


def synchronized_before(ctx: Context, loop: ast.AST, node: ast.AST) -> ast.Call | None:
    """The `torch.cuda.synchronize()` the loop body runs unconditionally before `node`'s statement
    (the last one), if any: a read after it adds no wait of its own - the synchronize is the wait."""
    line = getattr(node, "lineno", 0)
    found = None
    for stmt in getattr(loop, "body", ()):
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            return found
        if stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call:
            if ctx.qualname(stmt.value.func) in SYNCHRONIZE:
                found = stmt.value
                continue
        if found is not None and any(c.__class__ is ast.Call and (is_backward_call(ctx, c) or is_optimizer_step(ctx, c))
                                     for c in ast.walk(stmt)):
            found = None  # new work queued after the synchronize (the step's backward): the read waits for it itself
    return None


SYNCHRONIZE = frozenset({"torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.xpu.synchronize", "torch.mps.synchronize"})


CASTS = ("float", "int", "bool")
_NUMPY_CASTS = frozenset({"numpy.float", "numpy.int", "numpy.bool"})  # the builtins under NumPy's removed aliases


def sync_call(ctx: Context, call: ast.Call) -> tuple[ast.AST, str] | None:
    """``(value read, description)`` when ``call`` is a sync method, ``nonzero`` or ``print`` of a tensor."""
    func = call.func
    name = last_name(func)
    if name == "print":
        subject = printed_tensor(ctx, call) if func.__class__ is ast.Name else None
        return (subject, "print() of a tensor") if subject is not None else None
    if name in CASTS:  # float(loss), bool(loss == 0): the Python value of a tensor
        if func.__class__ is not ast.Name and ctx.qualname(func) not in _NUMPY_CASTS or len(call.args) != 1 or call.keywords:
            return None  # (np.float(top1): NumPy's old alias of float)
        arg = call.args[0]
        subject = arg.left if arg.__class__ is ast.Compare and len(arg.ops) == 1 else arg
        return subject, f"{name}() of a tensor"
    if name == "nonzero":
        q = ctx.qualname(func)
        if q is not None:
            return (call.args[0], "nonzero()") if q == "torch.nonzero" and call.args else None
        return (func.value, "nonzero()") if func.__class__ is ast.Attribute else None
    if func.__class__ is not ast.Attribute or call.args and name != "cpu":
        return None
    subject = func.value
    if _inner_sync(subject):
        return None
    parent = ctx.parent(call)
    if parent.__class__ is ast.Attribute and parent.attr in ("parameters", "state_dict", "named_parameters", "buffers"):
        return None  # m.cpu().parameters(): a module moved, not a value read
    return subject, f".{name}()"


def _inner_sync(expr: ast.AST) -> bool:
    """Does the receiver chain already contain a sync (``x.cpu().numpy()``: report ``.cpu()`` only)?"""
    while True:
        if expr.__class__ is ast.Call:
            func = expr.func
            if func.__class__ is ast.Attribute and func.attr in SYNC_METHODS:
                return True
            expr = func.value if func.__class__ is ast.Attribute else func
        elif expr.__class__ in (ast.Attribute, ast.Subscript):
            expr = expr.value
        else:
            return False


def _per_step(ctx: Context, node: AST) -> AST | None:
    """The training loop or step function that runs ``node`` every step, a loop handing its step
    to a call included (semantics.delegation)."""
    return hot_region_of(ctx, node) or delegated_loop_of(ctx, node)


def legacy_reads(ctx: Context) -> list[ast.Subscript]:
    """``loss.data[0]`` of a device value in a training loop or step: the pre-0.4 spelling of
    ``.item()``, a host read all the same."""
    if ".data[0]" not in ctx.source:
        return []
    out = []
    for sub in ctx.nodes.get(ast.Subscript, ()):
        value, index = sub.value, sub.slice
        if value.__class__ is not ast.Attribute or value.attr != "data" or index.__class__ is not ast.Constant or index.value != 0:
            continue
        if _per_step(ctx, sub) is not None and step_subject(ctx, value.value, sub):
            out.append(sub)
    return out


def needless_synchronizes(ctx: Context) -> list[ast.Call]:
    """``torch.cuda.synchronize()`` run on every step of the training loop, outside any test but
    one of the run's settings (``if torch.cuda.is_available():``, ``if args.distributed:``),
    where the loop measures no time (a benchmark waits on purpose) and reads nothing after it;
    and one under a test of a setting that the step's reads follow (they wait without it, and
    so does the synchronize with it: reported both; an unconditional one is reported for the
    reads after it instead, see :func:`synchronized_before`)."""
    if "synchronize" not in ctx.source:
        return []
    out = []
    for call in ctx.calls_named("synchronize"):
        loop = _per_step(ctx, call) if ctx.qualname(call.func) in SYNCHRONIZE else None
        if loop is None:
            continue
        ifs = ctx.enclosing_ifs(call)
        if any(in_body and _timing_switch(ctx, node) for node, in_body in ifs):
            continue  # `if args.time_exp: torch.cuda.synchronize(); t1 = time.time()`: opt-in, and the timer needs it
        if ifs and not all(in_body and setting_test(ctx, node.test, loop) for node, in_body in ifs if ctx.contains(loop, node)):
            continue
        read = read_after(ctx, loop, call)
        if not read and not _benchmark(ctx, loop) or read and ifs:
            out.append(call)
    return out


def _benchmark(ctx: Context, loop: AST) -> bool:
    """A loop that measures time to benchmark the step (it waits on purpose): a timer in a function
    named for benchmarking (``benchmark_train``, ``time_step``), a list of step times, a timed repeat of one step; not
    a training loop that times its batches for a meter (``batch_time.update(time.time() - end)``)."""
    if not measures_time(ctx, loop):
        return False
    func = ctx.function_of(loop) if loop.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef) else loop
    name = func.name.lower().lstrip("_") if func is not None else ""
    stem = os.path.basename(ctx.path).lower()
    return name.startswith(_BENCH_PREFIXES) or "benchmark" in name or timing_benchmark(ctx, loop) \
        or any(word in stem for word in ("bench", "profil", "speed", "throughput")) or any(
            n.__class__ is ast.Call and last_name(n.func) == "append" and n.args and any(  # times.append(perf_counter() - t0)
                m.__class__ is ast.Call and last_name(m.func) in _TIMERS for m in ast.walk(n.args[0])) for n in ast.walk(loop))


def _timing_switch(ctx: Context, node: AST) -> bool:
    """An ``if`` on an option that is off unless the user sets it (``--time_exp`` with ``default=0``)
    whose branch reads a timer: the synchronize in it makes the measurement right."""
    return node.__class__ is ast.If and node.test.__class__ is ast.Attribute and option_default(ctx, node.test) is False \
        and any(n.__class__ is ast.Call and last_name(n.func) in _TIMERS for n in ctx.walk_body(node.body))


_SETTING_CALLS = frozenset({"is_available", "is_initialized", "device_count", "get_world_size"})


def setting_test(ctx: Context, test: AST, loop: AST) -> bool:
    """A test of the run's settings, the same on every pass of ``loop``: ``args.distributed``,
    ``torch.cuda.is_available()``, ``args.local_rank != -1`` - names and attributes bound before
    the loop, constants, and the device queries; no modulo, no other call."""
    start = loop.lineno
    for n in ast.walk(test):
        cls = n.__class__
        if cls is ast.BinOp:
            return False
        if cls is ast.Call and last_name(n.func) not in _SETTING_CALLS:
            return False
        if cls is ast.Name and not (n.id in ("torch", "dist", "self") or _bound_before(ctx, n, start)):
            return False
    return True


def _bound_before(ctx: Context, name: ast.Name, line: int) -> bool:
    b = ctx.binding_at(name.id, name)
    return b is not None and (b.kind in ("param", "import") or b.pos[0] < line)



def legacy_findings(ctx: Context, report: Callable[..., Finding | None]) -> Iterator[Finding]:
    """TW207's findings for ``loss.data[0]`` (pre-0.4 ``.item()``) and a needless
    ``torch.cuda.synchronize()``, where ``report`` (the rule's every-step test) finds them per step."""
    yield from filter(None, (report(ctx, sub, None, f"{ctx.text(sub)} (the pre-0.4 .item())", check_subject=False)
                             for sub in legacy_reads(ctx)))
    yield from filter(None, (report(ctx, call, None, f"{ctx.text(call)}", check_subject=False, suggestion=DROP_FIX)
                             for call in needless_synchronizes(ctx)))
