"""Exploding or vanishing gradients: per-layer gradient norms and their ratio across depth.

What: after every backward the gradient norm of each weight matrix / kernel is kept (on the
device, read in batches), and on the watched steps (every other one) the norm per sample of the
gradient that reaches each Linear/convolution layer's *output* (the backpropagated signal; per
sample, not per element, so a conv map and a Linear output compare). Measured per model (a GAN's
generator and discriminator each on their own): the *relative ratio*, the first trained weight
layer's ``||grad|| / ||weight||`` (in forward order) over the last one's — how fast each end can
learn; the *signal ratio*, the first layer's signal over the last one's; the *depth ratio* (the
weight gradients' RMS, evidence only: a conv kernel's gradient sums over every position, so it
does not compare with a Linear layer's); and the *growth*, the median total gradient norm over
the last fifth of the steps against the first tenth (not judged for a model an adversarial
objective trains: a generator's gradients grow as its discriminator learns). Vanishing: relative
ratio below ``VANISH_RATIO``; exploding: signal ratio above ``SIGNAL_EXPLODE``, relative ratio
above ``EXPLODE_RATIO`` or growth above ``GROWTH``. Embeddings and normalisation layers are left
out (their gradients are sparse or scale-free).
Why the signal and not only the weights: in a ReLU stack initialised too wide every layer
multiplies the forward activations *and* the backpropagated gradient by the same factor, so a
weight gradient (signal x input activation) is the same size in every layer while the signal
itself grows geometrically towards the input. An adaptive optimizer (Adam) divides the update
by the gradient's own scale, so the loss may fall anyway; the model is still badly scaled
(logits of 1e5, saturated softmax) and learns far worse than with a proper init.
Why it matters: when gradients shrink layer by layer the first layers do not learn (deep
sigmoid/tanh stacks, no normalisation, no residuals); when they grow, updates blow up and the
loss turns to NaN or swings (a too-large init or learning rate, a missing normalisation).
Example: ``nn.Sequential(*[nn.Linear(64, 64), nn.Sigmoid()] * 12, nn.Linear(64, 10))``; or
12 Linear+ReLU layers whose weights are 3x kaiming, trained with Adam.
Fix: residual connections and normalisation (BatchNorm/LayerNorm), ReLU-family activations,
a proper init (``kaiming_normal_`` for ReLU, ``xavier_uniform_`` for tanh), gradient clipping
(``clip_grad_norm_``) and a smaller learning rate against explosion.

Thresholds, measured 2026-11-25 with 150 steps on the healthy models of
``tests/doctor/realistic.py`` (MLP ReLU/tanh on digits, a CNN with BatchNorm, a GRU classifier, a
2-layer transformer LM, tanh/sigmoid regression MLPs; seeds 0 and 1): relative ratios 0.010-2.9
(the sigmoid regression MLP the lowest), signal ratios 0.13-7.7, growth at most 6.9; at 200 steps
on public scripts (pytorch/examples mnist, vae; yunjey's feedforward, CNN, LSTM) relative ratios
0.10-1.45 and signal ratios 0.03-7.1 — pytorch/examples' MNIST CNN, reported before as
"vanishing 1.15e3x" from its raw weight-gradient RMS, has a relative ratio of 0.15; the critics
and generators of pytorch/examples dcgan, PyTorch-GAN wgan_gp and yunjey's GAN stay quiet
(relative ratios 0.017-0.13 over both models together). Faults: a 12-layer sigmoid MLP gives
relative ratios near 1e-6; a 12-layer ReLU MLP with weights 3x kaiming under Adam a signal ratio
of 2.6e5 (then TW142 names the init); SGD at lr 0.2 with momentum on the regression MLP a growth
of 4.5e16 (then TW140 names the learning rate). ``SIGNAL_EXPLODE`` = 100 leaves a factor 13
above the healthy maximum, ``VANISH_RATIO`` = 1e-3 a factor 10 below the healthy minimum.
"""

from __future__ import annotations

import math

from torchwise.doctor.checks._dynamics import median, needs_steps, window
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW130",)
SCRIPT = True
DYNAMICS = True  # needs a run of >= MIN_DYNAMICS_STEPS steps
VANISH_RATIO = 1e-3
EXPLODE_RATIO = 1e3
GROWTH = 100.0
SIGNAL_EXPLODE = 100.0
_SKIP_KINDS = ("Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm")


