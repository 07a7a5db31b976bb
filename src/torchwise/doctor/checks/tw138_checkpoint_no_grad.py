"""Reentrant activation checkpoint over inputs that do not require grad.

What: every call of ``torch.utils.checkpoint.checkpoint(..., use_reentrant=True)`` (and
``checkpoint_sequential``) is watched; reported when grad mode is on but none of the tensors
passed in requires grad: typically the first block, checkpointed right on the input batch.
Why: the reentrant variant only connects its output to the graph through its *inputs*. With no
input requiring grad the output does not require grad either, so the parameters inside get no
gradient (silently), and if nothing else does the backward fails with "element 0 of tensors
does not require grad and does not have a grad_fn".
Example: ``h = checkpoint(self.block1, x, use_reentrant=True)`` with ``x`` the input batch.
Fix: ``use_reentrant=False`` (recommended by PyTorch), or do not checkpoint the first block, or
``x.requires_grad_()`` before the call.
"""

from __future__ import annotations

from torchwise.doctor.report import Finding, Skipped

CODES = ("TW138",)
SCRIPT = True
_FAILURE = "does not require grad"


def check(ctx) -> list[Finding] | Skipped:
    w = getattr(ctx, "watch", None)
    if w is None:
        return Skipped(CODES, "the steps were not watched")
    if not w.checkpoint_no_grad:
        return []
    func, line, step = w.checkpoint_no_grad[0]
    failed = bool(ctx.failure and _FAILURE in ctx.failure)
    return [Finding(
        "TW138", "error",
        f"reentrant checkpoint of {func} got no input that requires grad: the parameters inside get no gradient"
        + ("; this is why backward failed" if failed else ""),
        f"{func} at {line}" if line else func,
        {"calls": [{"function": f, "line": ln, "step": s} for f, ln, s in w.checkpoint_no_grad[:10]], "failure": ctx.failure},
        "pass use_reentrant=False to torch.utils.checkpoint.checkpoint (or do not checkpoint the block that takes the raw input)",
    )]
