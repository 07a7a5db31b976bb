"""New findings only: each problem is alerted once per run, with the step it was first seen at.

A finding is the same problem again when its code and its ``where`` match one already seen (a
window that sees the dead ReLU of the last window does not alert it twice); a finding that comes
back with a higher severity is alerted again. The one-line form is what a user sees on stderr::

    torchwise watch: step 4,200: TW134 warning: the training loss is diverging: ... [training loss] fix: ...
"""

from __future__ import annotations

from typing import Any, Callable

from torchwise.doctor.report import SEVERITIES, Finding

_RANK = {s: i for i, s in enumerate(SEVERITIES)}


def finding_key(code: str, where: str) -> tuple[str, str]:
    return code, where


def alert_line(record: dict[str, Any], prefix: str = "torchwise watch") -> str:
    """One line for a finding record (``step``, ``rank`` when several processes)."""
    rank = record.get("rank")
    tag = f" [rank {rank}]" if rank is not None and record.get("world_size", 1) > 1 else ""
    step = record.get("step")
    at = f"step {step:,}: " if isinstance(step, int) else ""
    fix = f" fix: {record['fix']}" if record.get("fix") else ""
    return f"{prefix}{tag}: {at}{record['code']} {record['severity']}: {record['message']} [{record.get('where', '')}]{fix}"


class Findings:
    """The findings of a run in the order first seen; ``add`` returns the records that are new."""

    def __init__(self, on_new: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.records: list[dict[str, Any]] = []
        self._seen: dict[tuple[str, str], int] = {}
        self.on_new = on_new

    def known(self, record: dict[str, Any]) -> None:
        """A finding of an earlier segment of the run (a resumed log): remembered, not alerted."""
        key = finding_key(record["code"], record.get("where", ""))
        self._seen[key] = min(self._seen.get(key, 99), _RANK.get(record.get("severity", "hint"), 2))
        self.records.append(dict(record, earlier=True))

    def add(self, findings: list[Finding], step: int, **extra: Any) -> list[dict[str, Any]]:
        new = []
        for f in findings:
            key = finding_key(f.code, f.where)
            rank = _RANK[f.severity]
            if key in self._seen and self._seen[key] <= rank:
                continue
            self._seen[key] = rank
            record = {**f.to_dict(), "step": int(step), **extra}
            self.records.append(record)
            new.append(record)
            if self.on_new is not None:
                self.on_new(record)
        return new

    def as_findings(self) -> list[Finding]:
        """The run's findings (latest severity of each problem), with the step first seen in the evidence."""
        best: dict[tuple[str, str], dict[str, Any]] = {}
        for r in self.records:
            key = finding_key(r["code"], r.get("where", ""))
            if key not in best or _RANK[r["severity"]] < _RANK[best[key]["severity"]]:
                best[key] = r
        out = []
        for r in best.values():
            evidence = dict(r.get("evidence") or {})
            evidence.setdefault("first_step", r.get("step"))
            if r.get("rank") is not None and r.get("world_size", 1) > 1:
                evidence.setdefault("rank", r["rank"])
            out.append(Finding(r["code"], r["severity"], r["message"], r.get("where", ""), evidence, r.get("fix", ""), r.get("title", "")))
        return out


__all__ = ["Findings", "alert_line", "finding_key"]
