"""Lint one source text: decode, parse, run the selected rules, honour ``# noqa``, apply fixes."""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass
from typing import Iterable

from torchwise.core.errors import UsageError
from torchwise.lint.engine import Context, legacy
from torchwise.lint.engine.fixes import apply_fixes
from torchwise.lint.facts import ProjectFacts
from torchwise.lint.findings import SYNTAX_CODE, Finding
from torchwise.lint.semantics.projectcode import shared_context
from torchwise.lint.semantics.savefacts import note_linted
from torchwise.lint.semantics.files import is_test_path
from torchwise.lint.semantics.handedimports import hand_on_imports
from torchwise.lint.semantics.neverruns import never_runs_at

_RULES: list | None = None


def rules() -> list:
    """Every rule object, in code order (imported once per process)."""
    global _RULES
    if _RULES is None:
        from torchwise.lint.rules import all_rules

        _RULES = all_rules()
    return _RULES


def known_codes() -> list[str]:
    return [SYNTAX_CODE] + [r.code for r in rules()]


def _expand(selectors: Iterable[str] | str | None, what: str, strict: bool) -> set[str]:
    if selectors is None:
        return set()
    if isinstance(selectors, str):
        selectors = [selectors]
    codes = known_codes()
    out: set[str] = set()
    for selector in selectors:
        for part in str(selector).split(","):
            key = part.strip().upper()
            if not key:
                continue
            if key == "ALL":
                out.update(codes)
                continue
            matched = [c for c in codes if c.startswith(key)]
            if not matched and strict:
                raise UsageError(_unknown_selector(key, what))
            out.update(matched)
    return out