def measure(w, model: int | None = None) -> dict | None:
    """Relative-gradient ratio, depth ratio, growth and signal ratio over the weight layers of one
    model (``model``: its index in ``w.param_models``; None: all); None with fewer than two layers."""
    models = getattr(w, "param_models", None) or [0] * len(w.param_names)
    idx = [i for i, (shape, kind) in enumerate(zip(w.param_shapes, w.param_kinds))
           if len(shape) >= 2 and kind not in _SKIP_KINDS and "Norm" not in kind and w.requires_grad[i]
           and (model is None or models[i] == model)]
    rows = [r for r in w.grad_norms if len(r) == len(w.param_names)]
    idx = [i for i in idx if any(r[i] > 0 for r in rows)]
    if len(idx) < 2 or not rows:
        return None

    def grad(i: int) -> float:
        return median([r[i] for r in rows if r[i] > 0])

    def rms(i: int) -> float:
        return grad(i) / math.sqrt(math.prod(w.param_shapes[i]))

    def rel(i: int) -> float:  # the gradient against the weight it updates: how fast the layer can learn
        return grad(i) / w.weight_norms[i] if w.weight_norms[i] > 0 else math.nan

    first, last = idx[0], idx[-1]
    totals = [math.sqrt(sum(r[i] * r[i] for i in idx)) for r in rows]
    early, late = median(window(totals, 0.0, 0.1)), median(window(totals, 0.8, 1.0))
    return {
        "first_layer": w.param_names[first], "last_layer": w.param_names[last],
        "relative_ratio": rel(first) / max(rel(last), 1e-30),
        "depth_ratio": rms(first) / max(rms(last), 1e-30),
        "grad_norm_early": early, "grad_norm_late": late, "growth": late / max(early, 1e-30),
        "per_layer_relative_grad": {w.param_names[i]: float(f"{rel(i):.3g}") for i in idx[:40]},
        **output_grad_ratio(w, model),
    }


def output_grad_ratio(w, model: int | None = None) -> dict:
    """The backpropagated gradient across depth: the median per-sample norm of the gradient reaching
    the first trained Linear/conv layer's output over that reaching the last one's ({} when not watched)."""
    models = getattr(w, "param_models", None) or [0] * len(w.param_names)
    trained = {(n, m) for n, g, m in zip(w.param_names, w.requires_grad, models) if g}
    layer_models = getattr(w, "output_grad_models", None) or [0] * len(w.output_grad_layers)
    layers = [(name, median([v for v in values if v > 0])) for name, values, m in zip(w.output_grad_layers, w.output_grad_rms, layer_models)
              if (f"{name}.weight", m) in trained and (model is None or m == model) and any(v > 0 for v in values)]
    layers = [(n, v) for n, v in layers if math.isfinite(v)]
    if len(layers) < 2:
        return {}
    (first, a), (last, b) = layers[0], layers[-1]
    return {"signal_first_layer": first, "signal_last_layer": last, "signal_ratio": a / max(b, 1e-30),
            "per_layer_signal": {n: float(f"{v:.3g}") for n, v in layers[:40]}}


def check(ctx) -> list[Finding] | Skipped:
    skip = needs_steps(ctx, CODES)
    if skip:
        return skip
    w = ctx.watch
    models = sorted(set(getattr(w, "param_models", None) or [0])) or [0]
    names = getattr(ctx, "scratch", {}).get("model_names_by_index", {})
    adversarial = {n for o in getattr(w, "objectives", None) or [] if o.coupled for n in o.models}
    findings, measured = [], False
    for model in models:
        m = measure(w, model if len(models) > 1 else None)
        if m is None:
            continue
        measured = True
        if names.get(model) in adversarial:  # a generator's gradients grow as its discriminator learns
            m["growth_not_judged"] = f"adversarial objective (measured {m['growth']:.3g}x)"
            m["growth"] = min(m["growth"], 1.0)
        finding = _judge(m, w.steps, names.get(model, "") if len(models) > 1 else "")
        if finding is not None:
            findings.append(finding)
    if not measured:
        return Skipped(CODES, "needs at least two weight layers with gradients")
    return findings


def _judge(m: dict, steps: int, model: str) -> Finding | None:
    ratio, growth, signal = m["relative_ratio"], m["growth"], m.get("signal_ratio", 1.0)
    evidence = {k: (float(f"{v:.3g}") if isinstance(v, float) else v) for k, v in m.items()}
    evidence["steps"] = steps
    prefix = f"{model}." if model else ""
    where = f"{prefix}{m['first_layer']} .. {prefix}{m['last_layer']}"
    if not math.isfinite(ratio):
        return None
    if signal > SIGNAL_EXPLODE and math.isfinite(signal):
        return Finding(
            "TW130", "warning",
            f"exploding gradients: the gradient reaching {prefix}{m['signal_first_layer']} is {signal:.3g}x larger than the one "
            f"reaching {prefix}{m['signal_last_layer']} (it grows layer by layer towards the input)",
            f"{prefix}{m['signal_first_layer']} .. {prefix}{m['signal_last_layer']}", evidence,
            "fix the init scale (kaiming_normal_ for ReLU, xavier for tanh; no extra gain), add normalisation "
            "(BatchNorm/LayerNorm) or residual connections; clip gradients",
        )
    if ratio < VANISH_RATIO and growth <= GROWTH:  # growing gradients first: a blow-up saturates the early layers
        return Finding(
            "TW130", "warning",
            f"vanishing gradients: relative to its weights, the first layer's gradient is {1 / ratio:.3g}x smaller than the last "
            "layer's, so the first layers barely learn",
            where, evidence,
            "add normalisation (BatchNorm/LayerNorm) and residual connections, use ReLU-family activations, or a proper init (kaiming/xavier)",
        )
    if ratio > EXPLODE_RATIO or growth > GROWTH:
        what = (f"relative to its weights, the first layer's gradient is {ratio:.3g}x larger than the last layer's" if ratio > EXPLODE_RATIO
                else f"the gradient norm grew {growth:.3g}x during the run")
        return Finding(
            "TW130", "warning", f"exploding gradients: {what}", where, evidence,
            "lower the learning rate, clip gradients (torch.nn.utils.clip_grad_norm_), fix the init scale, add normalisation",
        )
    return None
