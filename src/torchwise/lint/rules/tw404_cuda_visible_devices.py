"""TW404: ``CUDA_VISIBLE_DEVICES`` set in code after CUDA was already initialised."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, keyword
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.late_env import built_after_init, constructor_runs
from torchwise.lint.semantics.unrunbranches import in_unrun_branch

VAR = "CUDA_VISIBLE_DEVICES"
# torch.cuda functions that initialise the driver (and so fix the set of visible devices)
_INIT_FUNCS = frozenset({
    "is_available", "device_count", "set_device", "current_device", "get_device_name",
    "get_device_properties", "get_device_capability", "synchronize", "mem_get_info", "memory_allocated",
    "memory_reserved", "max_memory_allocated", "empty_cache", "init", "Stream", "Event", "current_stream",
})
_CUDA_STR = lazy_compile(r"^cuda(:\d+)?$")


def _env_sets(ctx: Context) -> list[ast.AST]:
    """Statements/calls that set ``CUDA_VISIBLE_DEVICES`` in ``os.environ``."""
    out: list[ast.AST] = []
    for node in ctx.nodes.get(ast.Assign, ()):
        for t in node.targets:
            if (
                t.__class__ is ast.Subscript and ctx.qualname(t.value) == "os.environ"
                and t.slice.__class__ is ast.Constant and t.slice.value == VAR
            ):
                out.append(node)
    for call in ctx.calls_named("setdefault", "putenv", "update"):
        q = ctx.qualname(call.func)
        if q in ("os.environ.setdefault", "os.putenv"):
            if call.args and call.args[0].__class__ is ast.Constant and call.args[0].value == VAR:
                out.append(call)
        elif q == "os.environ.update" and call.args and call.args[0].__class__ is ast.Dict:
            if any(k.__class__ is ast.Constant and k.value == VAR for k in call.args[0].keys if k is not None):
                out.append(call)
    return out


def cuda_init(ctx: Context, call: ast.Call) -> bool:
    """Does this call initialise CUDA?"""
    func = call.func
    q = ctx.qualname(func)
    if q is not None:
        if q.startswith("torch.cuda.") and q.count(".") == 2 and q.rsplit(".", 1)[1] in _INIT_FUNCS:
            return True
        return False
    if func.__class__ is ast.Attribute:
        if func.attr == "cuda":
            return True
        if func.attr == "to":
            arg = call.args[0] if call.args else (keyword(call, "device").value if keyword(call, "device") else None)
            return arg is not None and arg.__class__ is ast.Constant and isinstance(arg.value, str) and bool(_CUDA_STR.match(arg.value))
    return False


def _other_branch(ctx: Context, init: ast.AST, node: ast.AST) -> bool:
    """``init`` and ``node`` sit in different branches of one ``if`` (``if args.distributed:
    torch.cuda.set_device(...) else: os.environ["CUDA_VISIBLE_DEVICES"] = ...``): one run never
    does both."""
    branches = {id(i): body for i, body in ctx.enclosing_ifs(init)}
    return any(id(i) in branches and branches[id(i)] != body for i, body in ctx.enclosing_ifs(node))


class LateCudaVisibleDevices(Rule):
    code = "TW404"
    name = "late-cuda-visible-devices"
    triggers = (VAR,)
    per_call = True  # a setting that never runs, or after an initialisation that never runs, is harmless
    doc = """\
What it flags
  `os.environ["CUDA_VISIBLE_DEVICES"] = ...` (also `setdefault`, `update`, `os.putenv`) placed
  after code in the same function or script that initialises CUDA: `torch.cuda.is_available()`,
  `device_count()`, `set_device(...)`, `.cuda()`, `.to("cuda")`... An initialisation in the
  other branch of the same `if` (`set_device` when distributed, the variable set otherwise)
  does not count: one run never does both, nor does one in a block switched off by a constant
  (`flag = 0` before `if flag:`). Across modules: a setting in a class's constructor
  (or a method the constructor calls, as experiment classes' `_acquire_device()` do) when
  another file of the project initialises CUDA and then, in the same scope, builds that class,
  a subclass of it, or an alias of either (`Exp = Exp_Main; exp = Exp(args)`).

Why it matters
  The CUDA driver reads `CUDA_VISIBLE_DEVICES` once, when it initialises. Changing it later
  has no effect: the process keeps seeing every GPU, jobs meant for different GPUs land on
  the same one, and nothing reports it.

Example
  if torch.cuda.is_available():                       # initialises CUDA
      os.environ["CUDA_VISIBLE_DEVICES"] = "1"        # TW404: too late

Fix
  Set it before anything touches CUDA - at the very top of the script, before importing code
  that might - or better outside the program: `CUDA_VISIBLE_DEVICES=1 python train.py`.
  Inside a process, pick a GPU with `torch.cuda.set_device(i)` or `.to(f"cuda:{i}")`.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        sets = _env_sets(ctx)
        if not sets:
            return
        inits = [c for c in ctx.nodes.get(ast.Call, ()) if cuda_init(ctx, c) and not in_unrun_branch(ctx, c.lineno)]
        for node in sets:
            scope = ctx.scope_of(node)
            pos = (node.lineno, node.col_offset)
            earlier = [c for c in inits if ctx.scope_of(c) is scope and (c.lineno, c.col_offset) < pos
                       and not _other_branch(ctx, c, node)]
            if not earlier:
                yield from self._built_late(ctx, node)
                continue
            first = min(earlier, key=lambda c: (c.lineno, c.col_offset))
            yield ctx.finding(
                self.code, node,
                f"CUDA_VISIBLE_DEVICES is set after CUDA was initialised (line {first.lineno}); it has no effect any more",
                suggestion="set it before anything touches CUDA, or in the environment of the launch command",
            )

    def _built_late(self, ctx: Context, node: ast.AST) -> Iterator[Finding]:
        """The setting runs when a class is built, and another module builds it after it
        initialised CUDA (an experiment class's ``_acquire_device``)."""
        if not ctx.project.files:
            return
        cls = constructor_runs(ctx, node)
        late = built_after_init(ctx, cls, cuda_init, _other_branch) if cls else None
        if late is not None:
            path, init_line, built_line = late
            yield ctx.finding(
                self.code, node,
                f"CUDA_VISIBLE_DEVICES is set while {cls} is built, but {path} initialised CUDA (line {init_line}) "
                f"before building it (line {built_line}); the setting has no effect",
                suggestion="set it before anything touches CUDA, or in the environment of the launch command",
            )


RULE = LateCudaVisibleDevices()
