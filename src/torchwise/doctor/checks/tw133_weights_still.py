"""Weights that do not move: a parameter group with lr 0, or updates far too small to matter.

What: every trainable parameter is compared between the first and the last watched step: its
relative change per step, ``||w_end - w_start|| / ||w_start|| / steps``. Reported: parameters
that receive gradients but did not change at all (a parameter group with ``lr=0``, an optimizer
that never steps them), and a run in which the median relative change per step over all
trainable parameters is below ``TINY_UPDATE`` (learning rate far too small).
Why: such weights keep their initial values however long training runs; a frozen group is
easy to miss when groups are built by name (e.g. a 0 in a per-group lr table).
Example: ``SGD([{"params": body, "lr": 0.0}, {"params": head}], lr=0.01)``, or ``lr=1e-9``.
Also, in a script run (each group's lr is read before every step): a group whose lr falls below
``COLLAPSED`` times its first value within the first 80% of the run and stays there (a schedule
stepped per batch instead of per epoch, a decay that compounds): its weights stop moving.
Fix: give every group a sensible lr (check the scheduler and per-group overrides), or freeze on
purpose with ``requires_grad_(False)`` so the intent is explicit.

Thresholds, measured with ``--steps 200`` on the healthy models of ``tests/doctor/realistic.py``
(SGD+momentum CNN, Adam/AdamW MLPs, GRU and transformer LM; seeds 0, 1): median relative change
per step between 4e-4 and 2e-2 (the smallest: the LM's AdamW at lr 1e-3 on its larger matrices).
``lr=1e-8`` gives about 1e-8, so ``TINY_UPDATE`` = 1e-6 leaves more than two decades each side.
"""

from __future__ import annotations

import math

from torchwise.doctor.checks import listing
from torchwise.doctor.checks._dynamics import median, needs_steps
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW133",)
SCRIPT = True
DYNAMICS = True  # needs a run of >= MIN_DYNAMICS_STEPS steps
TINY_UPDATE = 1e-6
COLLAPSED = 1e-6  # a group's lr below this share of its first value: fallen to nothing


def measure(w) -> dict | None:
    rows = [r for r in w.grad_norms if len(r) == len(w.param_names)]
    if not w.moved or not rows:
        return None
    got_grad = [any(r[i] > 0 for r in rows) for i in range(len(w.param_names))]
    rel = []
    still = []
    for i, name in enumerate(w.param_names):
        if not w.requires_grad[i] or not got_grad[i] or not math.isfinite(w.moved[i]):
            continue
        if w.moved[i] == 0.0:
            still.append(i)
        if w.weight_norms[i] > 0:
            rel.append(w.moved[i] / w.weight_norms[i] / max(1, w.steps))
    return {"still": still, "median_relative_update": median(rel) if rel else float("nan"), "watched": len(rel)}


def check(ctx) -> list[Finding] | Skipped:
    skip = needs_steps(ctx, CODES)
    if skip:
        return skip
    w = ctx.watch
    m = measure(w)
    if m is None:
        return Skipped(CODES, "no parameter update was watched")
    findings = []
    if m["still"]:
        names = [w.param_names[i] for i in m["still"]]
        lrs = sorted({w.lrs[i] for i in m["still"] if w.lrs and w.lrs[i] is not None})
        groups = sorted({w.group_of[i] for i in m["still"] if w.group_of[i] is not None})
        why = (f"their param group(s) {groups} have lr {lrs}" if lrs and max(lrs) == 0
               else "no optimizer updates them" if not groups else "the optimizer left them unchanged")
        findings.append(Finding(
            "TW133", "warning",
            f"{len(names)} parameter tensor(s) got gradients but did not change in {w.steps} steps: {why}",
            listing(names),
            {"parameters": names[:50], "count": len(names), "param_groups": groups, "lrs": lrs, "steps": w.steps},
            "give every param group a non-zero lr (check per-group settings and the scheduler), or freeze on purpose with requires_grad_(False)",
        ))
    collapsed = _lr_collapse(w)
    if collapsed:
        findings.append(collapsed)
    rel = m["median_relative_update"]
    if math.isfinite(rel) and rel < TINY_UPDATE and len(m["still"]) < m["watched"]:
        lrs = sorted({v for v in w.lrs if v is not None})
        findings.append(Finding(
            "TW133", "warning",
            f"the weights barely move: median relative change {rel:.2g} per step (healthy runs: 1e-4 to 1e-2); the learning rate is far too small",
            "optimizer lr", {"median_relative_update_per_step": float(f"{rel:.3g}"), "lrs": lrs[:10], "steps": w.steps},
            "raise the learning rate (Adam-family: ~1e-4..3e-3; SGD: ~1e-2..1e-1) or check the scheduler's start factor",
        ))
    return findings


def _lr_collapse(w) -> Finding | None:
    """A param group whose lr fell to nothing early in the run (script mode reads each group's lr at every step)."""
    history = getattr(w, "lr_history", None) or []
    if not history:
        return None
    last_step = history[-1][1]
    start: dict[tuple[int, int], float] = {}
    fell: dict[tuple[int, int], int] = {}
    end: dict[tuple[int, int], float] = {}
    for k, step, lrs in history:
        for g, lr in enumerate(lrs):
            key = (k, g)
            start.setdefault(key, lr)
            end[key] = lr
            if start[key] > 0 and lr <= COLLAPSED * start[key] and key not in fell:
                fell[key] = step
    gone = sorted(key for key, step in fell.items() if step <= 0.8 * last_step and end[key] <= COLLAPSED * start[key])
    if not gone:
        return None
    first = gone[0]
    return Finding(
        "TW133", "warning",
        f"the learning rate of {len(gone)} param group(s) fell to nothing during the run: group {first[1]} of optimizer {first[0] + 1} "
        f"went from {start[first]:.3g} to {end[first]:.3g} by step {fell[first]} of {last_step}; their weights stop moving",
        "optimizer lr",
        {"groups": [list(k) for k in gone[:20]], "lr_start": [start[k] for k in gone[:20]], "lr_end": [end[k] for k in gone[:20]],
         "fell_at_step": [fell[k] for k in gone[:20]], "steps": last_step},
        "check the scheduler or the code that changes group['lr']: is it stepped once per epoch (not per batch), "
        "and does a per-step decay multiply the base lr rather than the current one?",
    )
