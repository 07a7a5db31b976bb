"""Regular expressions compiled on first use.

Most of lint's module-level patterns serve one rule or one project scan that a given run may
never reach (a pre-commit run on a few files), and compiling them all at import cost more than
the linting. :func:`lazy_compile` takes ``re.compile``'s arguments and returns an object that
compiles on its first attribute access, then keeps the pattern's methods as its own attributes,
so later calls (``_WORD.search(text)``) cost what they cost on the compiled pattern.
"""

from __future__ import annotations

import re

_FORWARDED = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner",
              "pattern", "flags", "groups", "groupindex")


class LazyPattern:
    """A ``re.Pattern`` stand-in that compiles on first use (pass it only to its own methods)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str):
        compiled = re.compile(*self._source)
        for attr in _FORWARDED:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._source[0]!r}, {self._source[1]!r})"


def lazy_compile(pattern: str, flags: int = 0) -> LazyPattern:
    """``re.compile(pattern, flags)``, done when the pattern is first used."""
    return LazyPattern(pattern, flags)
