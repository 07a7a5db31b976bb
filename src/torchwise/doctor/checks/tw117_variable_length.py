"""Variable-length samples that the default collate function cannot batch.

What: a few samples spread over the training dataset are read; when a field (a tensor, an
array, a list of numbers) has different shapes or lengths across samples and the DataLoader
uses the default collate function with batches of more than one sample, batching will fail.
Why: ``default_collate`` stacks samples; with different sizes it raises "stack expects each
tensor to be equal size" or "each element in list of batch should be of equal size", often
only at the first unlucky batch, hours into an epoch.
Example: a text dataset returning token-id tensors of each sentence's own length, batched with
``DataLoader(ds, batch_size=32)``.
Fix: pass a padding collate function: ``collate_fn=torchwise.pad_collate`` (pads and returns the
lengths), or bucket/crop samples to one size.
"""

from __future__ import annotations

from torch.utils.data import default_collate

from torchwise.doctor.report import Finding, Skipped

CODES = ("TW117",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def uses_default_collate(loader) -> bool:
    fn = getattr(loader, "collate_fn", None)
    return fn is default_collate or getattr(fn, "__name__", "") == "default_collate"


def varying_fields(ctx) -> dict[str, dict[tuple, list[int]]]:
    """field path -> {shape: [sample indices]} for fields whose shape varies across samples."""
    seen: dict[str, dict[tuple, list[int]]] = {}
    for index, fields in ctx.sample_fields():
        for path, shape in fields:
            seen.setdefault(path, {}).setdefault(shape, []).append(index)
    return {p: shapes for p, shapes in seen.items() if len(shapes) > 1}


def check(ctx) -> list[Finding] | Skipped:
    if ctx.loader is None:
        return Skipped(CODES, "no DataLoader fed the steps (the script makes its own batches)" if getattr(ctx, "script", False)
                       else "no loader or dataset (only a batch was given)")
    if not ctx.sample_fields():
        return Skipped(CODES, "the dataset cannot be indexed (iterable or unsized)")
    if not uses_default_collate(ctx.loader) or (getattr(ctx.loader, "batch_size", None) or 1) <= 1:
        return []
    varying = varying_fields(ctx)
    if not varying:
        return []
    path, shapes = next(iter(varying.items()))
    shown = {str(list(s)): idx for s, idx in list(shapes.items())[:6]}
    return [Finding(
        "TW117", "error",
        f"{path} varies in shape across samples ({len(shapes)} shapes in {len(ctx.sample_fields())} samples read) and the loader uses default_collate",
        f"loader (dataset {type(ctx.loader.dataset).__name__}, batch_size={ctx.loader.batch_size})",
        {"field": path, "shapes_to_sample_indices": shown, "varying_fields": list(varying), "samples_read": len(ctx.sample_fields())},
        "pass collate_fn=torchwise.pad_collate (pads to the longest and returns lengths), or crop/bucket samples to one size",
    )]
