"""Host reads of every forward pass and every gradient helper call (TW207), as ``(node, message,
suggestion)``: reads of a module's own parameter or buffer in its methods (``self.gamma.item()``),
tensor tests, ``nonzero()`` and boolean-mask selections in what every forward pass runs
(:mod:`~torchwise.lint.semantics.forwardreads`, :mod:`~torchwise.lint.semantics.masks`), element
reads in a Python loop there (:mod:`~torchwise.lint.semantics.elementreads`), and hand-written
gradient-norm helpers the step calls (:mod:`~torchwise.lint.semantics.gradnorm`) - outside the
training path (post-processing, what a function training in its own loop does around it) left out."""

from __future__ import annotations

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.cpuonly import runs_only_on_cpu
from torchwise.lint.semantics.devices import gpu_evident
from torchwise.lint.semantics.elementreads import element_reads
from torchwise.lint.semantics.evalblocks import off_training_path
from torchwise.lint.semantics.forwardreads import forward_reads
from torchwise.lint.semantics.gatedreads import opt_in_branch
from torchwise.lint.semantics.gradnorm import per_parameter_reads, step_call_of
from torchwise.lint.semantics.loaderhost import data_pipeline_code
from torchwise.lint.semantics.masks import forward_mask_selections
from torchwise.lint.semantics.offtraining import built_only_for_inference
from torchwise.lint.semantics.rarely import runs_rarely
from torchwise.lint.semantics.roundtrips import forward_round_trips
from torchwise.lint.semantics.syncs import parameter_read

MASK_FIX = ("keep shapes fixed: weight by the mask (loss * mask).sum() / mask.sum(), or use torch.where / "
            "masked_fill, instead of selecting with x[mask]")
_GRAD_FIX = ("sum on the device (torch.stack of the norms, or clip_grad_norm_ / torch.linalg.vector_norm) and read the "
             "total once, if at all")
_FORWARD_FIX = "keep it on the device (torch.where, masked_fill, weights by the mask) or check it once outside the training path"
_EQUAL_FIX = "ask whether they are the same tensor (query is key), as torch's own attention does, or pass a flag"
_ELEMENT_FIX = "read the tensor once (.tolist()) before the loop, or vectorise (repeat_interleave, an index tensor)"

Found = tuple[AST, str, str]


def forward_syncs(ctx: Context) -> list[Found]:
    """Every such read of the file (nothing when the project evidently uses no accelerator)."""
    if not (gpu_evident(ctx) or ctx.project.moves_to_device) or runs_only_on_cpu(ctx):
        return []
    return [*_parameter_reads(ctx), *_forward_reads(ctx), *_grad_norm_helpers(ctx)]


def _off_step(ctx: Context, node: AST, func: AST) -> bool:
    """Not run on every training step: off the training path (semantics.evalblocks), in a branch
    that rarely runs (semantics.rarely: a value cached on the first call, a sink handed on at
    intervals), under a flag of ``func`` that training never sets (``if vis:``), or in a class
    that only inference and evaluation call (semantics.offtraining: a detector's ``Detect``), or
    in a dataset's data pipeline (semantics.loaderhost: host arrays in loader workers)."""
    return off_training_path(ctx, node, func) or runs_rarely(ctx, node) or opt_in_branch(ctx, node, func) \
        or built_only_for_inference(ctx, func) or data_pipeline_code(ctx, node)


def _parameter_reads(ctx: Context) -> list[Found]:
    """``self.gamma.item()`` in a method of an ``nn.Module`` of this file: every forward."""
    out: list[Found] = []
    for call in ctx.calls_named("item", "tolist") if "self." in ctx.source else ():
        param = parameter_read(ctx, call)
        if param is not None and not runs_rarely(ctx, call):
            out.append((call, f"{ctx.text(call.func.value)}.{call.func.attr}() reads a parameter or buffer of the module on "
                        f"the host in {ctx.function_of(call).name}(), which runs with every forward pass and waits for the "
                        "GPU each time",
                        f"use the tensor {param} itself (it broadcasts), or keep a Python copy of the value set in __init__"))
    return out


def _forward_reads(ctx: Context) -> list[Found]:
    """``x[mask] = 0`` / ``x[mask]`` on a device tensor in what every forward pass runs (a
    module's ``forward``, a helper it calls): the selection's size has to reach the host. Also
    ``if``/``assert`` tests of a tensor there, ``nonzero()``, and element reads in a loop."""
    out: list[Found] = []
    for node, func, what in [*forward_reads(ctx), *forward_round_trips(ctx)]:
        if not _off_step(ctx, node, func):
            out.append((node, f"{what} in {func.name}(), which runs on every forward pass, waits for the GPU",
                        _EQUAL_FIX if what.startswith("torch.equal") else _FORWARD_FIX))
    for node, func in element_reads(ctx):
        if not _off_step(ctx, node, func):
            out.append((node, f"{ctx.text(node)} reads one element per pass of a Python loop in {func.name}(), which runs "
                        "every training step: one wait for the GPU per element", _ELEMENT_FIX))
    for node, func, others in forward_mask_selections(ctx):
        if _off_step(ctx, node, func):
            continue
        if others is None:
            out.append((node, f"boolean-mask indexing in {func.name}(), which runs on every forward pass, waits for the GPU",
                        MASK_FIX))
            continue
        also = f" (also line{'s' if len(others) > 1 else ''} {', '.join(map(str, others))})" if others else ""
        out.append((node, f"boolean-mask selection in the loss computed by {func.name}() every training step waits for "
                    f"the GPU: the result's size depends on the data{also}", MASK_FIX))
    return out


def _grad_norm_helpers(ctx: Context) -> list[Found]:
    """A hand-written gradient-norm helper that reads each parameter's norm on the host, called
    by the training step every step (``clip_grad_value_``, a wrapper optimizer's ``step()``)."""
    out: list[Found] = []
    for func, reads in per_parameter_reads(ctx).values() if ".grad" in ctx.source else ():
        where = step_call_of(ctx, func)
        for read in reads if where is not None else ():
            out.append((read, f"a host read of every parameter's gradient in {func.name}(), which runs every training "
                        f"step ({where}), waits for the GPU once per parameter", _GRAD_FIX))
    return out


__all__ = ["MASK_FIX", "forward_syncs"]
