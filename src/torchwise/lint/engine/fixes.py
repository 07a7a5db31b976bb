"""Applying fixes: non-overlapping edits, dropped one by one when the result would not parse."""

from __future__ import annotations

import ast
from typing import Iterable

from torchwise.lint.findings import Edit, Fix


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.start == a.end and b.start == b.end:
        return a.start == b.start
    return a.start < b.end and b.start < a.end or a.start == b.start


def apply_fixes(source: str, fixes: Iterable[Fix]) -> tuple[str, int]:
    """Apply every fix whose edits do not overlap an earlier one; returns (text, fixes applied).

    A fix whose result does not parse is dropped (the others are kept). Several findings may
    share one fix (one edit renames every ``async=`` of a file): each counts as fixed.
    """
    accepted: list[Fix] = []
    shared: dict[Fix, int] = {}
    taken: list[Edit] = []
    for fix in sorted(fixes, key=lambda f: min(e.start for e in f.edits)):
        if fix in shared:
            shared[fix] += 1
            continue
        if any(_overlaps(e, t) for e in fix.edits for t in taken):
            continue
        accepted.append(fix)
        shared[fix] = 1
        taken.extend(fix.edits)
    if not accepted:
        return source, 0
    new = _apply_edits(source, taken)
    if _parses(new):
        return new, sum(shared[f] for f in accepted)
    # one of them broke the syntax: apply them one at a time, keeping those that parse
    current, count = source, 0
    for fix in sorted(accepted, key=lambda f: -max(e.end for e in f.edits)):
        candidate = _apply_edits(current, list(fix.edits))
        if _parses(candidate):
            current, count = candidate, count + shared[fix]
    return current, count


def _apply_edits(source: str, edits: list[Edit]) -> str:
    out = source
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        out = out[: e.start] + e.text + out[e.end :]
    return out


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
