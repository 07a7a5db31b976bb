"""Host-device synchronisations inside the training step (CUDA).

What: the timed steps run under ``torch.cuda.set_sync_debug_mode("warn")``, which warns at every
operation that makes the CPU wait for the GPU; the warnings are counted per step. Batches are
moved to the GPU before the counted region, so only the model, loss, backward and optimizer
step are measured (a GradScaler's single inf check per step, inherent to fp16, is not counted).
Why: each sync stalls the CPU until the GPU has drained its queue, so the CPU cannot queue the
next kernels ahead and the GPU idles between them; a few per step can cost a large share of
the throughput of a small model.
Example: ``loss.item()`` or ``print(loss)`` every step, ``if (x > 0).any():`` in ``forward``,
``torch.nonzero``/boolean-mask indexing, ``.cpu()``/``.tolist()`` of a metric.
Fix: keep values on the GPU and read them every N steps (the Trainer logs this way); replace
data-dependent Python branches with ``torch.where``; avoid ops with data-dependent output shapes.
"""

from __future__ import annotations

from torchwise.doctor.report import Finding, Skipped

CODES = ("TW207",)


def check(ctx) -> list[Finding] | Skipped:
    if ctx.device.type != "cuda":
        return Skipped(CODES, "needs CUDA (counted with torch.cuda.set_sync_debug_mode); the steps ran on " + ctx.device.type)
    counted = [s.syncs for s in ctx.steps if s.syncs is not None]
    if not counted:
        return Skipped(CODES, "needs at least 2 completed steps (step 0 records and is not counted)")
    per_step = sum(counted) / len(counted)
    if per_step < 1:
        return []
    return [Finding(
        "TW207", "warning",
        f"{per_step:g} host-device sync(s) per training step (model, loss, backward, optimizer step)",
        "training step",
        {"syncs_per_step": per_step, "counted_steps": len(counted), "syncs": counted},
        "remove .item()/.cpu()/.tolist()/print of tensors and data-dependent `if` from the step; log every N steps",
    )]
