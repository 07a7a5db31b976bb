"""Device tensors a module of the project makes at import time (TW207): ``std =
torch.tensor(cifar10_std).view(3, 1, 1).cuda()`` at the top of ``utils.py``, imported by name
(``from utils import std``) into a training script, where ``epsilon = (args.epsilon / 255.) / std``
and ``epsilon[j][0][0].item()`` is then a read of a CUDA tensor. A text test of the importing
module's file: a module-level assignment of that name that ends in ``.cuda()`` or a
``.to(...)`` of a device."""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import Context


def imported_device_tensor(ctx: Context, name: str, node: ast.ImportFrom) -> bool:
    """Is ``name``, imported by ``node`` from a module of the project, a tensor that module puts on
    the device at import time?"""
    if not node.module or not ctx.project.files:
        return False
    stem = node.module.rsplit(".", 1)[-1]
    original = next((a.name for a in node.names if (a.asname or a.name) == name), name)
    key = ("sem:imported-device", stem, original)
    found = ctx.project.answers.get(key)
    if found is None:
        line = re.compile(rf"^{re.escape(original)}[ \t]*=[^\n]*\.(?:cuda\(\)|to\([^\n]*(?:device|cuda)[^\n]*\))[ \t]*$", re.M)
        found = any(os.path.splitext(os.path.basename(p))[0] == stem and line.search(t) for p, t in ctx.project.files)
        ctx.project.answers[key] = found
    return found
