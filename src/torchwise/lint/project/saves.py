"""Project facts about the checkpoints a project writes: whether every ``torch.save`` in it
saves data already on the host (``.cpu()``, NumPy), so that loading them back cannot put
tensors on a GPU."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.hostreads import saves_on_host


def host_checkpoints(texts: list[tuple[str, str]]) -> bool:
    """Does the project save checkpoints, all of them host data?"""
    seen = False
    for path, text in texts:
        if "torch.save(" not in text:
            continue
        try:
            ctx = Context(text, path, ast.parse(text, filename=path))
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            continue
        verdict = saves_on_host(ctx)
        if verdict is False:
            return False
        seen = seen or verdict is True
    return seen
