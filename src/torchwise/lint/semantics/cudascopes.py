"""Code whose CUDA moves no CPU run reaches by design (TW403): the module-level code of a demo
that runs a model on random inputs, and the body of a class's own ``cuda()`` method."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.steps import training_calls


def demo_script(ctx: Context) -> bool:
    """A demo: a file that runs a model on random inputs (``torch.randn(...).cuda()``) and neither
    trains (no backward, no optimizer step), reads data (no DataLoader) nor loads a checkpoint -
    drawing the autograd graph, timing a forward. Its module-level code shows the model on the GPU
    it was written for; it is no program a CPU user runs."""
    src = ctx.source
    if "randn(" not in src and "rand(" not in src or "DataLoader" in src or "load(" in src:
        return False
    return not training_calls(ctx)


_CUDA_METHODS = frozenset({"cuda", "gpu", "to_cuda", "to_gpu", "cuda_"})


def device_method(ctx: Context, node: ast.AST) -> bool:
    """``node`` is in a method named for moving its object to CUDA (``def cuda(self): self.prob =
    self.prob.cuda()``, mirroring ``nn.Module.cuda()``): it runs only when its caller asks for the
    GPU, and an unconditional call of it is where a CPU path breaks."""
    func = ctx.function_of(node)
    return func is not None and func.__class__ is not ast.Lambda and func.name in _CUDA_METHODS \
        and ctx.parent(func).__class__ is ast.ClassDef


__all__ = ["demo_script", "device_method"]
