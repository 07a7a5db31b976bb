"""Project facts about the checkpoints a project writes: whether every ``torch.save`` in it
saves data already on the host (``.cpu()``, NumPy), so that loading them back cannot put
tensors on a GPU."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.hostreads import saved_keys, saves_on_host


def host_checkpoints(texts: list[tuple[str, str]]) -> tuple[bool, frozenset[str], frozenset[str]]:
    """Does the project save checkpoints, all of them host data? And the keys of the dicts it
    saves: those holding host data, those that may hold device tensors."""
    every, seen = True, False
    host: set[str] = set()
    device: set[str] = set()
    for path, text in texts:
        if "torch.save(" not in text:
            continue
        try:
            ctx = Context(text, path, ast.parse(text, filename=path))
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            continue
        verdict = saves_on_host(ctx)
        every = every and verdict is not False
        seen = seen or verdict is True
        h, d = saved_keys(ctx)
        host |= h
        device |= d
    return every and seen, frozenset(host), frozenset(device)
