"""Trainable parameters that received no gradient.

What: parameters with ``requires_grad=True`` whose ``.grad`` stayed ``None`` after every backward
pass of the doctor's steps: they took no part in the loss.
Why: they never train (a layer built but not used in ``forward``, a branch that is never taken,
an output ignored by the loss), which is often a bug; and ``DistributedDataParallel`` fails with
"Expected to have finished reduction in the prior iteration" unless ``find_unused_parameters``
(which costs time) is set.
Example: ``self.aux_head = nn.Linear(...)`` defined in ``__init__`` and never called.
Fix: use or remove them, or freeze them (``requires_grad_(False)``); if they are only sometimes
unused, pass ``find_unused_parameters=True`` to DDP.
"""

from __future__ import annotations

from torchwise.doctor.checks import listing
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW114",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def check(ctx) -> list[Finding] | Skipped:
    if not ctx.backward_done:
        return Skipped(CODES, "no backward pass completed")
    trainable = [(n, p) for n, p in ctx.model.named_parameters() if p.requires_grad]
    missing = [n for n, _ in trainable if n not in ctx.params_with_grad]
    if not missing:
        return []
    count = sum(p.numel() for n, p in trainable if n in missing)
    return [Finding(
        "TW114", "warning",
        f"{len(missing)} of {len(trainable)} trainable parameter tensors ({count} values) got no gradient in {ctx.backward_done} backward pass(es)",
        listing(missing),
        {"parameters": missing[:50], "count": len(missing), "values": count, "backward_passes": ctx.backward_done},
        "use them in the loss, remove them, or freeze them with requires_grad_(False) (DDP needs find_unused_parameters=True otherwise)",
    )]
