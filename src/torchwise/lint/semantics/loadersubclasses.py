"""Calls of a project's own ``DataLoader`` subclass that leaves a setting to its callers (for
TW203 and TW202): ``AudioDataLoader(dataset, batch_size=...)`` of ``class
AudioDataLoader(DataLoader)``, or the project's ``class DataLoader(TorchDataLoader)`` that only
fixes the collate function, imported by the scripts as ``from data import DataLoader``."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile


def loader_subclass_calls(ctx: Context, setting: str = "pin_memory") -> list[ast.Call]:
    """Calls of a ``DataLoader`` subclass whose class body never names ``setting``: a class of
    this file whose base is ``torch.utils.data.DataLoader``, or one another file of the project
    defines as ``class AudioDataLoader(DataLoader):`` (or ``(TorchDataLoader)``, torch's class
    imported under that name) - also a subclass called ``DataLoader`` itself, when the call's
    name comes from a project module rather than from torch."""
    key = ("sem:loader-subclasses", setting)
    found = ctx._cache.get(key)
    if found is not None:
        return found
    found = []
    for name, calls in ctx.calls_by_name.items():
        if "Loader" not in name:  # AudioDataLoader, DataLoaderMaskingPred
            continue
        if name == "DataLoader":  # the project's own class DataLoader(TorchDataLoader), imported from its module
            calls = [c for c in calls if c.func.__class__ is ast.Name and not (ctx.qualname(c.func) or "torch.").startswith("torch.")]
            if calls and _loader_subclass(ctx, name, setting):
                found.extend(calls)
        elif _loader_subclass(ctx, name, setting):
            found.extend(c for c in calls if c.func.__class__ is ast.Name or ctx.qualname(c.func) is None)
    ctx._cache[key] = found
    return found


def _torch_alias(text: str, alias: str) -> bool:
    """``from torch.utils.data import DataLoader as TorchDataLoader`` in ``text``."""
    return re.search(rf"^from[ \t]+torch\.utils\.data(?:\.dataloader)?[ \t]+import[^\n]*\bDataLoader[ \t]+as[ \t]+{re.escape(alias)}\b",
                     text, re.M) is not None


def _loader_subclass(ctx: Context, name: str, setting: str) -> bool:
    if name in ctx.local_classes:
        klass = ctx.local_classes[name]
        return "torch.utils.data.DataLoader" in ctx.local_class_bases(name) and setting not in ctx.text(klass)
    facts = ctx.project
    if not facts.files:
        return False
    key = ("loader-subclass", name, setting)
    if key not in facts.answers:
        pattern = re.compile(rf"^class[ \t]+{re.escape(name)}[ \t]*\((?:[\w.]*\.)?(\w*DataLoader)\)[ \t]*:", re.M)
        answer = False
        for _, text in facts.files:
            m = pattern.search(text) if f"class {name}" in text else None
            if m is not None and m.group(1) != "DataLoader" and not _torch_alias(text, m.group(1)):
                continue  # a base of the project's own (BaseDataLoader), not torch's under another name
            if m is not None:
                end = text.find("\nclass ", m.end())
                answer = setting not in text[m.end():end if end >= 0 else len(text)]
                break
        facts.answers[key] = answer
    return facts.answers[key]


MONAI_LOADERS = ("monai.data.DataLoader", "monai.data.dataloader.DataLoader")
# MONAI transforms that put the data on a device before it is batched (pinning would fail there)
_ON_DEVICE = lazy_compile(r"ToDevice|EnsureType\w*\([^)]*\bdevice\s*=")


def monai_loader_calls(ctx: Context) -> list[ast.Call]:
    """Calls of MONAI's ``DataLoader`` (torch's class, with a worker seed and a list collate;
    ``pin_memory`` off by default as in torch), in a file whose transforms do not move the data
    to a device (``ToDeviced``, ``EnsureTyped(..., device=device)``)."""
    if "monai" not in ctx.source or _ON_DEVICE.search(ctx.source) is not None:
        return []
    return ctx.calls_to(*MONAI_LOADERS)
