"""Per-sample gradients: the gradient of each sample's own loss, for every parameter.

Two ways, same numbers:

* ``"vmap"``: ``torch.func`` (``functional_call`` + ``grad`` + ``vmap``) — any model whose
  samples are independent;
* ``"fast"``: one batched forward, one backward that stops at the layer outputs (gradient
  edges taken in forward hooks, so in-place ops after a layer do no harm), then a closed form per
  layer (as Opacus does): for ``y = x W^T + b`` the per-sample ``dW_i = g_i^T x_i`` (the layer's
  output gradient times its input), convolutions through an im2col view of the input,
  embeddings through ``index_add``. Supported: Linear, Conv1d, Conv2d, Embedding with trainable
  parameters, plus any layer without trainable parameters (activations, pooling, Flatten,
  Dropout, frozen norms...).

The per-sample loss is defined as ``loss_fn(model(x_i[None]), y_i[None])``. The fast path
back-propagates the sum of these: for the common ``torch.nn`` losses (no class weights, same
element count per sample) that is the batch loss times B for ``reduction="mean"`` or the batch
loss for ``"sum"``; any other ``loss_fn`` is evaluated on each row of the batched output
(through ``vmap``, or a loop when the loss cannot be vmapped). Either way the result equals the
one-sample-at-a-time loop.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._pytree import tree_flatten, tree_map

from torchwise.core.errors import UsageError

__all__ = ["PerSampleGrads", "fast_path_problem", "per_sample_grads"]

METHODS = ("auto", "fast", "vmap")
_FAST_TYPES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Embedding)


class PerSampleGrads(dict):
    """``{parameter name: tensor of shape (B, *param.shape)}``; ``.method`` says which path ran."""

    method: str = ""


# --------------------------------------------------------------------------------------------
# checks


def _check_batchnorm(model: nn.Module) -> None:
    for name, m in model.named_modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and (m.training or m.running_mean is None):
            why = "is in training mode" if m.training else "has no running statistics (track_running_stats=False)"
            raise UsageError(
                f"per-sample gradients are ill-defined: {name or 'the model'} ({type(m).__name__}) {why}, so it "
                "normalises with statistics of the whole batch and mixes the samples; call model.eval() or "
                "torchwise.freeze_batchnorm(model) first, or use GroupNorm/LayerNorm"
            )


def fast_path_problem(model: nn.Module) -> str | None:
    """Why the closed-form path cannot handle ``model`` (a module with trainable parameters it has
    no formula for), or None when it can."""
    for name, m in model.named_modules():
        own = {n: p for n, p in m.named_parameters(recurse=False) if p.requires_grad}
        if not own:
            continue
        where = f"{name or 'the model itself'} ({type(m).__name__})"
        if type(m) not in _FAST_TYPES:
            return f"{where} has trainable parameters and no closed form (supported: Linear, Conv1d, Conv2d, Embedding)"
        if set(own) - {"weight", "bias"}:
            return f"{where} has unexpected parameters {sorted(set(own) - {'weight', 'bias'})}"
        if isinstance(m, nn.Embedding) and (m.max_norm is not None or m.scale_grad_by_freq or m.sparse):
            return f"{where} uses max_norm, scale_grad_by_freq or sparse gradients"
    return None


def _batch_size(inputs: Any, targets: Any) -> int:
    leaves = [t for t in tree_flatten(inputs)[0] if isinstance(t, torch.Tensor)]
    if not leaves or leaves[0].dim() == 0:
        raise UsageError("inputs must be a tensor (or a tuple of tensors) with the batch along dimension 0")
    b = leaves[0].shape[0]
    for t in leaves + [t for t in tree_flatten(targets)[0] if isinstance(t, torch.Tensor)]:
        if t.dim() == 0 or t.shape[0] != b:
            raise UsageError(
                f"inputs and targets must share the batch size along dimension 0: got {b} and a tensor of shape {tuple(t.shape)}"
            )
    return b


def _call(model: nn.Module, inputs: Any) -> Any:
    return model(*inputs) if isinstance(inputs, tuple) else model(inputs)


def _scalar(loss: Any) -> torch.Tensor:
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
        raise UsageError(f"loss_fn must return one number for a batch (reduction 'mean' or 'sum'), got {shape}")
    return loss.reshape(())


def _per_sample_losses(loss_fn: Callable[..., torch.Tensor], output: Any, targets: Any, b: int) -> torch.Tensor:
    """``loss_fn`` on each row of the batched output, as a (B,) tensor that autograd can differentiate."""

    def one(o: Any, t: Any) -> torch.Tensor:
        return _scalar(loss_fn(tree_map(lambda v: v.unsqueeze(0), o), tree_map(lambda v: v.unsqueeze(0), t)))

    try:
        return torch.func.vmap(one)(output, targets)
    except UsageError:
        raise
    except Exception:  # a loss that vmap cannot trace (.item(), data-dependent control flow...)
        rows = [
            _scalar(loss_fn(tree_map(lambda v: v[i : i + 1], output), tree_map(lambda v: v[i : i + 1], targets)))
            for i in range(b)
        ]
        return torch.stack(rows)


# --------------------------------------------------------------------------------------------
# vmap


def _vmap_grads(model: nn.Module, loss_fn: Callable[..., torch.Tensor], inputs: Any, targets: Any,
                chunk_size: int | None) -> dict[str, torch.Tensor]:
    from torch.func import functional_call, grad, vmap

    trainable = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    frozen = {n: p.detach() for n, p in model.named_parameters() if not p.requires_grad}
    buffers = dict(model.named_buffers())

    def sample_loss(params: dict[str, torch.Tensor], x: Any, y: Any) -> torch.Tensor:
        xb = tree_map(lambda v: v.unsqueeze(0), x)
        yb = tree_map(lambda v: v.unsqueeze(0), y)
        args = xb if isinstance(xb, tuple) else (xb,)
        out = functional_call(model, (params, frozen, buffers), args)
        return _scalar(loss_fn(out, yb))

    randomness = "different" if any(m.training for m in model.modules()) else "error"
    fn = vmap(grad(sample_loss), in_dims=(None, 0, 0), randomness=randomness, chunk_size=chunk_size)
    return fn(trainable, inputs, targets)


# --------------------------------------------------------------------------------------------
# closed form


def _linear_grads(m: nn.Linear, x: torch.Tensor, g: torch.Tensor, b: int) -> dict[str, torch.Tensor]:
    x = x.reshape(b, -1, x.shape[-1]).to(g.dtype)
    g = g.reshape(b, -1, g.shape[-1])
    if x.shape[1] == 1:  # one row per sample: an outer product, written once
        weight = g.transpose(1, 2) * x
    else:
        weight = torch.bmm(g.transpose(1, 2), x)
    out = {"weight": weight}
    if m.bias is not None:
        out["bias"] = g.sum(dim=1)
    return out


def _conv_weight_grads(x: torch.Tensor, g: torch.Tensor, kernel: tuple[int, int], stride: tuple[int, int],
                       dilation: tuple[int, int], groups: int) -> torch.Tensor:
    """Per-sample weight gradients (B, O, C/groups, kh, kw) of a 2-D convolution from its padded
    input ``x`` (B, C, H, W) and output gradient ``g`` (B, O, Ho, Wo): an im2col view of ``x``
    (one copy, as ``F.unfold`` but without its per-sample loop) and one batched matmul."""
    b, c = x.shape[:2]
    o, ho, wo = g.shape[1:]
    kh, kw = kernel
    go = g.reshape(b, o, ho * wo)
    if groups == 1 and c >= 8:
        # Patches gathered channels-last move runs of C contiguous numbers (several times faster
        # on CPU than the NCHW gather below, whose innermost runs are a few output columns); the
        # (kh, kw, C) order is then turned into the weight's (C, kh, kw) on the patches, which are
        # smaller than the result.
        xc = x.permute(0, 2, 3, 1).contiguous()
        sb, sh, sw, sc = xc.stride()
        patches = xc.as_strided((b, ho, wo, kh, kw, c), (sb, sh * stride[0], sw * stride[1], sh * dilation[0], sw * dilation[1], sc))
        cols_t = patches.reshape(b, ho * wo, kh, kw, c).permute(0, 1, 4, 2, 3).reshape(b, ho * wo, c * kh * kw)
        return torch.bmm(go, cols_t).reshape(b, o, c, kh, kw)
    x = x.contiguous()
    sb, sc, sh, sw = x.stride()
    patches = x.as_strided((b, c, kh, kw, ho, wo), (sb, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1]))
    cols = patches.reshape(b, groups, c // groups * kh * kw, ho * wo)
    if groups == 1:
        weight = torch.bmm(go, cols[:, 0].transpose(1, 2))
    else:
        weight = torch.einsum("bgol,bgil->bgoi", go.reshape(b, groups, o // groups, ho * wo), cols)
    return weight.reshape(b, o, c // groups, kh, kw)


def _conv_grads(m: nn.Conv1d | nn.Conv2d, x: torch.Tensor, g: torch.Tensor, b: int) -> dict[str, torch.Tensor]:
    pad = list(m._reversed_padding_repeated_twice)
    if any(pad):
        x = F.pad(x, pad, mode="constant" if m.padding_mode == "zeros" else m.padding_mode)
    x = x.to(g.dtype)
    if isinstance(m, nn.Conv1d):  # a one-row image: (B, C, L) -> (B, C, 1, L)
        weight = _conv_weight_grads(x.unsqueeze(2), g.unsqueeze(2), (1, *m.kernel_size), (1, *m.stride),
                                    (1, *m.dilation), m.groups).squeeze(3)
    else:
        weight = _conv_weight_grads(x, g, m.kernel_size, m.stride, m.dilation, m.groups)
    out = {"weight": weight}
    if m.bias is not None:
        out["bias"] = g.reshape(b, m.out_channels, -1).sum(dim=2)
    return out


def _embedding_grads(m: nn.Embedding, idx: torch.Tensor, g: torch.Tensor, b: int) -> dict[str, torch.Tensor]:
    num, dim = m.weight.shape
    idx = idx.reshape(b, -1)
    g = g.reshape(b, -1, dim)
    flat = (idx + torch.arange(b, device=idx.device).unsqueeze(1) * num).reshape(-1)
    out = torch.zeros(b * num, dim, dtype=g.dtype, device=g.device)
    out.index_add_(0, flat, g.reshape(-1, dim))
    out = out.reshape(b, num, dim)
    if m.padding_idx is not None:
        out[:, m.padding_idx] = 0
    return {"weight": out}


class _FastPathFailed(Exception):
    pass


# nn losses whose per-sample losses add up to (B x the batch loss) for reduction="mean" and to the
# batch loss for reduction="sum", when every sample has the same number of elements
_ELEMENTWISE_LOSSES = (nn.MSELoss, nn.L1Loss, nn.SmoothL1Loss, nn.HuberLoss, nn.BCELoss, nn.BCEWithLogitsLoss)
_CLASS_LOSSES = (nn.CrossEntropyLoss, nn.NLLLoss)


def _summed_loss(loss_fn: Callable[..., torch.Tensor], output: Any, targets: Any, b: int) -> torch.Tensor:
    """The sum over samples of each sample's own loss (what one batched backward needs)."""
    reduction = getattr(loss_fn, "reduction", None)
    if (
        isinstance(output, torch.Tensor) and isinstance(targets, torch.Tensor)
        and reduction in ("mean", "sum") and getattr(loss_fn, "weight", None) is None
    ):
        scale = b if reduction == "mean" else 1
        if type(loss_fn) in _ELEMENTWISE_LOSSES and output.shape == targets.shape:
            return _scalar(loss_fn(output, targets)) * scale
        if type(loss_fn) in _CLASS_LOSSES and (
            targets.is_floating_point() or not bool((targets == loss_fn.ignore_index).any())
        ):
            return _scalar(loss_fn(output, targets)) * scale
    return _per_sample_losses(loss_fn, output, targets, b).sum()


