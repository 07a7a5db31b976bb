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
An optimizer that can change no weight at all — every tensor it holds frozen, or none of them
receiving a gradient in any step — is an error: nothing trains (a real forum report: the
optimizer built over a backbone frozen a line earlier, the new head left out). When most of the
model's values are frozen and the optimizer holds the rest (fine-tuning a head), the report says
so plainly as a hint, with the share. In script mode, parameters that the loss's graph trains but
that no model registers and no optimizer holds (layers kept in a plain Python list or dict instead
of ``nn.ModuleList``/``nn.ModuleDict``) are an error: they get gradients and never change.
"""

from __future__ import annotations

from typing import Any

from torchwise.doctor.checks import listing
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW115",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)
EXPLAINS = ("TW133", "TW135")  # weights that do not move, a loss that does not fall
MOSTLY_FROZEN = 0.5  # share of the model's values frozen above which the hint says so


def each_optimizer(ctx: Any) -> list[tuple[str, Any]]:
    """(name, optimizer) for every optimizer (several in a GAN script or a multi-optimizer Task)."""
    many = getattr(ctx.optimizer, "optimizers", None)
    if isinstance(many, dict) and many:
        return list(many.items())
    return [("the optimizer", ctx.optimizer)]


def check(ctx) -> list[Finding] | Skipped:
    if not ctx.optimizer_given:
        if not getattr(ctx, "script", False):
            return Skipped(CODES, "no optimizer given")
        hand = getattr(getattr(ctx, "watch", None), "hand_updated", False)
        return Skipped(CODES, "the weights are updated by hand (no torch.optim optimizer stepped)" if hand
                       else "no optimizer stepped during the run")
    named = list(ctx.model.named_parameters())
    held = {id(p) for g in ctx.optimizer.param_groups for p in g["params"]}
    findings = [f for name, opt in each_optimizer(ctx) for f in _useless(ctx, name, opt, named)]
    own = {id(p) for _, p in named}
    missing = [n for n, p in named if p.requires_grad and id(p) not in held]
    frozen = [n for n, p in named if not p.requires_grad and id(p) in held]
    # script mode: a tensor outside the model that receives gradients (a learnable temperature
    # used in the loss) is trained on purpose; one that never gets a gradient is not trained at all
    foreign = len(held - own - ctx.tensors_with_grad)
    if foreign and not findings:
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
    if frozen and not any(f.severity == "error" for f in findings):
        findings.append(Finding(
            "TW115", "hint",
            f"{len(frozen)} frozen parameter tensor(s) (requires_grad=False) are inside the optimizer",
            listing(frozen),
            {"frozen_in_optimizer": frozen[:50], "count": len(frozen)},
            "pass only trainable parameters: optimizer(p for p in model.parameters() if p.requires_grad)",
        ))
    findings += _unregistered(ctx, own)
    return findings + _mostly_frozen(named, findings)


def _unregistered(ctx: Any, own: set[int]) -> list[Finding]:
    """Script mode: parameters the loss's graph trains that neither the model registers nor any
    optimizer holds (layers kept in a plain list or dict instead of nn.ModuleList/ModuleDict):
    they get gradients and are never updated."""
    found = [t for t in ctx.scratch.get("graph_params", []) if t.requires_grad and id(t) not in own]
    if not found:
        return []
    held = {id(p) for _, opt in each_optimizer(ctx) for g in opt.param_groups for p in g["params"]}
    found = [t for t in found if id(t) not in held]
    if found:
        held |= _all_optimizers_params()  # an optimizer that has not stepped yet still holds its parameters
        found = [t for t in found if id(t) not in held]
    if not found:
        return []
    names = _container_names(ctx.model)
    where = sorted(names.get(id(t), "x".join(map(str, t.shape)) + " tensor") for t in found)
    return [Finding(
        "TW115", "error",
        f"{len(found)} parameter tensor(s) ({sum(t.numel() for t in found):,} values) receive gradients from the loss but are "
        "registered in no model and held by no optimizer: they never train"
        + (" (layers kept in a plain Python list or dict)" if names.keys() & {id(t) for t in found} else ""),
        listing(where),
        {"unregistered": where[:50], "count": len(found), "values": sum(t.numel() for t in found)},
        "keep sub-layers in nn.ModuleList / nn.ModuleDict (or assign them as attributes) so that model.parameters() "
        "and the optimizer include them",
    )]


def _container_names(model: Any) -> dict[int, str]:
    """Ids of parameters of modules kept in plain lists, tuples or dicts of the model's modules."""
    from torch import nn

    names: dict[int, str] = {}
    for prefix, module in model.named_modules() if isinstance(model, nn.Module) else ():
        for attr, value in vars(module).items():
            items = value.items() if isinstance(value, dict) and not attr.startswith("_") else \
                enumerate(value) if isinstance(value, (list, tuple)) else ()
            for key, item in items:
                if isinstance(item, nn.Module):
                    for n, p in item.named_parameters():
                        names.setdefault(id(p), f"{prefix + '.' if prefix else ''}{attr}[{key!r}].{n}")
    return names