def _unknown_selector(key: str, what: str) -> str:
    try:
        from torchwise.catalog import PRACTICES

        if key in PRACTICES:
            return (
                f"{what} {key!r}: {key} has no static check (it is a run-time or tuning practice; "
                f"see 'torchwise rule {key}'); lint codes are {', '.join(c for c in known_codes() if c != SYNTAX_CODE)}"
            )
    except Exception:
        pass
    import difflib

    near = difflib.get_close_matches(key, known_codes(), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    return f"unknown {what} {key!r}: expected a code like TW201 or a prefix like TW2{hint}"


def resolve_codes(select: Iterable[str] | str | None = None, ignore: Iterable[str] | str | None = None) -> frozenset[str]:
    """The enabled codes: ``select`` (default all) minus ``ignore``; both take codes or prefixes.

    The syntax/decode finding ``TW000`` is always on unless ignored explicitly.
    """
    chosen = _expand(select, "--select code", strict=True) if select else set(known_codes())
    chosen.add(SYNTAX_CODE)
    chosen -= _expand(ignore, "--ignore code", strict=False)
    return frozenset(chosen)


@dataclass
class Decoded:
    text: str | None
    encoding: str
    problem: str | None = None


def decode(data: bytes) -> Decoded:
    """Decode a file's bytes the way Python does (BOM, coding cookie, default UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (SyntaxError, LookupError) as exc:
        return Decoded(None, "utf-8", f"cannot decode the file: {_one_line(exc)}")
    try:
        return Decoded(data.decode(encoding), encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        return Decoded(None, encoding, f"cannot decode the file as {encoding}: {_one_line(exc)}")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else exc.__class__.__name__


def _problem(path: str, message: str, line: int = 1, col: int = 1) -> Finding:
    return Finding(path, max(1, line), max(1, col), SYNTAX_CODE, message, max(1, line), max(1, col) + 1)


def check_source(source: str | bytes, path: str = "<stdin>", codes: frozenset[str] | None = None) -> list[Finding]:
    """Findings for one source text (str, or bytes decoded like Python would), sorted by position."""
    if codes is None:
        codes = resolve_codes()
    if isinstance(source, (bytes, bytearray)):
        decoded = decode(bytes(source))
        if decoded.text is None:
            return [_problem(path, decoded.problem or "cannot decode")] if SYNTAX_CODE in codes else []
        source = decoded.text
    if source.startswith("\ufeff"):  # a byte-order mark in text: Python ignores it in files
        source = source[1:]
    findings, _ = _check(source, path, codes)
    return findings


def _check(source: str, path: str, codes: frozenset[str], project: ProjectFacts | None = None) -> tuple[list[Finding], Context | None]:
    ctx = shared_context(project, path, source)
    if ctx is None:
        ctx_or_problems = _parse(source, path, codes, project)
        if not isinstance(ctx_or_problems, Context):
            return ctx_or_problems, None
        ctx = ctx_or_problems
        if "TW402" in codes:
            note_linted(project, ctx)  # what the file saves, for TW402's project facts
    hand_on_imports(ctx)  # torch names handed on by the project's modules (`from network import *`)
    out: list[Finding] = []
    in_tests = is_test_path(path, source)
    for rule in rules():
        if rule.code not in codes or not rule.applies_to(source):
            continue
        if in_tests and rule.skip_tests:
            continue
        try:
            for finding in rule.check(ctx):
                if not ctx.suppressed(finding) and not (rule.per_call and never_runs_at(ctx, finding.line)):
                    out.append(finding)  # a per-call rule says nothing where the code never runs (R5)
        except RecursionError:
            if SYNTAX_CODE in codes:
                out.append(_problem(path, f"rule {rule.code} gave up: nesting too deep"))
        except Exception as exc:  # a rule bug must not stop the run; report it honestly
            if SYNTAX_CODE in codes:
                out.append(_problem(path, f"internal error in rule {rule.code} ({exc.__class__.__name__}: {_one_line(exc)}); please report it"))
    out = _dedupe(out)
    out.sort(key=Finding.sort_key)
    return out, ctx


def _parse(source: str, path: str, codes: frozenset[str], project: ProjectFacts | None) -> Context | list[Finding]:
    """The file's Context, or the findings that say why it could not be checked."""
    try:
        tree = legacy.parse(source, path)
    except SyntaxError as exc:
        if SYNTAX_CODE not in codes:
            return []
        kind = "indentation error" if isinstance(exc, IndentationError) else "syntax error"
        msg = exc.msg if getattr(exc, "msg", None) else _one_line(exc)
        return [_problem(path, f"{kind}: {msg}; the file was not checked", exc.lineno or 1, exc.offset or 1)]
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        if SYNTAX_CODE not in codes:
            return []
        return [_problem(path, f"cannot parse the file: {_one_line(exc)}; it was not checked")]
    try:
        return Context(source, path, tree, project)
    except RecursionError:
        return [_problem(path, "cannot analyse the file: nesting too deep; it was not checked")] if SYNTAX_CODE in codes else []


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple] = set()
    out = []
    for f in findings:
        key = (f.code, f.line, f.col, f.end_line, f.end_col)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def fix_source(source: str, path: str = "<stdin>", codes: frozenset[str] | None = None, max_rounds: int = 8,
               unsafe: bool = False, project: ProjectFacts | None = None) -> tuple[str, list[Finding], int]:
    """Apply safe fixes (with ``unsafe``, also those that may change behaviour) until none is
    left; returns (new text, remaining findings, fixes applied)."""
    if codes is None:
        codes = resolve_codes()
    bom = "\ufeff" if source.startswith("\ufeff") else ""
    current = source[len(bom):]
    applied = 0
    findings, _ = _check(current, path, codes, project)
    for _ in range(max_rounds):
        fixes = [f.fix for f in findings if f.fix is not None and (f.fix.safe or unsafe)]
        if not fixes:
            break
        new, n = apply_fixes(current, fixes)
        if n == 0 or new == current:
            break
        current, applied = new, applied + n
        findings, _ = _check(current, path, codes, project)
    return bom + current, findings, applied
