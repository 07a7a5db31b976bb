"""Exploding or vanishing gradients: per-layer gradient norms and their ratio across depth.

What: after every backward the gradient norm of each weight matrix / kernel is kept (on the
device, read in batches), and on the watched steps (every other one) the RMS of the gradient
that reaches each Linear/convolution layer's *output* (the backpropagated signal). Three
measures: the *signal ratio*, the median output-gradient RMS of the first trained layer (in
forward order) over that of the last one; the *depth ratio*, the same for the weight gradients;
and the *growth*, the median total gradient norm over the last fifth of the steps against the
first tenth. Vanishing: signal or depth ratio below ``VANISH_RATIO``; exploding: signal ratio
above ``SIGNAL_EXPLODE``, depth ratio above ``EXPLODE_RATIO`` or growth above ``GROWTH``.
Embeddings and normalisation layers are left out (their gradients are sparse or scale-free).
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

Thresholds, measured with ``--steps 200`` on the healthy models of ``tests/doctor/realistic.py``
(MLP ReLU/tanh on digits, a CNN with BatchNorm, a GRU classifier, a 2-layer transformer LM,
tanh/sigmoid regression MLPs; seeds 0 and 1): depth ratios between 0.04 and 1.2, growth at most
4.4, signal ratios between 0.02 and 0.9; on the examples of this repository (``torchwise doctor
examples/X.py:task --steps 200``) signal ratios between 0.014 and 0.44 (gru_classifier: one
Linear layer, no ratio); a 12-layer ReLU MLP with kaiming init (healthy, deep) reaches 4.5 late
in the run; 6- and 10-layer ReLU MLPs with PyTorch's default init 0.86 and 0.57. Faults (2026-11-23): a 12-layer sigmoid
MLP gives ratios near 1e-6; a 12-layer ReLU MLP with weights 3x kaiming under Adam a signal
ratio of 6e4 (2x kaiming: 4e2) while its depth ratio stays near 1 and its growth below 1; a
12-layer tanh MLP initialised with std 1 a depth ratio of about 2e3 and growth above 10.
``SIGNAL_EXPLODE`` = 100 leaves a factor 20 above the healthy maximum.
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


def measure(w) -> dict | None:
    """Depth ratio and growth of the gradients (None when fewer than two weight layers)."""
    idx = [i for i, (shape, kind) in enumerate(zip(w.param_shapes, w.param_kinds))
           if len(shape) >= 2 and kind not in _SKIP_KINDS and "Norm" not in kind and w.requires_grad[i]]
    rows = [r for r in w.grad_norms if len(r) == len(w.param_names)]
    if len(idx) < 2 or not rows:
        return None
    def rms(i: int) -> float:
        numel = math.prod(w.param_shapes[i])
        return median([r[i] for r in rows if r[i] > 0]) / math.sqrt(numel)
    first, last = idx[0], idx[-1]
    signal = output_grad_ratio(w)
    totals = [math.sqrt(sum(v * v for v in r)) for r in rows]
    early, late = median(window(totals, 0.0, 0.1)), median(window(totals, 0.8, 1.0))
    return {
        "first_layer": w.param_names[first], "last_layer": w.param_names[last],
        "first_grad_rms": rms(first), "last_grad_rms": rms(last),
        "depth_ratio": rms(first) / max(rms(last), 1e-30),
        "grad_norm_early": early, "grad_norm_late": late, "growth": late / max(early, 1e-30),
        "per_layer_grad_rms": {w.param_names[i]: float(f"{rms(i):.3g}") for i in idx[:40]},
        **signal,
    }


def output_grad_ratio(w) -> dict:
    """The backpropagated gradient across depth: the median RMS of the gradient reaching the first
    trained Linear/conv layer's output over that reaching the last one's ({} when not watched)."""
    trained = {n for n, g in zip(w.param_names, w.requires_grad) if g}
    layers = [(name, median([v for v in values if v > 0])) for name, values in zip(w.output_grad_layers, w.output_grad_rms)
              if f"{name}.weight" in trained and any(v > 0 for v in values)]
    layers = [(n, v) for n, v in layers if math.isfinite(v)]
    if len(layers) < 2:
        return {}
    (first, a), (last, b) = layers[0], layers[-1]
    return {"signal_first_layer": first, "signal_last_layer": last, "signal_ratio": a / max(b, 1e-30),
            "per_layer_signal_rms": {n: float(f"{v:.3g}") for n, v in layers[:40]}}


def check(ctx) -> list[Finding] | Skipped:
    skip = needs_steps(ctx, CODES)
    if skip:
        return skip
    m = measure(ctx.watch)
    if m is None:
        return Skipped(CODES, "needs at least two weight layers with gradients")
    ratio, growth = m["depth_ratio"], m["growth"]
    signal = m.get("signal_ratio", 1.0)
    evidence = {k: (float(f"{v:.3g}") if isinstance(v, float) else v) for k, v in m.items()}
    evidence["steps"] = ctx.watch.steps
    where = f"{m['first_layer']} .. {m['last_layer']}"
    if not math.isfinite(ratio):
        return []
    if signal > SIGNAL_EXPLODE and math.isfinite(signal):
        return [Finding(
            "TW130", "warning",
            f"exploding gradients: the gradient reaching {m['signal_first_layer']} is {signal:.3g}x larger than the one "
            f"reaching {m['signal_last_layer']} (it grows layer by layer towards the input)",
            f"{m['signal_first_layer']} .. {m['signal_last_layer']}", evidence,
            "fix the init scale (kaiming_normal_ for ReLU, xavier for tanh; no extra gain), add normalisation "
            "(BatchNorm/LayerNorm) or residual connections; clip gradients",
        )]
    if min(ratio, signal) < VANISH_RATIO and growth <= GROWTH:  # growing gradients first: a blow-up saturates the early layers
        smaller = 1 / min(ratio, signal)
        return [Finding(
            "TW130", "warning",
            f"vanishing gradients: the first layer's gradients are {smaller:.3g}x smaller than the last layer's",
            where, evidence,
            "add normalisation (BatchNorm/LayerNorm) and residual connections, use ReLU-family activations, or a proper init (kaiming/xavier)",
        )]
    if ratio > EXPLODE_RATIO or growth > GROWTH:
        what = (f"the first layer's gradients are {ratio:.3g}x larger than the last layer's" if ratio > EXPLODE_RATIO
                else f"the gradient norm grew {growth:.3g}x during the run")
        return [Finding(
            "TW130", "warning", f"exploding gradients: {what}", where, evidence,
            "lower the learning rate, clip gradients (torch.nn.utils.clip_grad_norm_), fix the init scale, add normalisation",
        )]
    return []
