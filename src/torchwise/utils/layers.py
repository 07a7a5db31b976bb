"""Layer utilities: BatchNorm freezing that survives ``model.train()``, and weight initialisation."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import torch
from torch import nn

from torchwise.core.errors import UsageError

__all__ = ["INIT_SCHEMES", "freeze_batchnorm", "init_weights", "unfreeze_batchnorm"]

_FROZEN = "_torchwise_bn_frozen"  # instance attribute: {param name: requires_grad before freezing}


def _stay_in_eval(module: nn.Module, mode: bool = True) -> nn.Module:
    """Replacement ``train`` of a frozen BatchNorm: whatever mode is asked, it stays in eval."""
    module.training = False
    return module


def _eval_pre_hook(module: nn.Module, args: Any) -> None:
    # belt and braces: also catches `module.training = True` set directly
    module.training = False


def _batchnorms(model: nn.Module) -> list[tuple[str, nn.modules.batchnorm._BatchNorm]]:
    return [(n, m) for n, m in model.named_modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


def freeze_batchnorm(model: nn.Module) -> nn.Module:
    """Freeze every BatchNorm layer of ``model`` (statistics and affine parameters); returns ``model``.

    Frozen layers normalise with their running statistics, never update them, and their weight
    and bias stop requiring grad. This holds even after a later ``model.train()``: the layers'
    ``train`` is replaced by one that keeps them in eval mode (and a forward pre-hook re-asserts
    it). The usual fix for fine-tuning with small batches. :func:`unfreeze_batchnorm` undoes it.
    """
    if not isinstance(model, nn.Module):
        raise UsageError(f"freeze_batchnorm expects a torch.nn.Module, got {type(model).__name__}")
    for _, bn in _batchnorms(model):
        if _FROZEN in bn.__dict__:
            continue
        if bn.track_running_stats is False or bn.running_mean is None:
            raise UsageError(
                f"cannot freeze {type(bn).__name__} with track_running_stats=False: it has no running statistics "
                "to normalise with"
            )
        bn.__dict__[_FROZEN] = {n: p.requires_grad for n, p in bn.named_parameters(recurse=False)}
        for p in bn.parameters(recurse=False):
            p.requires_grad_(False)
        bn.train = functools.partial(_stay_in_eval, bn)  # instance attribute wins over nn.Module.train
        bn.register_forward_pre_hook(_eval_pre_hook)
        bn.training = False
    return model


def unfreeze_batchnorm(model: nn.Module) -> nn.Module:
    """Undo :func:`freeze_batchnorm`: BatchNorm layers follow ``train()``/``eval()`` again, their
    parameters get back the ``requires_grad`` they had, and they take ``model``'s current mode."""
    for _, bn in _batchnorms(model):
        state = bn.__dict__.pop(_FROZEN, None)
        if state is None:
            continue
        bn.__dict__.pop("train", None)
        for key, hook in list(bn._forward_pre_hooks.items()):
            if hook is _eval_pre_hook:
                del bn._forward_pre_hooks[key]
        for n, p in bn.named_parameters(recurse=False):
            p.requires_grad_(state.get(n, True))
        bn.training = model.training
    return model


# --------------------------------------------------------------------------------------------
# init_weights

INIT_SCHEMES: dict[str, Callable[..., torch.Tensor]] = {
    "xavier_uniform": nn.init.xavier_uniform_,
    "xavier_normal": nn.init.xavier_normal_,
    "kaiming_uniform": nn.init.kaiming_uniform_,
    "kaiming_normal": nn.init.kaiming_normal_,
    "orthogonal": nn.init.orthogonal_,
    "normal": nn.init.normal_,
    "trunc_normal": nn.init.trunc_normal_,
}
# schemes whose defaults (std 1) are rarely wanted for weights: a small std unless given
_DEFAULTS: dict[str, dict[str, Any]] = {"normal": {"std": 0.02}, "trunc_normal": {"std": 0.02, "a": -0.04, "b": 0.04}}

_NORMS = (
    nn.modules.batchnorm._NormBase,  # BatchNorm*, InstanceNorm*, SyncBatchNorm
    nn.LayerNorm,
    nn.GroupNorm,
    nn.LocalResponseNorm,
) + ((nn.RMSNorm,) if hasattr(nn, "RMSNorm") else ())


def init_weights(model: nn.Module, scheme: str = "xavier_uniform", **kwargs: Any) -> nn.Module:
    """Initialise ``model`` in place and return it.

    Every weight with two or more dimensions (Linear, Conv*, Embedding, RNN, attention projections…)
    gets ``scheme``; every bias becomes zero; normalisation layers get weight 1 and bias 0; an
    Embedding's ``padding_idx`` row is zeroed again. ``kwargs`` go to the ``torch.nn.init``
    function (e.g. ``nonlinearity="relu"`` for kaiming, ``gain`` for xavier/orthogonal, ``std``
    for normal, default 0.02). Other 1-D parameters are left as they are.
    """
    if scheme not in INIT_SCHEMES:
        raise UsageError(f"unknown init scheme {scheme!r}; valid schemes: {', '.join(INIT_SCHEMES)}")
    fn = INIT_SCHEMES[scheme]
    accepted = set(inspect.signature(fn).parameters) - {"tensor"}
    unknown = set(kwargs) - accepted
    if unknown:
        raise UsageError(
            f"init scheme {scheme!r} does not take {', '.join(sorted(unknown))}; it takes {', '.join(sorted(accepted))}"
        )
    options = {**_DEFAULTS.get(scheme, {}), **kwargs}
    if not isinstance(model, nn.Module):
        raise UsageError(f"init_weights expects a torch.nn.Module, got {type(model).__name__}")
    with torch.no_grad():
        for module in model.modules():
            own = dict(module.named_parameters(recurse=False))
            if not own:
                continue
            if isinstance(module, _NORMS):
                for name, p in own.items():
                    if name == "weight":
                        p.fill_(1.0)
                    elif name == "bias":
                        p.zero_()
                continue
            for name, p in own.items():
                if "bias" in name:
                    p.zero_()
                elif p.dim() >= 2:
                    fn(p, **options)
            if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
    return model
