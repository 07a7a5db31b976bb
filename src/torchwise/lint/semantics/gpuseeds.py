"""Seeds split across the two branches of a GPU check (TW301, TW303): ``if
torch.cuda.is_available(): torch.cuda.manual_seed(42)`` / ``else: torch.manual_seed(42)``. On a
GPU run only the CUDA generator is seeded: the CPU generator that initialises the weights,
shuffles the loaders and draws ``torch.randperm`` stays unseeded (TW301); and
``torch.manual_seed`` on the CPU branch covers no GPU of a multi-GPU run (TW303)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile

_MULTI_GPU = lazy_compile(r"DataParallel|device_count\(|num_gpus|n_gpu|gpu_ids|device_ids")


def opposite_branches(ctx: Context, a: AST, b: AST) -> bool:
    """``a`` and ``b`` sit in the two branches of one ``if``/``else``."""
    sides = {id(i): body for i, body in ctx.enclosing_ifs(a) if i.__class__ is ast.If}
    return any(id(i) in sides and sides[id(i)] is not body for i, body in ctx.enclosing_ifs(b) if i.__class__ is ast.If)


def cuda_branch_seeds(ctx: Context) -> list[ast.Call]:
    """The ``torch.cuda.manual_seed[_all]`` calls whose scope seeds the CPU generator
    (``torch.manual_seed``) only in the other branch of their ``if``."""
    if "manual_seed" not in ctx.source or "else" not in ctx.source:
        return []
    cpu = ctx.calls_to("torch.manual_seed")
    out = []
    for call in ctx.calls_to("torch.cuda.manual_seed", "torch.cuda.manual_seed_all"):
        mine = [c for c in cpu if ctx.scope_of(c) is ctx.scope_of(call)]
        if mine and all(opposite_branches(ctx, call, c) for c in mine) and not any(
                ctx.scope_of(c) is not ctx.scope_of(call) for c in cpu):
            out.append(call)
    return out


def multi_gpu(ctx: Context) -> bool:
    """The file drives several GPUs (DataParallel, a device count, a GPU-count option)."""
    return _MULTI_GPU.search(ctx.source) is not None


__all__ = ["cuda_branch_seeds", "multi_gpu", "opposite_branches"]
