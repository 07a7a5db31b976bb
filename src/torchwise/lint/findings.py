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
    """A change made of one or more non-overlapping edits applied together.

    ``safe`` fixes provably keep the program's meaning and ``--fix`` applies them; an unsafe one
    (``safe=False``) may change behaviour, says why in ``why_unsafe``, and is applied only with
    ``--unsafe-fixes`` (the split ruff uses).
    """

    description: str
    edits: tuple[Edit, ...]
    safe: bool = True
    why_unsafe: str = ""


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
        """A safe fix is available (``--fix`` applies it)."""
        return self.fix is not None and self.fix.safe

    @property
    def unsafe_fixable(self) -> bool:
        """Only a fix that may change behaviour is available (``--unsafe-fixes`` applies it)."""
        return self.fix is not None and not self.fix.safe

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
            "unsafe_fix": self.unsafe_fixable,
            "suggestion": self.suggestion,
        }
        if self.fix is not None:
            out["fix"] = {
                "description": self.fix.description,
                "safe": self.fix.safe,
                "why_unsafe": self.fix.why_unsafe,
                "edits": [{"start": e.start, "end": e.end, "text": e.text} for e in self.fix.edits],
            }
        return out