def _param_uses(root: Any, wanted: set[int]) -> dict[int, int]:
    """How many autograd edges lead to each wanted leaf tensor in the graph under ``root``."""
    uses = dict.fromkeys(wanted, 0)
    stack, seen = [root], set()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is None:
                continue
            var = getattr(nxt, "variable", None)
            if var is not None:
                if id(var) in uses:
                    uses[id(var)] += 1
            else:
                stack.append(nxt)
    return uses


def _fast_grads(model: nn.Module, loss_fn: Callable[..., torch.Tensor], inputs: Any, targets: Any,
                b: int) -> dict[str, torch.Tensor]:
    from torch.autograd.graph import get_gradient_edge

    names = {id(p): n for n, p in model.named_parameters() if p.requires_grad}
    params = {id(p): p for p in model.parameters() if p.requires_grad}
    layers = [m for m in model.modules() if type(m) in _FAST_TYPES and any(p.requires_grad for p in m.parameters(recurse=False))]
    records: list[tuple[nn.Module, torch.Tensor, Any]] = []

    def hook(mod: nn.Module, inp: tuple[Any, ...], out: Any) -> None:
        if not inp or not isinstance(inp[0], torch.Tensor) or not isinstance(out, torch.Tensor) or not out.requires_grad:
            return
        # the gradient edge as it is now: later in-place ops (ReLU(inplace=True)) on `out` do not
        # change which gradient we get, and no extra tensor or module backward hook is needed
        records.append((mod, inp[0].detach(), get_gradient_edge(out)))

    handles = [m.register_forward_hook(hook) for m in layers]
    try:
        with torch.enable_grad():
            output = _call(model, inputs)
    finally:
        for h in handles:
            h.remove()
    with torch.enable_grad():
        total = _summed_loss(loss_fn, output, targets, b)
    if not records or total.grad_fn is None:
        raise _FastPathFailed("no supported layer output reached the loss")
    # one backward that stops at the layer outputs: no weight gradients are computed, and the
    # first layer's backward is skipped entirely
    out_grads = torch.autograd.grad(total, [r[2] for r in records], allow_unused=True)

    # every use of a trainable parameter must be one of the recorded layer calls; a parameter also
    # used elsewhere (F.linear(x, layer.weight), autocast weight caches...) has no closed form here
    uses = _param_uses(total.grad_fn, set(params))
    expected = dict.fromkeys(params, 0)
    result: dict[int, torch.Tensor] = {}
    for (mod, x, _), g in zip(records, out_grads):
        if g is None:  # this call's output did not reach the loss
            continue
        if x.shape[:1] != (b,) or g.shape[:1] != (b,):
            raise _FastPathFailed(
                f"{type(mod).__name__} saw a tensor of shape {tuple(x.shape)} without the batch ({b}) along dimension 0"
            )
        if isinstance(mod, nn.Linear):
            parts = _linear_grads(mod, x, g, b)
        elif isinstance(mod, (nn.Conv1d, nn.Conv2d)):
            parts = _conv_grads(mod, x, g, b)
        else:
            parts = _embedding_grads(mod, x, g, b)
        for pname, value in parts.items():
            p = getattr(mod, pname)
            if p is None or not p.requires_grad:
                continue
            expected[id(p)] += 1
            result[id(p)] = result[id(p)] + value if id(p) in result else value
    for pid, n in uses.items():
        if n != expected[pid]:
            raise _FastPathFailed(
                f"{names[pid]} is used {n} time(s) in the graph but by {expected[pid]} supported layer call(s)"
            )

    out: dict[str, torch.Tensor] = {}
    for pid, p in params.items():
        per = result.get(pid)
        if per is None:  # never reached the loss: zero gradient for every sample
            per = torch.zeros((b, *p.shape), dtype=p.dtype, device=p.device)
        out[names[pid]] = per.to(p.dtype)
    return out


