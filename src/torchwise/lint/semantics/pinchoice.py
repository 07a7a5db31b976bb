"""``pin_memory`` tied to a choice that is not the device (for TW203): ``pin_memory =
(args.dataset == "imagenet")`` pins the batches of one dataset only, while every dataset's
batches go to the GPU."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

_DEVICE_WORDS = ("cuda", "gpu", "device", "cpu", "accel", "pin", "xla", "tpu", "mps")


def pinned_for_one_choice(ctx: Context, pin: AST | None, use: AST) -> AST | None:
    """The test behind ``pin_memory=<name>`` (or written in place) when it compares an option
    that does not name the device with strings (``args.dataset == "imagenet"``, ``cfg.data in
    ("imagenet", "places")``): the comparison, else None. A device test (``args.device ==
    "cuda"``, ``use_gpu``) is the usual idiom and is left alone."""
    if pin is None:
        return None
    if pin.__class__ is ast.Name:
        b = ctx.binding_at(pin.id, use)
        if b is None or b.kind != "assign" or b.value is None:
            return None
        pin = b.value
    if pin.__class__ is not ast.Compare or len(pin.ops) != 1 or pin.ops[0].__class__ not in (ast.Eq, ast.In):
        return None
    subject, other = pin.left, pin.comparators[0]
    if subject.__class__ not in (ast.Attribute, ast.Name, ast.Subscript):
        return None
    values = other.elts if other.__class__ in (ast.Tuple, ast.List, ast.Set) else [other]
    if not values or not all(v.__class__ is ast.Constant and isinstance(v.value, str) for v in values):
        return None
    text = (ctx.text(subject) + " " + " ".join(v.value for v in values)).lower()
    return None if any(w in text for w in _DEVICE_WORDS) else pin
