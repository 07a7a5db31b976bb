"""A model class that saves and restores itself: ``def save(self): torch.save(self.state_dict(), p)``
beside ``def load(self, path): self.load_state_dict(torch.load(path))``.

The tutorial ``BasicModule`` pattern: every model of the project inherits both helpers, and the
scripts move the model to the device they choose (``model.to(opt.device)``). What ``save`` writes
holds the tensors of the device the model trained on, so ``load`` restores them there - on a
CPU run of a GPU-trained model it fails. The module itself names no device, which is why the
helper needs this link (the class's own save) to tell it from a loader of shipped weights.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, argument, last_name


def restores_own_class_save(ctx: Context, load: ast.Call) -> bool:
    """``self.load_state_dict(torch.load(path))`` in a method of a class one of whose methods
    saves ``self.state_dict()`` with ``torch.save``."""
    parent = ctx.parent(load)
    if parent.__class__ is not ast.Call or last_name(parent.func) != "load_state_dict" or not parent.args \
            or parent.args[0] is not load or parent.func.__class__ is not ast.Attribute \
            or parent.func.value.__class__ is not ast.Name or parent.func.value.id != "self":
        return False
    klass = ctx.class_of(load)
    if klass is None or "self.state_dict()" not in ctx.text(klass):
        return False
    for save in ctx.calls_to("torch.save"):
        obj = argument(save, "obj", 0)
        if ctx.class_of(save) is klass and obj is not None and ctx.text(obj) == "self.state_dict()":
            return True
    return False


__all__ = ["restores_own_class_save"]
