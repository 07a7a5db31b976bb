"""Run the checks, then report causes rather than their symptoms.

A root cause shows up in several checks at once: gradients that are never cleared make the loss
diverge (TW134); an LR far too high pins the loss (TW135) and kills ReLU units (TW131); a bad
init makes the gradients explode (TW130). A check module that names a cause lists the codes of
the symptoms it explains in ``EXPLAINS``; when one of its findings (warning or error) is in the
report, those symptom findings are folded into it (``evidence["explains"]`` keeps their
messages) instead of standing beside it as rival diagnoses.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from torchwise.doctor.report import Finding, Skipped

__all__ = ["run_checks", "fold_symptoms"]


def run_checks(ctx: Any, checks: list[ModuleType]) -> tuple[list[Finding], list[Skipped]]:
    """Every check's findings (symptoms folded into their causes) and the checks skipped."""
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    causes: list[tuple[Finding, tuple[str, ...]]] = []
    for c in checks:
        try:
            out = c.check(ctx)
        except Exception as exc:  # a broken check must not hide the others
            out = Skipped(tuple(c.CODES), f"the check itself failed: {type(exc).__name__}: {exc}")
        if isinstance(out, Skipped):
            skipped.append(out)
        elif out:
            findings.extend(out)
            explained = tuple(getattr(c, "EXPLAINS", ()))
            causes.extend((f, explained) for f in out if explained and f.severity != "hint")
    return fold_symptoms(findings, causes), skipped


def fold_symptoms(findings: list[Finding], causes: list[tuple[Finding, tuple[str, ...]]]) -> list[Finding]:
    """``findings`` without the symptoms some cause explains; each cause lists those it took in."""
    if not causes:
        return findings
    folded: set[int] = set()
    explains = {id(c): codes for c, codes in causes}
    for cause, codes in causes:
        for f in findings:
            # a cause may fold in another cause it explains (gradients never cleared -> a learning
            # rate that looks far too high), never one that explains it back
            if f is not cause and f.code in codes and f.code != cause.code and cause.code not in explains.get(id(f), ()) \
                    and id(cause) not in folded:
                cause.evidence.setdefault("explains", []).append(f"{f.code}: {f.message}")
                folded.add(id(f))
    return [f for f in findings if id(f) not in folded]
