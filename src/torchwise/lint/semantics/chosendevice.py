"""GPU-only lines beside a device a script chooses with a CPU alternative (TW403): ``device =
"cuda" if torch.cuda.is_available() else "cpu"`` (or ``torch.device(...)`` of it), the batches
moved with ``.to(device)``, and then

- ``torch.cuda.synchronize()`` (or ``current_device()``) in the same function or top level as
  such a move, under no device test nor an option switch (``if args.time_exp:``, a timing mode
  the user opts into): the CPU run the choice offers raises there;
- the model moved with a bare ``net.cuda()`` statement (a name whose ``.parameters()`` the file
  reads): on a CPU machine it raises, on a GPU one the choice was idle.

Not when the file names a "cuda" device elsewhere outside any device test (written for a GPU)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.fallback import under_device_flag
from torchwise.lint.semantics.harmlessmoves import cpu_alternative

_CUDA_STR = lazy_compile(r"^cuda(:\d+)?$")
_GPU_CALLS = ("torch.cuda.synchronize", "torch.cuda.current_device")


def _choice(ctx: Context, value: ast.AST) -> bool:
    if value.__class__ is ast.Call and ctx.qualname(value.func) == "torch.device" and len(value.args) == 1:
        value = value.args[0]
    return cpu_alternative(value) and any(b.__class__ is ast.Constant and isinstance(b.value, str) and _CUDA_STR.match(b.value)
                                          for b in (value.body, value.orelse))


def _chosen_names(ctx: Context) -> set[str]:
    return {ctx.text(n.targets[0]) for n in ctx.nodes.get(ast.Assign, ())
            if len(n.targets) == 1 and n.targets[0].__class__ in (ast.Name, ast.Attribute) and _choice(ctx, n.value)}


def _moves_to(ctx: Context, names: set[str]) -> list[ast.Call]:
    return [c for c in ctx.calls_named("to") if c.func.__class__ is ast.Attribute and c.args and ctx.text(c.args[0]) in names]


def _cuda_elsewhere(ctx: Context) -> bool:
    """A "cuda" string outside the choice and outside any device test (``if 'cuda' in device:``)."""
    for k in ctx.nodes.get(ast.Constant, ()):
        if isinstance(k.value, str) and _CUDA_STR.match(k.value) and ctx.parent(k).__class__ not in (ast.IfExp, ast.Compare) \
                and not under_device_flag(ctx, k) and not (ctx.parent(k).__class__ is ast.Call and _choice(ctx, ctx.parent(k))):
            return True
    return False


def _under_switch(ctx: Context, node: ast.AST) -> bool:
    """Under ``if args.time_exp:`` (a plain option switch): a timing mode the user opts into."""
    return any(in_body and i.__class__ is ast.If and i.test.__class__ in (ast.Name, ast.Attribute)
               for i, in_body in ctx.enclosing_ifs(node))


def gpu_lines_beside_choice(ctx: Context) -> list[ast.Call]:
    """The calls described in the module doc."""
    src = ctx.source
    if "else" not in src or "cpu" not in src or ".to(" not in src:
        return []
    names = _chosen_names(ctx)
    moves = _moves_to(ctx, names) if names else []
    if not moves or _cuda_elsewhere(ctx):
        return []
    scopes = {id(ctx.scope_of(m)) for m in moves}
    found = []
    if "cuda." in src:
        for call in ctx.nodes.get(ast.Call, ()):
            if call.func.__class__ is ast.Attribute and call.func.attr in ("synchronize", "current_device") \
                    and ctx.qualname(call.func) in _GPU_CALLS and id(ctx.scope_of(call)) in scopes \
                    and not under_device_flag(ctx, call, moves_too=True) and not _under_switch(ctx, call):
                found.append(call)
    for call in ctx.calls_named("cuda"):
        stmt = ctx.parent(call)
        func = call.func
        if call.args or call.keywords or func.__class__ is not ast.Attribute or func.value.__class__ is not ast.Name:
            continue
        name = func.value.id
        whole = stmt.__class__ is ast.Expr or stmt.__class__ is ast.Assign and [ctx.text(t) for t in stmt.targets] == [name]
        if whole and f"{name}.parameters(" in src and not under_device_flag(ctx, call, moves_too=True):
            found.append(call)
    return found


__all__ = ["cpu_choices", "gpu_lines_beside_choice"]


def cpu_choices(ctx: Context) -> Iterator[ast.Call]:
    """``torch.device("cpu")`` assigned in a branch of an ``if``/``else`` (a device chosen)."""
    for call in ctx.calls_named("device"):
        if ctx.qualname(call.func) != "torch.device" or not call.args:
            continue
        parent = ctx.parent(call)
        cpu = call.args[0].__class__ is ast.Constant and call.args[0].value == "cpu"
        if parent.__class__ is ast.Assign and (cpu and any(True for _ in ctx.enclosing_ifs(call)) or cpu_alternative(call.args[0])) \
                or cpu and parent.__class__ is ast.IfExp and ctx.parent(parent).__class__ is ast.Assign:
            yield call  # in a branch of an if/else, torch.device(f"cuda:{i}" if gpus else "cpu"), or
            # device = torch.device("cuda") if opt.use_gpu else torch.device("cpu")