def _all_optimizers_params() -> set[int]:
    import gc

    import torch

    return {id(p) for o in gc.get_objects() if isinstance(o, torch.optim.Optimizer)
            for g in o.param_groups for p in g["params"]}


def _useless(ctx: Any, name: str, opt: Any, named: list) -> list[Finding]:
    """An error when ``opt`` can change no weight: all it holds frozen, or none got a gradient."""
    tensors = [p for g in opt.param_groups for p in g["params"]]
    if not tensors:
        return []
    trainable = [p for p in tensors if p.requires_grad]
    names = {id(p): n for n, p in named}
    label = "the optimizer" if name == "the optimizer" else f"optimizer {name}"
    left_out = [n for n, p in named if p.requires_grad and all(p is not t for t in tensors)]
    if not trainable:
        return [Finding(
            "TW115", "error",
            f"{label} can change no weight: all {len(tensors)} tensor(s) it holds are frozen (requires_grad=False)"
            + (f"; the {len(left_out)} trainable one(s) are not in it" if left_out else ""),
            listing([names.get(id(p), "?") for p in tensors]),
            {"optimizer_tensors": len(tensors), "frozen": len(tensors), "trainable_not_in_optimizer": left_out[:50]},
            "build the optimizer over the parameters that train: optimizer([p for p in model.parameters() if p.requires_grad]), "
            "after freezing and after adding new layers",
        )]
    got = ctx.tensors_with_grad if getattr(ctx, "script", False) else {id(p) for n, p in named if n in ctx.params_with_grad}
    if not any(id(p) in names for p in trainable):
        return []  # none is this model's: the foreign-tensors finding says it better
    if ctx.backward_done and not any(id(p) in got for p in trainable):
        return [Finding(
            "TW115", "error",
            f"{label} can change no weight: none of the {len(trainable)} trainable tensor(s) it holds received a gradient "
            f"in {ctx.backward_done} backward pass(es) (the loss does not depend on them)",
            listing([names.get(id(p), "?") for p in trainable]),
            {"optimizer_tensors": len(tensors), "with_gradient": 0, "backward_passes": ctx.backward_done},
            "build the optimizer over the model whose output the loss uses (not an earlier instance or a copy), "
            "and check that the output is not detached before the loss",
        )]
    return []


def _mostly_frozen(named: list, findings: list[Finding]) -> list[Finding]:
    total = sum(p.numel() for _, p in named)
    frozen = sum(p.numel() for _, p in named if not p.requires_grad)
    trainable = [n for n, p in named if p.requires_grad]
    if not total or frozen / total <= MOSTLY_FROZEN or not trainable or any(f.severity != "hint" for f in findings):
        return []
    return [Finding(
        "TW115", "hint",
        f"only {1 - frozen / total:.1%} of the model's {total:,} values train ({len(trainable)} tensor(s)); "
        f"{frozen / total:.1%} are frozen (requires_grad=False)",
        listing(trainable),
        {"values": total, "frozen_values": frozen, "trainable_tensors": trainable[:50]},
        "nothing to do if only these layers are meant to train (fine-tuning a head); otherwise unfreeze with requires_grad_(True) "
        "and rebuild the optimizer",
    )]
