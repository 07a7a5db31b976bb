"""Whether code can run without a CUDA GPU: a CPU fallback in the file, moves the user opted
into with a device flag, and scripts that only ever run on a GPU."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.availflags import availability_ifs

# a GPU check, an accelerator helper or another backend, as whole names (`json.dumps` names no
# "mps", `torch.cuda.get_device_name(0)` is no `get_device()`)
_FALLBACK_HINTS = lazy_compile(r"is_available|accelerator|\bmps\b|\bget_device\(|select_device")
# an `if` test that chooses the device: `if args.cuda:`, `if use_gpu:`, `if not args.use_cpu:`
# (`if x.is_cuda:` follows where the data already is: it chooses nothing)
_DISTRIBUTED = ("DistributedDataParallel", "init_process_group", "local_rank", "set_device")
_DEVICE_FLAG = lazy_compile(r"(?<!is_)cuda|gpu|cpu", re.I)


def _moves_back(ctx: Context, const: ast.Constant) -> bool:
    """``"cpu"`` where nothing is chosen: a result moved back to the host (``x0.to("cpu")``,
    ``.to(torch.device("cpu"))``) or a checkpoint mapped while it loads (``map_location="cpu"``,
    ``map_location=torch.device("cpu")``, ``torch.load(f, "cpu")``)."""
    node, parent = const, ctx.parent(const)
    if parent.__class__ is ast.Call and node in parent.args and ctx.qualname(parent.func) == "torch.device":
        node, parent = parent, ctx.parent(parent)
    if parent.__class__ is ast.keyword:
        return parent.arg == "map_location" or parent.arg == "device" and _is_to(ctx.parent(parent))
    return parent.__class__ is ast.Call and node in parent.args and (
        _is_to(parent) or ctx.qualname(parent.func) == "torch.load")


def _is_to(call: ast.AST) -> bool:
    return call.__class__ is ast.Call and call.func.__class__ is ast.Attribute and call.func.attr == "to"


def has_cpu_fallback(ctx: Context) -> bool:
    """The file can choose the CPU: it checks for a GPU (``torch.cuda.is_available()``, the device
    count, an accelerator helper), names a ``"cpu"`` device (moving results back with
    ``.to("cpu")`` or mapping a checkpoint with ``map_location="cpu"`` does not count) or has a
    function taking a ``device`` parameter."""
    key = ("sem:cpu-fallback",)
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = own_cpu_choice(ctx) or any(
            a.arg == "device" for f in ctx.nodes.get(ast.FunctionDef, ()) for a in f.args.args + f.args.kwonlyargs)
    return found


def own_cpu_choice(ctx: Context) -> bool:
    """:func:`has_cpu_fallback` but for a ``device`` parameter: the file itself checks for a GPU or
    names a ``"cpu"`` device (a parameter only takes the device its callers choose)."""
    key = ("sem:own-cpu-choice",)
    found = ctx._cache.get(key)
    if found is None:
        src = ctx.source
        found = ctx._cache[key] = (("is_available" in src or "accelerator" in src or "select_device" in src
                                    or "get_device(" in src or "mps" in src) and _FALLBACK_HINTS.search(src) is not None) or ("cpu" in src and any(
            n.__class__ is ast.Constant and isinstance(n.value, str) and n.value.strip().lower().startswith("cpu")
            and not _moves_back(ctx, n) for n in ctx.nodes.get(ast.Constant, ())))
    return found


def under_device_flag(ctx: Context, node: AST, moves_too: bool = False) -> bool:
    """``node`` sits under an ``if`` whose test chooses the device (``if args.cuda:``,
    ``if not args.use_cpu:``); with ``moves_too``, also under ``if x.is_cuda:``."""
    return bool(device_flag_ifs(ctx, node, moves_too))


def device_flag_ifs(ctx: Context, node: AST, moves_too: bool = False) -> list[ast.If]:
    """The ``if`` statements around ``node`` whose test chooses the device (see :func:`under_device_flag`)."""
    out = []
    for if_node, _ in ctx.enclosing_ifs(node):
        text = ctx.text(if_node.test)
        if _DEVICE_FLAG.search(text) or (moves_too and "is_cuda" in text):
            out.append(if_node)
    out.extend(i for i in availability_ifs(ctx, node) if i not in out)  # `if args.mixmode:`, mixmode = ... and is_available()
    return out


def chooses_by_flag(ctx: Context) -> bool:
    """The file moves to CUDA under a plain device flag (``if args.cuda: batch = batch.cuda()``,
    ``if not opt.no_cuda:``, ``if self.use_gpu:``): it offers its user a run without a GPU,
    whatever else it hard-codes (a ``torch.cuda.synchronize()`` in a timing helper does not make
    it a GPU-only benchmark)."""
    found = ctx._cache.get("sem:flag-choice")
    if found is None:
        found = ctx._cache["sem:flag-choice"] = any(_flag_test(ctx, i.test) for c in ctx.calls_named("cuda")
                                                    for i, _ in ctx.enclosing_ifs(c) if i.__class__ is ast.If)
    return found


def _flag_test(ctx: Context, test: ast.AST) -> bool:
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        test = test.operand
    return (test.__class__ is ast.Name or test.__class__ is ast.Attribute) and _DEVICE_FLAG.search(ctx.text(test)) is not None


def pinned_gpu_script(ctx: Context) -> bool:
    """A single-process script that only ever runs on one CUDA GPU it picks itself: it sets
    ``os.environ["CUDA_VISIBLE_DEVICES"]`` to one choice, moves to the GPU with ``.cuda()`` and
    has no CPU fallback at all - no GPU check, no ``"cpu"`` device, no device flag around any
    move. What it saves comes from ``cuda:0`` of one visible device and loads back there.
    (A distributed script is not: each of its processes has its own GPU.)"""
    key = ("sem:pinned-gpu",)
    found = ctx._cache.get(key)
    if found is None:
        src = ctx.source
        if "CUDA_VISIBLE_DEVICES" not in src or any(w in src for w in _DISTRIBUTED):
            ctx._cache[key] = False
            return False
        moves = [c for c in ctx.calls_named("cuda") if c.func.__class__ is ast.Attribute]
        found = ctx._cache[key] = bool(moves) and not has_cpu_fallback(ctx) and not any(
            under_device_flag(ctx, c) for c in moves)
    return found


_CUDA_FLAGS = frozenset({"cuda", "use_cuda", "use_gpu", "gpu"})
_CUDA_TIMING = frozenset({"torch.cuda.Event", "torch.cuda.synchronize"})


def gpu_only_file(ctx: Context) -> bool:
    """Evidence in the file that it is written for a GPU only: it configures an imported library
    for CUDA with a constant (``Config.cuda = True``: the library moves the batches itself), or
    it times itself with CUDA events / ``torch.cuda.synchronize()`` under no ``if`` (a speed-run
    or benchmark script: its numbers mean nothing on a CPU)."""
    found = ctx._cache.get("sem:gpu-only-file")
    if found is None:
        found = ctx._cache["sem:gpu-only-file"] = _gpu_only_file(ctx)
    return found


def _gpu_only_file(ctx: Context) -> bool:
    for node in ctx.nodes.get(ast.Assign, ()):
        v = node.value
        if v.__class__ is ast.Constant and v.value is True and len(node.targets) == 1:
            t = node.targets[0]
            if t.__class__ is ast.Attribute and t.attr in _CUDA_FLAGS and t.value.__class__ is ast.Name \
                    and ctx.qualname(t.value) not in (None, t.value.id):
                return True
    if "torch.cuda." not in ctx.source:
        return False
    for call in ctx.nodes.get(ast.Call, ()):
        if ctx.qualname(call.func) in _CUDA_TIMING and not any(True for _ in ctx.enclosing_ifs(call)):
            return True
    return False
