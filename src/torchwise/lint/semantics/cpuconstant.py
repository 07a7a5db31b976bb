"""Scripts whose only device is a CPU constant: the file names no accelerator anywhere (no
``cuda``, ``gpu``, ``mps``, ``xla``, ``accelerator`` text), binds its device name to ``'cpu'`` (or
``torch.device('cpu')``) and nothing else, and every device it hands to ``.to(...)`` or a
``device=`` argument is that name (or a parameter of the same name, or ``'cpu'`` itself)::

    device = 'cpu'
    def log_prob(batch, policy, device):
        return policy(torch.tensor(batch.obs).to(device))      # a no-op move: everything is on the CPU
    ...
    for step in range(steps):
        loss = ppo_loss(batch, policy, device)
        print(float(loss))                                      # no GPU to wait for

Such a script (an RL tutorial, a CPU exercise) never touches a GPU: the per-step rules (TW205
copies to the device, TW207 host reads) do not apply. Only scripts no other module of the
project imports: a library module's functions may receive the caller's device tensors. A device
that a flag, config or ``torch.cuda.is_available()`` picks names an accelerator or is not a CPU
constant, so such files are not covered.
"""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.devices import is_dtype_expr

_CPU_BINDING = lazy_compile(r"^[ \t]*\w+[ \t]*=[ \t]*(?:\w+\.)?(?:device\()?['\"]cpu", re.M)
_ACCELERATOR = lazy_compile(r"cuda|gpu|accelerat|device_map|set_default_device|(?<![a-z])(?:mps|xla|tpu|hpu|npu)(?![a-z])", re.I)


def cpu_constant_script(ctx: Context) -> bool:
    """Is the file's only device a CPU constant (module doc)?"""
    src = ctx.source
    if "cpu" not in src or "cuda" in src or _CPU_BINDING.search(src) is None or _ACCELERATOR.search(src) is not None:
        return False
    names = _cpu_names(ctx)
    if names is None or not names:
        return False
    used = False
    for call in ctx.calls_named("to"):
        for arg in call.args[:1]:
            verdict = _cpu_device(ctx, arg, call, names)
            if verdict is None:
                return False
            used = used or verdict
        for kw in call.keywords:
            if kw.arg == "device" and not _cpu_device(ctx, kw.value, call, names):
                return False
    for node in ctx.nodes.get(ast.keyword, ()):
        if node.arg == "device" and _cpu_device(ctx, node.value, node, names) is not True:
            return False
    return used and not _imported_by_project(ctx)


def _cpu_names(ctx: Context) -> set[str] | None:
    """Names bound to a CPU device; None when such a name is also bound to anything else."""
    out: set[str] = set()
    for node in ctx.nodes.get(ast.Assign, ()):
        if len(node.targets) == 1 and node.targets[0].__class__ is ast.Name and _cpu_value(ctx, node.value):
            out.add(node.targets[0].id)
    if not out:
        return out
    for kind in (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With, ast.NamedExpr):
        for node in ctx.nodes.get(kind, ()):
            targets = node.targets if kind is ast.Assign else [node.target] if kind is not ast.With else [
                i.optional_vars for i in node.items if i.optional_vars is not None]
            for t in targets:
                for n in ast.walk(t):
                    if n.__class__ is ast.Name and n.id in out and not (kind is ast.Assign and _cpu_value(ctx, node.value)):
                        return None
    for node in ctx.nodes.get(ast.ImportFrom, ()):
        if any((a.asname or a.name) in out for a in node.names):
            return None
    return out


def _cpu_value(ctx: Context, value: AST | None) -> bool:
    if value.__class__ is ast.Constant:
        return isinstance(value.value, str) and value.value.startswith("cpu")
    if value.__class__ is ast.Call and len(value.args) == 1 and not value.keywords and ctx.qualname(value.func) == "torch.device":
        return _cpu_value(ctx, value.args[0])
    return False


def _cpu_device(ctx: Context, arg: AST, use: AST, names: set[str], depth: int = 2) -> bool | None:
    """True: a CPU device; False: no device (a dtype, another tensor); None: a device of unknown kind."""
    if _cpu_value(ctx, arg):
        return True
    if arg.__class__ is ast.Name:
        b = ctx.binding_at(arg.id, use)
        if arg.id in names and (b is None or b.kind == "param" or (b.kind == "assign" and _cpu_value(ctx, b.value))):
            return True
        if b is not None and b.kind == "param" and depth > 0 and _cpu_parameter(ctx, arg.id, use, names, depth - 1):
            return True
        return False if is_dtype_expr(ctx, arg) or is_dtype_expr(ctx, ctx.resolve(arg, use)) else None
    if is_dtype_expr(ctx, arg):
        return False
    return None


def _cpu_parameter(ctx: Context, name: str, use: AST, names: set[str], depth: int) -> bool:
    """``name`` is a parameter of a module-level function of the file that every call of the file
    (one at least) hands a CPU device (``log_prob(batch, actor, DEVICE)`` with ``DEVICE = 'cpu'``)."""
    func = ctx.function_of(use)
    if func is None or ctx.parent(func).__class__ is not ast.Module:
        return False
    params = [a.arg for a in func.args.args]
    index = params.index(name) if name in params else -1
    calls = [c for c in ctx.calls_named(func.name) if c.func.__class__ is ast.Name]
    for call in calls:
        given = next((k.value for k in call.keywords if k.arg == name), None)
        if given is None and 0 <= index < len(call.args) and not any(a.__class__ is ast.Starred for a in call.args[:index + 1]):
            given = call.args[index]
        if given is None or _cpu_device(ctx, given, call, names, depth) is not True:
            return False
    return bool(calls)


def _imported_by_project(ctx: Context) -> bool:
    stem = os.path.basename(ctx.path)[:-3]
    pattern = None
    for p, t in ctx.project.files:
        if p != ctx.path and stem in t and "import" in t:
            pattern = pattern or re.compile(r"^[ \t]*(?:from[ \t]+[\w.]*\b" + re.escape(stem) + r"\b[ \t]+import|import[ \t][^\n]*\b"
                                            + re.escape(stem) + r"\b)", re.M)
            if pattern.search(t):
                return True
    return False


__all__ = ["cpu_constant_script"]
