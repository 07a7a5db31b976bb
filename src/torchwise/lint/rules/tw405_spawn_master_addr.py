"""TW405: hand-rolled ``mp.spawn`` with a hard-coded rendezvous address or port."""

from __future__ import annotations

import ast
import os
import re
from typing import Iterator

from torchwise.lint.engine import Context, keyword
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.callers import project_calls

_VARS = ("MASTER_ADDR", "MASTER_PORT")


def _tcp_address(value: ast.AST | None) -> bool:
    """``"tcp://10.0.0.1:23456"`` or an address made on the spot, ``f"tcp://localhost:{port}"``,
    ``"tcp://{}:{}".format(node, port)``, ``"tcp://%s:%d" % (node, port)``."""
    value = _made_from(value)
    if value is not None and value.__class__ is ast.JoinedStr and value.values:
        value = value.values[0]
    return value is not None and value.__class__ is ast.Constant and isinstance(value.value, str) and value.value.startswith("tcp://")


def _made_from(value: ast.AST | None) -> ast.AST | None:
    """The template of ``"...".format(...)`` or ``"..." % (...)``; else the value itself."""
    if value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr == "format":
        return value.func.value
    if value.__class__ is ast.BinOp and value.op.__class__ is ast.Mod:
        return value.left
    return value


def _hardcoded_rendezvous(ctx: Context) -> list[ast.AST]:
    out: list[ast.AST] = []
    for node in ctx.nodes.get(ast.Assign, ()):
        if node.value.__class__ in (ast.JoinedStr, ast.Call, ast.BinOp) and _tcp_address(node.value) \
                and ctx.calls_to("torch.distributed.init_process_group"):
            out.append(node)  # args.dist_url = f"tcp://localhost:{random.randrange(49152, 65535)}", handed to init_method=
            continue
        if node.value.__class__ is not ast.Constant:
            continue
        for t in node.targets:
            if (
                t.__class__ is ast.Subscript and ctx.qualname(t.value) == "os.environ"
                and t.slice.__class__ is ast.Constant and t.slice.value in _VARS
            ):
                out.append(node)
    for call in ctx.calls_named("setdefault"):
        if ctx.qualname(call.func) == "os.environ.setdefault" and len(call.args) == 2:
            key, value = call.args
            if key.__class__ is ast.Constant and key.value in _VARS and value.__class__ is ast.Constant:
                out.append(call)
    for call in ctx.calls_to("torch.distributed.init_process_group"):
        kw = keyword(call, "init_method")
        if kw is not None and _tcp_address(kw.value):
            out.append(call)
        elif kw is not None and kw.value.__class__ is ast.Name:
            b = ctx.binding_at(kw.value.id, call)  # dist_init_method = 'tcp://localhost:10000' a line above
            if b is not None and b.kind == "assign" and b.value.__class__ is ast.Constant and _tcp_address(b.value) \
                    and ctx.scope_of(b.node) is ctx.scope_of(call):
                out.append(b.node)
    out.sort(key=lambda n: (n.lineno, n.col_offset))
    return out


