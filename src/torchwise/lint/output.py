"""Report formats: text, json, sarif (2.1.0) and github (workflow annotations)."""

from __future__ import annotations

import json
from typing import Sequence

from torchwise.lint.findings import SYNTAX_CODE, Finding

FORMATS = ("text", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/torchwise/torchwise"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("torchwise")
    except Exception:
        return "0+unknown"


def format_text(findings: Sequence[Finding], show_suggestions: bool = True, after_fixes: str | None = None) -> str:
    """``path:line:col: CODE message`` per finding (``help:`` lines below), then a summary."""
    lines = []
    for f in findings:
        marker = " [*]" if f.fixable else (" [unsafe fix]" if f.unsafe_fixable else "")
        lines.append(f.format() + marker)
        if show_suggestions and f.suggestion and not f.fixable:
            lines.append(f"    help: {f.suggestion}")
        if f.unsafe_fixable and f.fix is not None:
            lines.append(f"    unsafe fix ({f.fix.description}; apply with --unsafe-fixes): {f.fix.why_unsafe}")
    lines.append(summary(findings, after_fixes))
    return "\n".join(lines) + "\n"


def summary(findings: Sequence[Finding], after_fixes: str | None = None) -> str:
    """One line counting ``findings``. ``after_fixes``: ``"applied"`` when they are what is left
    after ``--fix``, ``"shown"`` when they are what would be left after the fixes ``--diff``
    shows; the line then says so, so that it cannot be read as a count of the fixes."""
    n = len(findings)
    files = len({f.path for f in findings})
    counted = f"{n} finding{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''}"
    if after_fixes == "applied":
        text = f"{counted} left after the fixes" if n else "No findings left after the fixes"
    elif after_fixes == "shown":
        text = f"{counted} would be left after them" if n else "no findings would be left after them"
    elif not n:
        return "No findings."
    else:
        text = f"Found {counted}"
    fixable = sum(1 for f in findings if f.fixable)
    unsafe = sum(1 for f in findings if f.unsafe_fixable)
    if fixable:
        text += f" ({fixable} fixable with --fix; marked [*])"
    if unsafe:
        text += f" ({unsafe} {'more ' if fixable else ''}with --unsafe-fixes, which may change behaviour)"
    return text + "."


def format_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.to_dict() for f in findings], indent=2) + "\n"


def _rule_table() -> dict[str, tuple[str, str, str]]:
    """code -> (name, short description, full help) for the SARIF rule metadata."""
    from torchwise.lint.core import rules

    table = {SYNTAX_CODE: ("unparsable-file", "File could not be decoded or parsed", "The file is not valid Python (or not decodable) and was not checked.")}
    for r in rules():
        table[r.code] = (r.name, r.title, r.doc)
    return table


def format_sarif(findings: Sequence[Finding]) -> str:
    """A SARIF 2.1.0 log with one run, the rules used, and one result per finding."""
    table = _rule_table()
    used = sorted({f.code for f in findings})
    rules = []
    index = {}
    for i, code in enumerate(used):
        name, short, full = table.get(code, (code.lower(), code, code))
        index[code] = i
        rules.append({
            "id": code,
            "name": name,
            "shortDescription": {"text": short},
            "fullDescription": {"text": full.strip()},
            "help": {"text": full.strip()},
            "defaultConfiguration": {"level": "error" if code == SYNTAX_CODE else "warning"},
            "properties": {"tags": ["pytorch"]},
        })
    results = []
    for f in findings:
        region = {
            "startLine": f.line,
            "startColumn": f.col,
            "endLine": max(f.end_line or f.line, f.line),
            "endColumn": max(f.end_col or f.col + 1, 1),
        }
        if region["endLine"] == region["startLine"] and region["endColumn"] < region["startColumn"]:
            region["endColumn"] = region["startColumn"]
        text = f.message + (f" ({f.suggestion})" if f.suggestion else "")
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "error" if f.code == SYNTAX_CODE else "warning",
            "message": {"text": text},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.path)},
                    "region": region,
                }
            }],
        }
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "torchwise-lint",
                "informationUri": INFO_URI,
                "version": _version(),
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"


def _uri(path: str) -> str:
    """A relative path stays relative (what code scanning expects); an absolute one becomes a
    ``file://`` URI."""
    import os
    from pathlib import Path
    from urllib.parse import quote

    if os.path.isabs(path):
        return Path(path).as_uri()
    return quote(path.replace("\\", "/"), safe="/")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(findings: Sequence[Finding]) -> str:
    """GitHub Actions workflow commands: ``::warning file=...,line=...,col=...,title=CODE::message``."""
    lines = []
    for f in findings:
        level = "error" if f.code == SYNTAX_CODE else "warning"
        props = f"file={_escape_property(f.path)},line={f.line},col={f.col},title={_escape_property(f.code)}"
        message = f.message + (f" ({f.suggestion})" if f.suggestion else "")
        lines.append(f"::{level} {props}::{_escape_data(message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def render(findings: Sequence[Finding], fmt: str) -> str:
    if fmt == "text":
        return format_text(findings)
    if fmt == "json":
        return format_json(findings)
    if fmt == "sarif":
        return format_sarif(findings)
    if fmt == "github":
        return format_github(findings)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
