"""The model's output starts far off scale: a bad initialisation (or unscaled inputs), with the layer.

What: at the first training step, for every Linear and convolution layer, the standard deviation
of its weight against kaiming's ``sqrt(2 / fan_in)`` and the RMS of its input and output
(init_scale.py); and the first loss (the median of the first three steps' when a layer's init is
suspect, else the very first: a learning rate far too high can blow up steps 1 and 2) against
what an untrained model should give: ln C for C classes (a uniform guess), the targets' mean
square for a regression loss. For classification, the loss judged is the
classification loss's share of the total, recomputed from its own first call: a training loss that
adds other terms (a GAN discriminator's two terms, a multi-task sum) starts above ln C with a
healthy init. Reported when the first loss is at least ``HIGH_START`` times
that, or when some layer is initialised at least ``VERY_WIDE`` times wider than kaiming and
multiplies the scale of its input by at least ``HIGH_GAIN``. The cause named: the layers
initialised at least ``WIDE`` times wider than kaiming (their init); else a bias of RMS
``BIG_BIAS`` or more that makes half the output or more (an output bias set to a confident
guess); else — inputs with an RMS of ``LOUD_INPUT`` or more reaching the first layer — the input
scale. Separately, any layer but the last whose weights start all equal (standard deviation 0:
``zeros_``, ``constant_``) is an error at once: its units stay copies of each other.
Why: an output that starts hundreds of times too large gives a first loss far above chance,
saturated softmax/sigmoid units and exploding gradients; the optimizer spends its first steps
(or the whole run) undoing the init, and the model ends worse than one initialised well.
Example: ``nn.init.normal_(layer.weight, std=1.0)`` on 512-wide layers, or every weight scaled by
3 after kaiming init: the first loss of a 10-class MLP is 575 instead of about 2.3.
Fix: PyTorch's default init or ``kaiming_normal_`` for ReLU layers (``xavier_uniform_`` for
tanh/sigmoid), no extra gain; standardise the inputs (``(x - mean) / std``).
Measured (2026-11-25). First loss (median of three steps) over ln C on healthy classifiers:
the realistic models of tests/doctor 0.99-1.06, pytorch/examples mnist 1.16, yunjey's
feedforward/CNN/LSTM 1.0-1.18; regression MLPs 1.05x the targets' mean square. Weight std over
kaiming: 0.39-0.64 (PyTorch's default init is 0.41; DCGAN's normal(0, 0.02) 0.1-0.64,
word_language_model's uniform(-0.1, 0.1) 0.58); per-layer output/input RMS gain at most 1.73;
bias RMS at most 0.2. Faults: 3x kaiming on a 12-layer ReLU MLP: first loss 5.8e5x ln C, std over
kaiming 3.1; a binary output bias at log(99) where 37% are positive: first loss 4.1x ln 2, bias
RMS 4.6 making 99% of the output; zero hidden weights: std 0.
"""

from __future__ import annotations

import math
from typing import Any

from torchwise.doctor.checks import listing
from torchwise.doctor.checks._dynamics import median, task_kind
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW142",)
SCRIPT = True
EXPLAINS = ("TW130", "TW131", "TW132", "TW134", "TW135", "TW136", "TW140")  # exploding signal, dead/saturated units, a loss undoing the init, weights pushed far from a bad start
HIGH_START = 3.0
WIDE = 2.0
VERY_WIDE = 4.0
HIGH_GAIN = 3.0
LOUD_INPUT = 10.0
BIG_BIAS = 1.0