# --------------------------------------------------------------------------------------------
# entry point


def per_sample_grads(
    model: nn.Module,
    loss_fn: Callable[..., torch.Tensor],
    inputs: Any,
    targets: Any,
    *,
    method: str = "auto",
    chunk_size: int | None = None,
) -> PerSampleGrads:
    """Gradient of ``loss_fn(model(x_i[None]), y_i[None])`` for every sample ``i`` and parameter.

    Returns ``{name: tensor of shape (B, *param.shape)}`` for each trainable parameter, in
    ``named_parameters()`` order (``.method`` tells which path ran). ``inputs`` is a tensor (or
    a tuple of tensors, passed as positional arguments) with the batch along dimension 0;
    ``loss_fn`` reduces with mean or sum. ``method``: ``"vmap"`` (``torch.func``, any model),
    ``"fast"`` (closed form for Linear/Conv1d/Conv2d/Embedding models), ``"auto"`` (fast when
    every layer with trainable parameters is supported, else vmap). ``chunk_size`` bounds vmap's
    memory. Model weights, buffers and ``.grad`` are left untouched. A BatchNorm normalising with
    batch statistics (train mode) mixes samples, so it is refused.
    """
    if method not in METHODS:
        raise UsageError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    if not isinstance(model, nn.Module):
        raise UsageError(f"per_sample_grads expects a torch.nn.Module, got {type(model).__name__}")
    if not any(p.requires_grad for p in model.parameters()):
        raise UsageError(f"{type(model).__name__} has no trainable parameters")
    _check_batchnorm(model)
    b = _batch_size(inputs, targets)
    problem = fast_path_problem(model)
    if method == "fast" and problem:
        raise UsageError(f"method='fast' cannot handle this model: {problem}; use method='vmap' or 'auto'")

    result = PerSampleGrads()
    if method in ("fast", "auto") and problem is None:
        try:
            result.update(_fast_grads(model, loss_fn, inputs, targets, b))
            result.method = "fast"
            return result
        except _FastPathFailed as exc:
            if method == "fast":
                raise UsageError(f"method='fast' cannot handle this model: {exc}; use method='vmap' or 'auto'") from None
            warnings.warn(f"per_sample_grads: closed form not applicable ({exc}); using vmap", RuntimeWarning, stacklevel=2)
    try:
        grads = _vmap_grads(model, loss_fn, inputs, targets, chunk_size)
    except UsageError:
        raise
    except RuntimeError as exc:
        raise UsageError(
            f"torch.func could not vmap this model ({str(exc).splitlines()[0]}); per-sample gradients need a "
            "model whose samples are independent and whose forward uses no in-place updates of buffers or .item()"
        ) from exc
    result.update({n: g.detach() for n, g in grads.items()})
    result.method = "vmap"
    return result
