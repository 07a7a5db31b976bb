"""The two kinds of recall-corpus entries (see ``recall_corpus.py``)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field


def d(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


@dataclass(frozen=True)
class Shape:
    """One file. ``line``: where the finding must start (None for a look-alike that must stay quiet)."""

    code: str
    seen: str  # the kind of code this shape comes from
    source: str
    line: int | None = None
    path: str = "train.py"


@dataclass(frozen=True)
class ProjectShape:
    """Several files linted as one project; ``expect``: ``(path, line)`` of every finding of ``code``
    (empty for a look-alike that must stay quiet)."""

    code: str
    seen: str
    files: dict[str, str]
    expect: tuple[tuple[str, int], ...] = field(default=())
