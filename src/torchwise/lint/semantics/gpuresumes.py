"""Scripts whose loads restore where they train although the project looks GPU-only (TW402): a
resume that works only on a ``nn.DataParallel``-wrapped model, and a script whose GPU is an opt-in
flag (its default run is on the CPU)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile


def data_parallel_resume(ctx: Context, load: ast.Call) -> bool:
    """``package = torch.load(path)`` then ``self.model.module.load_state_dict(package[...])``
    unguarded, in a project that wraps models only in ``nn.DataParallel`` (never
    ``DistributedDataParallel``): the resume works only on the wrapped model, which exists only
    on CUDA - one process restoring what ``cuda:0`` wrote, where it trains."""
    func = ctx.function_of(load)
    if func is None:
        return False
    text = ctx.text(func)
    if ".module.load_state_dict(" not in text or "hasattr(" in text or "isinstance(" in text:
        return False
    key = "tw402:dp-only"
    if key not in ctx.project.answers:
        texts = [t for _, t in ctx.project.files] or [ctx.source]
        ctx.project.answers[key] = any("DataParallel(" in t for t in texts) and not any("DistributedDataParallel" in t for t in texts)
    return ctx.project.answers[key]


# an option that turns the GPU on (`parser.add_argument('-gpu', action='store_true')`): off by
# default, so the script's default run is on the CPU
_GPU_SWITCH = lazy_compile(r"""add_argument\(\s*["']--?(?:gpu|cuda|use[-_]gpu|use[-_]cuda)["'][^)]*store_true""")


def gpu_switch(ctx: Context) -> bool:
    """The script turns the GPU on by an opt-in flag (``-gpu``, ``action='store_true'``): its
    default run is on the CPU, whatever the rest of the project looks like."""
    src = ctx.source
    return "store_true" in src and _GPU_SWITCH.search(src) is not None
