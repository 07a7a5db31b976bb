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
    pin = _flag_test(pin)
    if pin.__class__ is not ast.Compare or len(pin.ops) != 1 or pin.ops[0].__class__ not in (ast.Eq, ast.In):
        return None
    subject, other = pin.left, pin.comparators[0]
    if subject.__class__ not in (ast.Attribute, ast.Name, ast.Subscript):
        return None
    values = other.elts if other.__class__ in (ast.Tuple, ast.List, ast.Set) else [other]
    if not values or not all(v.__class__ is ast.Constant and isinstance(v.value, str) for v in values):
        return None
    text = (ctx.text(subject) + " " + " ".join(v.value for v in values)).lower()
    if any(w in text for w in _DEVICE_WORDS):
        return None
    comp = next((a for a in ctx.ancestors(use) if a.__class__ is ast.DictComp), None)
    keys = _constant_keys(comp) if comp is not None and subject.__class__ is ast.Name else None
    if keys is not None and comp.generators[0].target.__class__ is ast.Name and comp.generators[0].target.id == subject.id \
            and all(keyed_pin(ctx, comp, k) for k in keys):
        return None  # {x: DataLoader(..., pin_memory=(x == 'train')) for x in ['train']}: every loader pinned
    return pin


def _constant_keys(comp: AST) -> list[str] | None:
    """The strings a dict comprehension's one loop walks (``for x in ['train', 'val']``); else None."""
    it = comp.generators[0].iter if len(comp.generators) == 1 else None
    if it.__class__ not in (ast.List, ast.Tuple, ast.Set):
        return None
    keys = [e.value for e in it.elts if e.__class__ is ast.Constant and isinstance(e.value, str)]
    return keys if len(keys) == len(it.elts) else None


def _flag_test(pin: AST) -> AST:
    """``True if <test> else False`` written for ``<test>``: the test (``pin_memory=(True if x ==
    'train' else False)``); ``False if <test> else True`` is not unwrapped. Anything else as it is."""
    if pin.__class__ is ast.IfExp and pin.body.__class__ is ast.Constant and pin.orelse.__class__ is ast.Constant \
            and pin.body.value is True and pin.orelse.value is False:
        return pin.test
    return pin


def keyed_pin(ctx: Context, comp: AST, key: object) -> bool | None:
    """For loaders built in a dict comprehension whose ``pin_memory`` depends on the key
    (``{x: DataLoader(..., pin_memory=(True if x == 'train' else False)) for x in ['train',
    'val']}``): whether the loader stored under the constant ``key`` is pinned. None when the
    pin does not test the comprehension's key against strings."""
    if comp.__class__ is not ast.DictComp or len(comp.generators) != 1 or comp.value.__class__ is not ast.Call:
        return None
    target = comp.generators[0].target
    if target.__class__ is not ast.Name or comp.key.__class__ is not ast.Name or comp.key.id != target.id:
        return None
    pin = next((k.value for k in comp.value.keywords if k.arg == "pin_memory"), None)
    test = _flag_test(pin) if pin is not None else None
    if test.__class__ is not ast.Compare or len(test.ops) != 1 or test.left.__class__ is not ast.Name or test.left.id != target.id:
        return None
    other = test.comparators[0]
    values = other.elts if other.__class__ in (ast.Tuple, ast.List, ast.Set) else [other]
    if not all(v.__class__ is ast.Constant and isinstance(v.value, str) for v in values):
        return None
    op = test.ops[0].__class__
    if op in (ast.Eq, ast.NotEq) and len(values) == 1:
        return (key == values[0].value) is (op is ast.Eq)
    if op in (ast.In, ast.NotIn) and other is not values[0]:
        return (key in [v.value for v in values]) is (op is ast.In)
    return None
