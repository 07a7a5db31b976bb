"""Bare ``.cuda()`` moves that break a CPU path the same file offers (TW403): the file moves its
model only when a GPU is there (``if torch.cuda.is_available(): model = model.cuda()``) yet moves
its batches and states with a bare ``.cuda()``; or it chooses its device from a CPU option
(``args.cuda = not args.no_cuda and torch.cuda.is_available()``) yet moves under a bare
``if torch.cuda.is_available():`` that ignores the option."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.fallback import device_flag_ifs, under_device_flag

_CUDA_STR = lazy_compile(r"^cuda(:\d+)?$")
_AVAILABLE = "torch.cuda.is_available()"


def _moves(ctx: Context) -> list[ast.Call]:
    """The file's ``x.cuda()`` calls on its own objects (not ``torch.cuda.*``)."""
    return [c for c in ctx.calls_named("cuda") if c.func.__class__ is ast.Attribute and ctx.qualname(c.func) is None]


def moved_name(ctx: Context, call: ast.Call) -> str | None:
    """``model = DataParallel(model).cuda()`` / ``model.cuda()`` as a whole statement: the name
    moved (its target, or the object of a bare ``name.cuda()``); None for any other shape."""
    stmt = ctx.parent(call)
    if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name:
        return stmt.targets[0].id
    if stmt.__class__ is ast.Expr and call.func.value.__class__ is ast.Name:
        return call.func.value.id
    return None


def _model_name(ctx: Context, call: ast.Call) -> str | None:
    """:func:`moved_name` of a name whose parameters the file reads (``optim.Adam(model.parameters())``): a model."""
    name = moved_name(ctx, call)
    return name if name is not None and f"{name}.parameters(" in ctx.source else None


def bare_beside_guarded_model(ctx: Context) -> list[ast.Call]:
    """In a file that moves its model to the GPU only under a device check (``if
    torch.cuda.is_available(): G = G.cuda()``: on a CPU machine the model stays there), the
    ``.cuda()`` moves of batches and states under no device check, in a loop or a helper
    (``Variable(img).cuda()``, ``torch.zeros(1, 20, 1024).cuda()``): the CPU run the check
    offers fails on them. Not when the file also names a "cuda" device outside any check
    (written for a GPU)."""
    if "cuda(" not in ctx.source:
        return []
    moves = _moves(ctx)
    guarded = [c for c in moves if under_device_flag(ctx, c)]
    if not guarded or not any(_model_name(ctx, c) for c in guarded):
        return []
    if any(isinstance(k.value, str) and _CUDA_STR.match(k.value) and not under_device_flag(ctx, k)
           for k in ctx.nodes.get(ast.Constant, ())):
        return []
    # per-step moves only: in a loop, or in a helper the loop calls (a tensor made once beside the model is left alone)
    return [c for c in moves if not under_device_flag(ctx, c, moves_too=True) and (ctx.enclosing_loops(c) or ctx.function_of(c))]


def _option_flag(ctx: Context) -> bool:
    """A device flag built from a command-line option and the GPU check (``args.cuda = not
    args.no_cuda and torch.cuda.is_available()``)."""
    for node in ctx.nodes.get(ast.BoolOp, ()):
        if node.op.__class__ is not ast.And or len(node.values) != 2 or ctx.parent(node).__class__ is not ast.Assign:
            continue
        texts = [ctx.text(v) for v in node.values]
        if _AVAILABLE in texts and any(t != _AVAILABLE and "." in t and "(" not in t for t in texts):
            return True
    return False


def availability_beside_option(ctx: Context) -> list[ast.Call]:
    """In a file whose device flag honours a CPU option (:func:`_option_flag`), the ``.cuda()``
    moves whose only device check is a bare ``if torch.cuda.is_available():``: run with the option
    on a GPU machine (``--no-cuda``), they move the model to CUDA while the data stays on the CPU."""
    if _AVAILABLE not in ctx.source or "cuda(" not in ctx.source or not _option_flag(ctx):
        return []
    found = []
    for call in _moves(ctx):
        ifs = [(i, body) for i, body in ctx.enclosing_ifs(call) if i.__class__ is ast.If]
        tests = {ctx.text(i.test) for i, _ in ifs if i in device_flag_ifs(ctx, call)}
        if tests == {_AVAILABLE} and all(body for i, body in ifs if ctx.text(i.test) == _AVAILABLE):
            found.append(call)
    return found


_CUDA_STR = lazy_compile(r"^cuda(:\d+)?$")


def model_beside_guarded_batches(ctx: Context) -> list[tuple[ast.Call, str]]:
    """A training file that checks for a GPU and moves every batch under its flag (``if
    use_cuda: inputs = inputs.cuda()``) while the model it trains goes ``.cuda()`` unguarded
    (``model = DataParallel(model).cuda()``): the per-batch fallback is there, the model move
    breaks it. Only when the unguarded moves are whole statements of named objects (the
    model, its loss) and no "cuda" string is used unguarded: a file that also builds tensors
    on "cuda" or autocasts on it is written for a GPU (project.text.unguarded_model_move).
    Each such move with the name it moves."""
    moves = [c for c in ctx.calls_named("cuda") if c.func.__class__ is ast.Attribute and ctx.qualname(c.func) is None]
    if not any(under_device_flag(ctx, c) for c in moves):
        return []
    bare = [c for c in moves if not under_device_flag(ctx, c, moves_too=True)]
    named = [moved_name(ctx, c) for c in bare]
    if not bare or None in named or not any(f"{n}.parameters(" in ctx.source for n in named):
        return []
    if any(isinstance(k.value, str) and _CUDA_STR.match(k.value) and not under_device_flag(ctx, k)
           for k in ctx.nodes.get(ast.Constant, ())):
        return []
    return list(zip(bare, named))  # type: ignore[arg-type]
