"""BatchNorm in training mode fed a batch of one sample (or a last batch of one).

What: a forward pre-hook on every BatchNorm layer in training mode notes inputs whose batch
dimension is 1; for a Task, the training loader is also checked for a last batch of one
(``len(dataset) % batch_size == 1`` with ``drop_last=False``), which the few steps the doctor
runs may never reach. A step that failed with "Expected more than 1 value per channel when
training" is explained here.
Why: batch statistics of one sample are meaningless (for ``BatchNorm1d`` they cannot be computed
at all, and the step raises; for ``BatchNorm2d`` they are per-image statistics) and they corrupt
the running estimates used at evaluation. A last batch of one crashes at the end of an epoch,
often hours in.
Example: 1,025 samples with ``batch_size=64`` and ``drop_last=False``; or ``model(x[None])`` in
training mode.
Fix: ``DataLoader(..., drop_last=True)`` for training, a batch size that leaves no remainder of
one, ``model.eval()`` for single-sample inference, or GroupNorm/LayerNorm when batches are tiny.
"""

from __future__ import annotations

from torchwise.doctor.report import Finding, Skipped

CODES = ("TW137",)
SCRIPT = True
_FAILURE = "Expected more than 1 value per channel"


def _last_batch_of_one(loader) -> tuple[int, int] | None:
    try:
        n, bs = len(loader.dataset), loader.batch_size
    except (AttributeError, TypeError):
        return None
    if not bs or getattr(loader, "drop_last", False) or bs <= 1:
        return None
    return (n, bs) if n % bs == 1 else None


def check(ctx) -> list[Finding] | Skipped:
    w = getattr(ctx, "watch", None)
    seen = list(w.bn_single) if w is not None else []
    has_bn = seen or any(type(m).__name__.startswith("BatchNorm") or "BatchNorm" in type(m).__name__
                         for m in (ctx.model.modules() if getattr(ctx, "model", None) is not None else []))
    if not has_bn:
        return Skipped(CODES, "no BatchNorm layer")
    findings = []
    failed = bool(ctx.failure and _FAILURE in ctx.failure)
    if seen or failed:
        module, shape, step, line = seen[0] if seen else ("BatchNorm", (), -1, "")
        where = f"{module} at {line}" if line else module
        findings.append(Finding(
            "TW137", "error" if failed else "warning",
            f"BatchNorm in training mode got a batch of one sample (input {tuple(shape)} at step {step})"
            + ("; this is why the step failed" if failed else ""),
            where, {"inputs": [{"module": m, "shape": list(s), "step": st} for m, s, st, _ in seen[:10]], "failure": ctx.failure},
            "drop_last=True on the training loader (or a batch size that leaves no remainder of one); model.eval() for single samples",
        ))
    loader = getattr(ctx, "loader", None)
    last = _last_batch_of_one(loader) if loader is not None and not getattr(ctx, "batch_given", False) else None
    if last and not seen:
        n, bs = last
        findings.append(Finding(
            "TW137", "warning",
            f"the training loader's last batch holds one sample ({n} samples, batch_size={bs}, drop_last=False): BatchNorm will train on it at the end of every epoch",
            f"train loader (batch_size={bs})", {"dataset_size": n, "batch_size": bs, "drop_last": False},
            "DataLoader(..., drop_last=True) for training, or a batch size that does not leave one sample over",
        ))
    return findings
