"""Parameters missing from the optimizer, frozen ones inside it, and foreign tensors.

What: compares the model's parameters with the optimizer's ``param_groups``: trainable
parameters the optimizer does not hold; frozen ones (``requires_grad=False``) it does hold; and
tensors it holds that are not parameters of this model at all.
Why: a missing parameter gets gradients but is never updated (a new head added after the
optimizer was built); a tensor from another model means this model does not train; frozen
parameters inside are harmless today but start moving (e.g. through weight decay or momentum)
as soon as they are unfrozen, and they blur which parameters are meant to train.
Example: ``opt = AdamW(model.backbone.parameters())`` with a trainable ``model.head``.
Fix: build the optimizer after the model is final, over
``[p for p in model.parameters() if p.requires_grad]`` (or explicit groups covering all of them).
"""

from __future__ import annotations

from torchwise.doctor.checks import listing
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW115",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def check(ctx) -> list[Finding] | Skipped:
    if not ctx.optimizer_given:
        return Skipped(CODES, "no optimizer given")
    held = {id(p) for g in ctx.optimizer.param_groups for p in g["params"]}
    named = list(ctx.model.named_parameters())
    own = {id(p) for _, p in named}
    missing = [n for n, p in named if p.requires_grad and id(p) not in held]
    frozen = [n for n, p in named if not p.requires_grad and id(p) in held]
    # script mode: a tensor outside the model that receives gradients (a learnable temperature
    # used in the loss) is trained on purpose; one that never gets a gradient is not trained at all
    foreign = len(held - own - ctx.tensors_with_grad)
    findings = []
    if foreign:
        findings.append(Finding(
            "TW115", "error",
            f"the optimizer holds {foreign} tensor(s) that are not parameters of this model (built for another model instance?)",
            "optimizer.param_groups",
            {"foreign_tensors": foreign, "model_parameters": len(named), "optimizer_tensors": len(held)},
            "build the optimizer over this model's parameters, after the model is final",
        ))
    if missing:
        findings.append(Finding(
            "TW115", "warning",
            f"{len(missing)} trainable parameter tensor(s) are not in the optimizer and will never be updated",
            listing(missing),
            {"missing": missing[:50], "count": len(missing), "values": sum(p.numel() for n, p in named if n in missing)},
            "build the optimizer over [p for p in model.parameters() if p.requires_grad], after the model is final",
        ))
    if frozen:
        findings.append(Finding(
            "TW115", "hint",
            f"{len(frozen)} frozen parameter tensor(s) (requires_grad=False) are inside the optimizer",
            listing(frozen),
            {"frozen_in_optimizer": frozen[:50], "count": len(frozen)},
            "pass only trainable parameters: optimizer(p for p in model.parameters() if p.requires_grad)",
        ))
    return findings
