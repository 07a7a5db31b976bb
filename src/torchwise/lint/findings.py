"""What the linter reports: findings, and fixes made of edits on exact source ranges."""

from __future__ import annotations

from dataclasses import dataclass, field

SYNTAX_CODE = "TW000"  # a file that cannot be decoded or parsed (or a rule that failed on it)


@dataclass(frozen=True)
class Edit:
    """Replace ``source[start:end]`` (character offsets into the file's text) by ``text``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Fix:
    """A safe, behaviour-preserving change: one or more non-overlapping edits applied together."""

    description: str
    edits: tuple[Edit, ...]


@dataclass
class Finding:
    """One problem at one place. Lines and columns are 1-based; ``end_col`` is exclusive."""

    path: str
    line: int
    col: int
    code: str
    message: str
    end_line: int = 0
    end_col: int = 0
    suggestion: str | None = None
    fix: Fix | None = field(default=None, compare=False)
    # lines where a ``# noqa`` comment suppresses it (its own line, the end of its statement)
    noqa_lines: tuple[int, ...] = field(default=(), repr=False, compare=False)

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.code, self.message)

    def format(self) -> str:
        """``path:line:col: CODE message`` (the flake8/ruff convention)."""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"

    def to_dict(self) -> dict:
        out = {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line or self.line,
            "end_col": self.end_col or self.col,
            "code": self.code,
            "message": self.message,
            "fixable": self.fixable,
            "suggestion": self.suggestion,
        }
        if self.fix is not None:
            out["fix"] = {
                "description": self.fix.description,
                "edits": [{"start": e.start, "end": e.end, "text": e.text} for e in self.fix.edits],
            }
        return out
