"""``# noqa`` comments: which codes each line suppresses, and which lines a finding may be
suppressed on (its own lines and the end of its statement's header)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Callable

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.engine.nodes import AST

_NOQA = lazy_compile(r"#\s*noqa(?P<sep>\s*:\s*(?P<codes>[A-Za-z]+[0-9]*(?:[\s,]+[A-Za-z]+[0-9]*)*))?", re.I)


def noqa_table(source: str, line_count: int, line_text: Callable[[int], str]) -> dict[int, frozenset[str]]:
    """Line -> the codes its ``# noqa`` comment suppresses (an empty set: a bare ``# noqa``, all)."""
    table: dict[int, frozenset[str]] = {}
    if "noqa" not in source.lower():
        return table
    comments: list[tuple[int, str]] = []
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        for tok in tokens:
            if tok.type == tokenize.COMMENT:
                comments.append((tok.start[0], tok.string))
    except (tokenize.TokenError, SyntaxError, ValueError, IndentationError):
        comments = [(i, line_text(i)) for i in range(1, line_count)]
    for line, comment in comments:
        m = _NOQA.search(comment)
        if m is None:
            continue
        codes = m.group("codes")
        if codes:
            table[line] = frozenset(c.upper() for c in re.split(r"[\s,]+", codes) if c)
        elif m.group("sep"):
            continue  # "# noqa:" followed by nothing we understand: not a blanket noqa
        else:
            table[line] = frozenset()
    return table


def header_end(stmt: ast.stmt) -> int:
    """Last line of a statement's header: the whole simple statement, or up to the colon of a
    compound one (``for x in (...):`` spanning lines)."""
    if not hasattr(stmt, "body"):
        return stmt.end_lineno or stmt.lineno
    parts: list[AST] = []
    for name in ("test", "iter", "target", "items", "args", "returns", "bases", "keywords", "subject"):
        value = getattr(stmt, name, None)
        if isinstance(value, list):
            parts.extend(v for v in value if isinstance(v, AST))
        elif isinstance(value, AST):
            parts.append(value)
    ends = [getattr(p, "end_lineno", None) or getattr(getattr(p, "optional_vars", None) or getattr(p, "context_expr", None), "end_lineno", None) for p in parts]
    ends = [e for e in ends if e]
    return max(ends) if ends else stmt.lineno

