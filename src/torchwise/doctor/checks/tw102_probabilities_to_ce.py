"""Probabilities fed to a loss that expects logits or log-probabilities.

What: ``cross_entropy`` (``nn.CrossEntropyLoss``) whose input rows are non-negative and sum to 1,
i.e. ``softmax`` output; and ``nll_loss`` (``nn.NLLLoss``) whose input rows are not
log-probabilities (their log-sum-exp is not 0: probabilities or raw logits).
Why: cross-entropy applies log-softmax itself, so softmax before it squashes the logits twice;
the loss still falls, but gradients shrink and the model learns slowly and plateaus worse.
NLLLoss only picks ``-input[target]``: given probabilities or logits it is not a likelihood at all.
Example: ``loss = nn.CrossEntropyLoss()(model(x).softmax(-1), y)``.
Fix: feed raw logits to CrossEntropyLoss (CE == LogSoftmax + NLLLoss); feed ``log_softmax``
output to NLLLoss. The input seen by the loss call is checked, wherever the softmax happened.
"""

from __future__ import annotations

import torch

from torchwise.doctor.report import Finding, Skipped

CODES = ("TW102",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def _rows(x: torch.Tensor) -> torch.Tensor:
    x = x.detach().float()
    return x.unsqueeze(0) if x.dim() == 1 else x.movedim(1, -1).reshape(-1, x.shape[1])


def check(ctx) -> list[Finding] | Skipped:
    calls = [c for c in ctx.loss_calls if c.func in ("cross_entropy", "nll_loss")]
    if not calls:
        return Skipped(CODES, "no cross_entropy/nll_loss call was seen")
    findings = []
    for call in calls:
        rows = _rows(call.input)
        if rows.numel() == 0 or rows.shape[-1] < 2 or not torch.isfinite(rows).all():
            continue
        row_sum_err = float((rows.sum(-1) - 1).abs().max())
        minimum = float(rows.min())
        probabilities = minimum >= 0 and row_sum_err < 1e-3
        if call.func == "cross_entropy" and probabilities:
            findings.append(Finding(
                "TW102", "error",
                f"cross_entropy got probabilities: all {rows.shape[0]} rows are >= 0 and sum to 1 (max |sum-1| = {row_sum_err:.1e})",
                "loss_fn input (cross_entropy)" + (f" at {call.line}" if call.line else ""),
                {"rows": rows.shape[0], "classes": rows.shape[-1], "min": round(minimum, 6), "max_abs_row_sum_minus_1": row_sum_err},
                "remove the softmax before CrossEntropyLoss: it applies log-softmax itself and wants raw logits",
            ))
        elif call.func == "nll_loss":
            lse_err = float(torch.logsumexp(rows, -1).abs().max())
            if lse_err > 1e-2:
                kind = "probabilities" if probabilities else "values that are not log-probabilities (raw logits?)"
                findings.append(Finding(
                    "TW102", "error",
                    f"nll_loss got {kind}: the rows' log-sum-exp is up to {lse_err:.3g} instead of 0",
                    "loss_fn input (nll_loss)" + (f" at {call.line}" if call.line else ""),
                    {"rows": rows.shape[0], "classes": rows.shape[-1], "max_abs_logsumexp": lse_err, "min": round(minimum, 6)},
                    "feed log_softmax(logits) to NLLLoss, or raw logits to CrossEntropyLoss",
                ))
    return findings