class SpawnWithFixedRendezvous(Rule):
    code = "TW405"
    name = "spawn-with-fixed-rendezvous"
    triggers = ("spawn", "Process(", "tcp://", "master_addr", "master_port", "MASTER_ADDR", "MASTER_PORT")
    doc = """\
What it flags
  A script that starts its workers itself with `torch.multiprocessing.spawn(...)` (`mp.spawn`)
  and hard-codes the rendezvous: `os.environ["MASTER_ADDR"] = "localhost"`,
  `os.environ["MASTER_PORT"] = "12355"`, or `init_process_group(init_method="tcp://...")` -
  also an address made on the spot for one machine, `args.dist_url =
  f"tcp://localhost:{random.randrange(49152, 65535)}"` (or `"tcp://{}:{}".format(node, port)`),
  handed to `init_process_group` by the
  workers (a `--dist-url` option's default is configuration, not flagged). Workers started by
  hand as processes count as a spawn (`ctx = torch.multiprocessing.get_context("spawn")`, then
  `ctx.Process(target=run, ...)`, also Python's `multiprocessing.Process`), and the address may sit
  in a helper module of the project (`def multi_init(...)`: `dist_init_method = "tcp://localhost:10000"`,
  or `os.environ["MASTER_ADDR"] = "localhost"` in `def init_distributed(port=40112)`, handed to
  `init_process_group`) called by a script that starts its workers by hand, or the worker function
  itself (`def train_distributed(rank, ...)`: `os.environ['MASTER_ADDR'] = 'localhost'`) that
  another module starts with `spawn(train_distributed, ...)`: reported there, at the address. Likewise literal rendezvous arguments handed to a set-up helper
  (`ddp_setup(rank, world_size, master_addr="localhost", master_port=12355)`) in a function that
  another module of the project starts with `mp.spawn(train, ...)`: reported at that call.

Why it matters
  A fixed address ties the job to one machine, and a fixed port collides as soon as two jobs
  run on the same host ("Address already in use"). A worker that crashes takes the whole job
  down with no restart. `torchrun` provides the address, port, ranks and world size through
  the environment, restarts failed workers and scales to several nodes without code changes.

Example
  os.environ["MASTER_ADDR"] = "localhost"
  os.environ["MASTER_PORT"] = "12355"
  mp.spawn(worker, nprocs=world_size)                  # TW405

Fix
  Launch with `torchrun --nproc_per_node=N train.py`, call
  `torch.distributed.init_process_group()` without an address, and read `LOCAL_RANK` from the
  environment. The torchwise Trainer works this way.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        spawns = ctx.calls_to("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes") + _processes(ctx)
        if not spawns:
            yield from self._rendezvous_for_launcher(ctx)
            yield from _fixed_for_spawned(ctx)
            return
        fixed = _hardcoded_rendezvous(ctx)
        if not fixed:
            return
        for call in spawns:
            yield ctx.finding(
                self.code, call,
                f"mp.spawn with a hand-made rendezvous (line {fixed[0].lineno}): one machine only, its port can collide "
                "with another job's, and a failed worker is not restarted",
                suggestion="launch with torchrun and call init_process_group() without an address",
                end_node=call.func,
            )

    def _rendezvous_for_launcher(self, ctx: Context) -> Iterator[Finding]:
        """A distributed helper module (``def multi_init(device_id, world_size, ranks)``) that
        hard-codes the rendezvous, called from a script of the project that starts its workers by
        hand: reported at the address, where the fix goes."""
        if "init_process_group" not in ctx.source or not any(w in ctx.source for w in ("tcp://", *_VARS)):
            return
        fixed = [n for n in _hardcoded_rendezvous(ctx) if ctx.function_of(n) is not None]
        for node in fixed:
            func = ctx.function_of(node)
            while ctx.function_of(func) is not None:
                func = ctx.function_of(func)
            launcher = next((other.path for other, _ in project_calls(ctx, func.name) if _processes(other) or
                             other.calls_to("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes")), None) \
                or _spawner_of(ctx, func.name)  # spawn(train_distributed, args=(...), nprocs=n) in __main__.py
            if launcher is not None:
                yield ctx.finding(
                    self.code, node,
                    f"hard-coded rendezvous for workers that {os.path.basename(launcher)} starts by hand: one machine only, "
                    "its port can collide with another job's, and a failed worker is not restarted",
                    suggestion="launch with torchrun and call init_process_group() without an address",
                )
                return


_RENDEZVOUS_ARGS = frozenset({"master_addr", "master_port"})


def _fixed_for_spawned(ctx: Context) -> Iterator[Finding]:
    """``ddp_setup(rank, world_size, master_addr="localhost", master_port=12355)`` - literal
    rendezvous arguments handed to a set-up helper - in a function that another module of the
    project starts with ``mp.spawn(train, ...)``: reported at the call, where the address is fixed."""
    if "master_" not in ctx.source:
        return
    for call in ctx.nodes.get(ast.Call, ()):
        if not any(k.arg is not None and k.arg.lower() in _RENDEZVOUS_ARGS and k.value.__class__ is ast.Constant
                   for k in call.keywords):
            continue
        func = ctx.function_of(call)
        while func is not None and ctx.function_of(func) is not None:
            func = ctx.function_of(func)
        if func is not None and func.__class__ is not ast.Lambda and _spawned_elsewhere(ctx, func.name):
            yield ctx.finding(
                "TW405", call,
                f"hard-coded rendezvous for the workers mp.spawn starts with {func.name}(): one machine only, its port "
                "can collide with another job's, and a failed worker is not restarted",
                suggestion="launch with torchrun and call init_process_group() without an address",
                end_node=call.func,
            )


def _spawned_elsewhere(ctx: Context, name: str) -> bool:
    """Another file of the project that imports this module starts ``name`` with ``spawn(name, ...)``."""
    return _spawner_of(ctx, name) is not None


def _spawner_of(ctx: Context, name: str) -> str | None:
    """The path of another file of the project, naming this module, that starts ``name`` with
    ``spawn(name, ...)``."""
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    needle = re.compile(rf"\bspawn\(\s*(?:[\w.]+\.)?{re.escape(name)}\b")
    return next((p for p, t in ctx.project.files if p != ctx.path and "spawn(" in t and stem in t and needle.search(t) is not None), None)


# (Python's own multiprocessing starts workers by hand just the same: `mp.Process(target=process_main, ...)`)
_MULTIPROCESSING = ("torch.multiprocessing.", "multiprocessing.")


def _processes(ctx: Context) -> list[ast.Call]:
    """``mp.Process(target=run, ...)`` where ``mp = torch.multiprocessing.get_context("spawn")`` (or
    ``torch.multiprocessing.Process``, or Python's ``multiprocessing``): worker processes started by hand."""
    if "Process(" not in ctx.source:
        return []
    out = []
    for call in ctx.calls_named("Process"):
        func = call.func
        q = ctx.qualname(func) or ""
        if q.startswith(_MULTIPROCESSING):
            out.append(call)
        elif func.__class__ is ast.Attribute and func.value.__class__ is ast.Name:
            b = ctx.binding_at(func.value.id, call)
            if b is not None and b.kind == "assign" and b.value.__class__ is ast.Call \
                    and (ctx.qualname(b.value.func) or "").startswith(_MULTIPROCESSING) \
                    and (ctx.qualname(b.value.func) or "").endswith("get_context"):
                out.append(call)
    return out


RULE = SpawnWithFixedRendezvous()
