"""Training data not shuffled: consecutive batches dominated by one class, or sorted targets.

What: two sources. (1) The training loader, when it draws samples in order (a
``SequentialSampler``: ``shuffle=False``) and the dataset's labels are cheap to read (a
``TensorDataset``, ``.targets``; see dataset_targets.py): its first ``MAX_BATCHES`` batches are
composed from those labels without running anything. (2) Script mode: the class targets each
step's first classification loss received (whatever produced the batches, a DataLoader or
slicing by hand), and for regression the mean and spread of each batch's targets.
Classification: reported when the median share of a batch taken by its most common class is at
least ``MIN_MAJORITY``, exceeds the largest class's share overall by ``MIN_EXCESS`` (an
imbalanced but shuffled dataset has batches like its whole), and at least two classes take turns
as the majority. Regression: reported when the batch means rise or fall with the step (rank
correlation at least ``MIN_TREND`` over at least ``MIN_BATCHES`` batches) while the batches'
own spread is below ``MAX_SPREAD`` of the spread of all targets seen.
Why: the model sees one class (or one range of targets) for many steps and follows it: the loss
swings at each change of class, the last classes seen dominate, and it learns far less than the
same steps on shuffled data. Reported as a symptom it looks like a learning rate too high.
Example: ``DataLoader(TensorDataset(x, y_sorted), batch_size=64)`` with data sorted by label.
Fix: ``DataLoader(..., shuffle=True)`` (or a ``RandomSampler``; ``DistributedSampler(shuffle=True)``
plus ``set_epoch`` under DDP); for data sliced by hand, index with ``torch.randperm`` each epoch.
Measured (2026-11-25): shuffled batches of 64-100 from 10 balanced classes (pytorch/examples
mnist, yunjey's feedforward/CNN/LSTM on synthetic MNIST, 200 batches each) have a median majority
share of 0.14-0.16, 0.04-0.05 above the largest class share; digits relabelled 90% one class,
in random order, batches of 32: 0.91, 0.005 above; labels sorted: 1.0, 0.5-0.9 above. Regression
(the realistic MLP's targets, batches of 32): shuffled, rank correlation of the batch means with
the step -0.22 and each batch spanning 99% of the spread; sorted, 1.0 and 3%.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchwise.doctor.frames import median
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW141",)
SCRIPT = True
EXPLAINS = ("TW134", "TW135", "TW136", "TW140")  # a swinging or stuck loss, weights thrown about; a loss that collapses within each class block
MIN_MAJORITY = 0.6
MIN_EXCESS = 0.3
MIN_TREND = 0.95
MIN_BATCHES = 20
MAX_SPREAD = 0.3
MAX_BATCHES = 200
FIX = "shuffle the training data: DataLoader(..., shuffle=True) (DistributedSampler(shuffle=True) with set_epoch under DDP; " \
      "for batches sliced by hand, index with torch.randperm every epoch)"


def check(ctx) -> list[Finding] | Skipped:
    from torch.utils.data import SequentialSampler

    found = _from_loader(ctx)
    if found:
        return [found]
    order = getattr(getattr(ctx, "watch", None), "batch_order", None)
    sampler = getattr(getattr(ctx, "loader", None), "sampler", None)
    if not getattr(ctx, "script", False) and sampler is not None and not isinstance(sampler, SequentialSampler):
        return []  # the loader draws its samples in random order
    if order is None or not order.batches:
        return Skipped(CODES, "no batch of class or regression targets was seen" if getattr(ctx, "script", False)
                       else "the loader's order and labels cannot be read without loading samples")
    finding = _classes(order.batches, order.class_counts, "the batches the steps trained on") if order.kind == "classes" \
        else _regression(order.batches)
    return [finding] if finding else []


def _from_loader(ctx: Any) -> Finding | None:
    from torch.utils.data import SequentialSampler

    from torchwise.doctor.dataset_targets import cheap_targets

    loader = getattr(ctx, "loader", None)
    size = getattr(loader, "batch_size", None)
    if loader is None or not isinstance(getattr(loader, "sampler", None), SequentialSampler) or not size or size < 8:
        return None
    labels = cheap_targets(loader.dataset)
    if labels is None or labels.numel() < 2 * size or int(labels.max() - labels.min()) > 100_000:
        return None
    batches = labels[: size * min(MAX_BATCHES, labels.numel() // size)].reshape(-1, size)
    rows = []
    for b in batches:
        counts = torch.bincount(b - b.min())
        rows.append((float(counts.max()) / size, float(counts.argmax() + b.min())))
    counts = torch.bincount(labels - labels.min()).tolist()
    finding = _classes(rows, counts, f"the training loader (shuffle=False, batch_size={size}) over its dataset's labels")
    if finding is not None:
        finding.evidence["sampler"] = "SequentialSampler"
    return finding


def _classes(rows: list[tuple[float, float]], counts: list[int], source: str) -> Finding | None:
    if len(rows) < 3 or not counts or sum(counts) == 0:
        return None
    shares = [s for s, _ in rows]
    majority = median(shares)
    largest = max(counts) / sum(counts)
    turns = len({int(c) for _, c in rows})
    if majority < MIN_MAJORITY or majority - largest < MIN_EXCESS or turns < 2:
        return None
    return Finding(
        "TW141", "warning",
        f"the training data is not shuffled: in the median batch {majority:.0%} of the samples share one class "
        f"(the largest class is {largest:.0%} of the data), and {turns} classes take turns as the majority over {len(rows)} batches",
        source,
        {"median_majority_share": round(majority, 3), "largest_class_share": round(largest, 3), "majority_classes": turns,
         "batches": len(rows), "first_majorities": [int(c) for _, c in rows[:12]]},
        FIX,
    )


def _regression(rows: list[tuple[float, float]]) -> Finding | None:
    means = [m for m, _ in rows]
    if len(means) < MIN_BATCHES or not all(math.isfinite(m) for m in means):
        return None
    trend = _rank_correlation(means)
    spread = _std(means)
    within = median([s for _, s in rows])
    total = math.sqrt(max(0.0, within ** 2 + spread ** 2))
    if abs(trend) < MIN_TREND or total <= 0 or within / total > MAX_SPREAD:
        return None
    return Finding(
        "TW141", "warning",
        f"the training data is not shuffled: the batches' mean target {'rises' if trend > 0 else 'falls'} step after step "
        f"(rank correlation {trend:.2f} over {len(means)} batches) while each batch spans only {within / total:.0%} of the targets' spread",
        "the batches the steps trained on",
        {"rank_correlation": round(trend, 3), "batches": len(means), "within_batch_spread_share": round(within / total, 3)},
        FIX,
    )


def _rank_correlation(values: list[float]) -> float:
    n = len(values)
    ranks = [0.0] * n
    for r, i in enumerate(sorted(range(n), key=values.__getitem__)):
        ranks[i] = float(r)
    mean = (n - 1) / 2
    cov = sum((i - mean) * (r - mean) for i, r in enumerate(ranks))
    var = sum((i - mean) ** 2 for i in range(n))
    return cov / var if var else 0.0


def _std(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1))
