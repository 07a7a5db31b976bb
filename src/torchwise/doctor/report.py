"""What the doctor hands back: findings (one per problem seen), skipped checks, measurements."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "hint")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}


def practice_title(code: str) -> str:
    """The catalog title of ``code`` ("" when the catalog does not know it)."""
    try:
        from torchwise.catalog import get_practice

        return get_practice(code).title
    except (ImportError, LookupError):
        return ""


@dataclass
class Finding:
    """One problem the doctor measured.

    ``where`` names the spot (module path, parameter names, "loader"...), ``evidence`` holds what
    was measured (numbers, shapes, names), ``fix`` says what to change.
    """

    code: str
    severity: str
    message: str
    where: str
    evidence: dict[str, Any]
    fix: str
    title: str = ""

    def __post_init__(self) -> None:
        if self.severity not in _RANK:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")
        if not self.title:
            self.title = practice_title(self.code)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.code} {self.severity}: {self.message} [{self.where}] fix: {self.fix}"


@dataclass
class Skipped:
    """A check that did not run, and why (e.g. TW207 needs CUDA)."""

    codes: tuple[str, ...]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"codes": list(self.codes), "reason": self.reason}


@dataclass
class DoctorReport:
    """The doctor's result: ``findings`` sorted by severity, ``skipped`` checks, ``measured`` facts.

    ``failure`` holds the error that stopped the steps early (after the findings that explain it
    were collected); ``ok`` is False when there is a failure or an error-severity finding.
    """

    subject: str
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    measured: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None

    def __post_init__(self) -> None:
        self.findings.sort(key=lambda f: (_RANK[f.severity], f.code))

    @property
    def ok(self) -> bool:
        return self.failure is None and not any(f.severity == "error" for f in self.findings)

    @property
    def codes(self) -> list[str]:
        """Codes of the findings, in report order (repeats kept)."""
        return [f.code for f in self.findings]

    def by_code(self, code: str) -> list[Finding]:
        return [f for f in self.findings if f.code == code]

    def to_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "ok": self.ok,
            "failure": self.failure,
            "findings": [f.to_dict() for f in self.findings],
            "skipped": [s.to_dict() for s in self.skipped],
            "measured": self.measured,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def summary_line(self) -> str:
        counts = {s: sum(f.severity == s for f in self.findings) for s in SEVERITIES}
        parts = [f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n]
        head = ", ".join(parts) if parts else "no findings"
        return f"doctor {self.subject}: {head}" + (f"; steps stopped: {self.failure}" if self.failure else "")

    def __str__(self) -> str:
        rows = [(f.code, f.severity, f.where, f.message, f.fix) for f in self.findings]
        lines = [self.summary_line()]
        if rows:
            heads = ("code", "severity", "where", "finding", "fix")
            widths = [max(len(h), *(min(len(r[i]), 40 if i == 2 else 10**6) for r in rows)) for i, h in enumerate(heads[:3])]
            lines.append("  ".join(h.ljust(w) for h, w in zip(heads[:3], widths)) + "  finding / fix")
            for code, sev, where, msg, fix in rows:
                w = where if len(where) <= 40 else where[:37] + "..."
                lines.append(f"{code.ljust(widths[0])}  {sev.ljust(widths[1])}  {w.ljust(widths[2])}  {msg}")
                lines.append(f"{'':{widths[0] + widths[1] + widths[2] + 6}}fix: {fix}")
        if self.measured:
            lines.append("measured: " + ", ".join(f"{k}={v}" for k, v in self.measured.items()))
        for s in self.skipped:
            lines.append(f"skipped {'/'.join(s.codes)}: {s.reason}")
        return "\n".join(lines)