def check(ctx) -> list[Finding] | Skipped:
    w = ctx.watch
    layers = getattr(w, "init_layers", None) or []
    if not layers:
        return Skipped(CODES, "no Linear/convolution layer ran at the first step")
    constant = [l for l in layers[:-1] if l["weight_std"] <= 1e-12]  # the output layer may start at zero on purpose
    if constant:
        return [_constant(constant)]
    wide = [l for l in layers if l["std_over_kaiming"] >= WIDE]
    suspect = bool(wide) or any(l.get("bias_rms", 0.0) >= BIG_BIAS for l in layers)
    start, expected, what = _first_loss(ctx, median_of_three=suspect)  # no init to blame: the very first loss
    high_start = start is not None and expected and start >= HIGH_START * expected
    blowing = [l for l in layers if l["std_over_kaiming"] >= VERY_WIDE and _gain(l) >= HIGH_GAIN]
    if not high_start and not blowing:
        return []
    first = layers[0]
    evidence: dict[str, Any] = {
        "first_loss": _r(start), "expected_first_loss": _r(expected), "compared_with": what,
        "output_rms_at_start": _r(layers[-1]["output_rms"]),
        "layers": {l["layer"]: {"std_over_kaiming": _r(l["std_over_kaiming"]), "gain": _r(_gain(l))} for l in layers[:12]},
    }
    symptom = f"the first loss is {start:.4g}, {start / expected:.0f}x {what} ({expected:.3g})" if high_start \
        else f"{blowing[0]['layer']} multiplies its input's scale by {_gain(blowing[0]):.1f}"
    if wide:
        names = [l["layer"] for l in wide]
        return [Finding(
            "TW142", "error" if high_start else "warning",
            f"bad initialisation: {symptom}; {len(wide)} layer(s) start with weights "
            f"{max(l['std_over_kaiming'] for l in wide):.1f}x wider than kaiming's sqrt(2/fan_in) "
            f"(PyTorch's default: 0.41x), so the output starts at RMS {layers[-1]['output_rms']:.3g}",
            listing(names), evidence,
            "use PyTorch's default init or nn.init.kaiming_normal_ for ReLU layers (xavier_uniform_ for tanh/sigmoid), "
            "without an extra gain or scaling of the weights",
        )]
    biased = [l for l in layers if l.get("bias_rms", 0.0) >= BIG_BIAS and l["bias_rms"] >= 0.5 * l["output_rms"]]
    if biased and high_start:
        names = [l["layer"] for l in biased]
        return [Finding(
            "TW142", "error",
            f"bad initialisation: {symptom}; the bias of {listing(names)} starts at {biased[-1]['bias_rms']:.3g} "
            "(RMS) and sets the output on its own",
            listing(names), evidence,
            "initialise that bias at zero, or at the log-odds of the class frequencies in the training data "
            "(log(p / (1 - p)) for a binary output), not at a guess",
        )]
    if first["input_rms"] >= LOUD_INPUT:
        return [Finding(
            "TW142", "warning",
            f"the inputs are not scaled: {symptom}; the model's input has RMS {first['input_rms']:.3g} "
            f"(standardised data: about 1), so its output starts at RMS {layers[-1]['output_rms']:.3g}",
            f"input of {first['layer']}", evidence,
            "standardise the inputs ((x - mean) / std per feature or channel, e.g. transforms.Normalize), or scale them to [0, 1]",
        )]
    if task_kind(ctx)[0] == "regression":
        return []  # a target scale far from 1 also makes the first loss large: nothing to name in the model
    return [Finding(
        "TW142", "warning",
        f"the model's output starts far off scale: {symptom}; the output has RMS {layers[-1]['output_rms']:.3g} at the first step",
        f"{first['layer']} .. {layers[-1]['layer']}", evidence,
        "check the init of custom layers and any scaling in forward(); PyTorch's default init or kaiming_normal_ give outputs of RMS about 1",
    )]


def _constant(layers: list[dict]) -> Finding:
    names = [l["layer"] for l in layers]
    return Finding(
        "TW142", "error",
        f"bad initialisation: the weights of {listing(names)} start all equal (standard deviation 0): every unit of such a "
        "layer computes the same thing and gets the same gradient, so they stay copies of each other (the symmetry is never broken)",
        listing(names), {"constant_layers": names, "layers": {l["layer"]: {"weight_std": l["weight_std"]} for l in layers[:12]}},
        "initialise hidden weights randomly: PyTorch's default init, or nn.init.kaiming_normal_ (ReLU) / xavier_uniform_ (tanh); "
        "zeros are only safe for biases and the last layer",
    )


def _first_loss(ctx: Any, median_of_three: bool) -> tuple[float | None, float | None, str]:
    """(first loss, what an untrained model should give, how that was found)."""
    w = ctx.watch
    losses = w.losses or next((o.losses for o in getattr(w, "objectives", None) or [] if o.losses), [])
    if not losses:
        return None, None, ""
    first = median(losses[:3]) if median_of_three else losses[0]  # one batch is noisy; three steps barely change an init
    if not math.isfinite(first) or first <= 0:
        return None, None, ""
    kind, classes = task_kind(ctx)
    if kind in ("classes", "binary") and classes and classes >= 2:
        own = _own_first_loss(ctx, kind)  # a total of several objectives (a GAN, a multi-task sum) is not ln C's to judge
        if own is not None and losses[0] > 0 and own < 0.9 * losses[0]:
            first *= own / losses[0]  # the classification loss's share of the first step's total
        return first, math.log(classes), "the chance level ln C" if kind == "classes" else "the chance level ln 2"
    if kind == "regression":
        call = next(c for c in ctx.loss_calls if c.func in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"))
        target = getattr(call, "target", None)
        if target is not None and hasattr(target, "float") and target.numel():
            square = float(target.detach().float().pow(2).mean())
            scale = square if call.func == "mse_loss" else math.sqrt(square)
            if scale > 0:
                return first, scale, "the targets' mean square" if call.func == "mse_loss" else "the targets' RMS"
    return None, None, ""


def _own_first_loss(ctx: Any, kind: str) -> float | None:
    """The classification loss itself at the first step, recomputed from its recorded call (the
    training loss may add other terms: a GAN's two discriminator terms, a multi-task sum)."""
    import torch.nn.functional as F

    for call in getattr(ctx, "loss_calls", None) or []:
        try:
            if kind == "classes" and call.func in ("cross_entropy", "nll_loss"):
                fn = F.cross_entropy if call.func == "cross_entropy" else F.nll_loss
                value = fn(call.input.float(), call.target, ignore_index=call.kwargs.get("ignore_index", -100))
            elif kind == "binary" and call.func.startswith("binary_cross_entropy"):
                fn = F.binary_cross_entropy_with_logits if call.func.endswith("logits") else F.binary_cross_entropy
                value = fn(call.input.float(), call.target.float())
            else:
                continue
        except (RuntimeError, ValueError, TypeError):
            continue
        v = float(value)
        return v if math.isfinite(v) else None
    return None


def _gain(layer: dict) -> float:
    return layer["output_rms"] / max(layer["input_rms"], 1e-12)


def _r(v: Any) -> Any:
    return float(f"{v:.4g}") if isinstance(v, float) and math.isfinite(v) else v
