"""``torchwise rules`` (list the practice catalog) and ``torchwise rule CODE`` (explain one).

Besides the catalog entry, ``rule`` shows which engines implement a practice: the lint rule's own
documentation (from ``torchwise.lint.rules.all_rules()``), the doctor checks in
``torchwise/doctor/checks/*.py`` and the tune knobs in ``torchwise/tune/knobs/*.py`` (read with
``ast``: module docstring and the literal ``CODES = (...)``, without importing them), and the
Trainer's default from the catalog. Nothing here imports torch, so both commands start fast.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import textwrap
from dataclasses import asdict
from pathlib import Path
from typing import Any

from torchwise.catalog import CATEGORIES, CATEGORY_NOTES, PRACTICES, Practice, UnknownPractice, get_practice
from torchwise.core.errors import UsageError

ENGINES: tuple[str, ...] = ("lint", "doctor", "tune", "trainer")
_PACKAGE = Path(__file__).resolve().parent.parent  # src/torchwise
CHECKS_DIR = _PACKAGE / "doctor" / "checks"
KNOBS_DIR = _PACKAGE / "tune" / "knobs"
LINT_RULES_MODULE = "torchwise.lint.rules"


# --------------------------------------------------------------------------------------------
# Finding the engines that cover each code
# --------------------------------------------------------------------------------------------


def _literal_codes(tree: ast.Module) -> tuple[str, ...] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "CODES" for t in targets):
            try:
                codes = ast.literal_eval(value)
            except ValueError:
                return None
            if isinstance(codes, str):
                codes = (codes,)
            if isinstance(codes, (tuple, list, set, frozenset)) and all(isinstance(c, str) for c in codes):
                return tuple(c.upper() for c in codes)
            return None
    return None


def scan_engine_modules(folder: str | Path) -> list[dict]:
    """Read every ``*.py`` module of ``folder`` (not ``_private`` ones) without importing it.

    Returns ``[{"name", "path", "codes", "doc"}]`` sorted by name; ``codes`` comes from a literal
    module-level ``CODES = ("TW212",)`` (empty when absent or not literal), ``doc`` is the module
    docstring (""). A file that does not parse is listed with an ``error`` and no codes.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        entry: dict[str, Any] = {"name": path.stem, "path": str(path), "codes": (), "doc": ""}
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (SyntaxError, UnicodeDecodeError, OSError) as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
            out.append(entry)
            continue
        entry["doc"] = ast.get_docstring(tree) or ""
        entry["codes"] = _literal_codes(tree) or ()
        out.append(entry)
    return out


def lint_rules() -> list[dict]:
    """The linter's rules as ``[{"code", "name", "doc"}]``; empty while the linter is absent."""
    try:
        module = importlib.import_module(LINT_RULES_MODULE)
    except ImportError:
        return []
    all_rules = getattr(module, "all_rules", None)
    if all_rules is None:
        return []
    return [
        {"code": str(getattr(r, "code", "")).upper(), "name": str(getattr(r, "name", "")),
         "doc": textwrap.dedent(str(getattr(r, "doc", "") or "")).strip()}
        for r in all_rules()
    ]


def coverage(checks_dir: str | Path | None = None, knobs_dir: str | Path | None = None,
             lint: list[dict] | None = None) -> dict[str, dict[str, list[dict]]]:
    """code -> engine -> implementations, for every catalog code.

    ``lint``/``doctor``/``tune`` hold what was found (lint rules, check modules, knob modules);
    ``trainer`` holds one entry with the catalog's default when the Trainer has one. The folder
    and lint arguments replace the package's own (for tests and tools).
    """
    result: dict[str, dict[str, list[dict]]] = {code: {e: [] for e in ENGINES} for code in PRACTICES}
    for rule in lint_rules() if lint is None else lint:
        if rule["code"] in result:
            result[rule["code"]]["lint"].append(rule)
    for engine, folder in (("doctor", checks_dir or CHECKS_DIR), ("tune", knobs_dir or KNOBS_DIR)):
        for module in scan_engine_modules(folder):
            for code in module["codes"]:
                if code in result:
                    result[code][engine].append(module)
    for code, practice in PRACTICES.items():
        if practice.default:
            result[code]["trainer"].append({"name": "Trainer", "doc": practice.default})
    return result


def _planned(p: Practice) -> list[str]:
    return list(p.engines)


# --------------------------------------------------------------------------------------------
# rules
# --------------------------------------------------------------------------------------------


def list_rules(category: str | None = None, engine: str | None = None, **where: Any) -> list[dict]:
    """Catalog rows ``{code, title, category, engines, planned}``, optionally filtered.

    ``engines`` are the engines found implementing the code, ``planned`` those the catalog flags
    name. ``engine`` keeps codes that the given engine implements. ``where`` is passed to
    :func:`coverage` (``checks_dir``, ``knobs_dir``, ``lint``).
    """
    if category is not None and category not in CATEGORIES.values():
        raise UsageError(f"unknown category {category!r}; expected one of {', '.join(CATEGORIES.values())}")
    if engine is not None and engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    cov = coverage(**where)
    rows = []
    for code, p in PRACTICES.items():
        found = [e for e in ENGINES if cov[code][e]]
        if category and p.category != category:
            continue
        if engine and engine not in found:
            continue
        rows.append({"code": code, "title": p.title, "category": p.category, "engines": found,
                     "planned": _planned(p)})
    return rows


def category_legend(rows: list[dict]) -> list[str]:
    """One line per category present in ``rows``: ``api (TW5xx): what it covers``."""
    prefix = {name: f"TW{digit}xx" for digit, name in CATEGORIES.items()}
    present = [c for c in CATEGORIES.values() if any(r["category"] == c for r in rows)]
    return [f"{c} ({prefix[c]}): {CATEGORY_NOTES[c]}" for c in present]


def _rules_text(rows: list[dict]) -> str:
    if not rows:
        return "no practices match"
    lines = []
    for r in rows:
        engines = ",".join(r["engines"]) or "-"
        lines.append(f"{r['code']}  {r['category']:<15}  {engines:<24}  {r['title']}")
    lines += ["", f"{len(rows)} practices. Categories:", *(f"  {line}" for line in category_legend(rows)),
              "Engines: which of lint, doctor, tune and the Trainer act on it. 'torchwise rule CODE' explains one."]
    return "\n".join(lines)


def _rules_rich(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"torchwise practices ({len(rows)})", title_justify="left")
    table.add_column("code", style="bold cyan", no_wrap=True)
    table.add_column("category")
    table.add_column("engines", no_wrap=True)
    table.add_column("practice")
    for r in rows:
        table.add_row(r["code"], r["category"], " ".join(r["engines"]) or "-", r["title"])
    console = Console()
    console.print(table)
    console.print("Categories:\n" + "\n".join(f"  {line}" for line in category_legend(rows)), highlight=False, markup=False)
    console.print("'torchwise rule CODE' explains one.", highlight=False, markup=False)


# --------------------------------------------------------------------------------------------
# rule CODE
# --------------------------------------------------------------------------------------------


def explain(code: str, **where: Any) -> dict:
    """Everything ``torchwise rule CODE`` shows, as a dict: the catalog entry plus ``engines``.

    Raises :class:`torchwise.core.errors.UsageError` for an unknown code, naming near matches.
    """
    try:
        practice = get_practice(code)
    except UnknownPractice as exc:
        raise UsageError(str(exc)) from None
    cov = coverage(**where)[practice.code]
    data = asdict(practice)
    data["seeds"] = list(practice.seeds)
    data["planned"] = _planned(practice)
    data["engines"] = {
        engine: [{k: v for k, v in item.items() if k in ("name", "path", "doc", "codes", "code")} for item in items]
        for engine, items in cov.items()
    }
    for items in data["engines"].values():
        for item in items:
            if "codes" in item:
                item["codes"] = list(item["codes"])
    return data


def _wrap(text: str, indent: str = "  ") -> str:
    return "\n".join(
        textwrap.fill(par, width=92, initial_indent=indent, subsequent_indent=indent) if par.strip() else ""
        for par in text.split("\n")
    )


def _block(text: str, indent: str = "    ") -> str:
    return textwrap.indent(text.rstrip(), indent)


def _engine_lines(data: dict) -> list[str]:
    lines = []
    for engine in ENGINES:
        items = data["engines"][engine]
        if engine == "trainer":
            lines.append(f"  trainer: {items[0]['doc'] if items else '-'}")
            continue
        if not items:
            note = " (planned)" if engine in data["planned"] else ""
            lines.append(f"  {engine}: -{note}")
            continue
        for item in items:
            label = item["name"]
            lines.append(f"  {engine}: {label}")
            if item.get("doc"):
                lines.append(_block(item["doc"], "      "))
    return lines


def _category_line(data: dict) -> str:
    return f"category: {data['category']} ({CATEGORY_NOTES.get(data['category'], '')})"


def _rule_text(data: dict) -> str:
    lines = [
        f"{data['code']}  {data['title']}",
        _category_line(data),
        "",
        "Why",
        _wrap(data["rationale"]),
        "",
        "Bad",
        _block(data["example_bad"]),
        "Good",
        _block(data["example_good"]),
        "",
        "Fix",
        _wrap(data["fix"]),
        "",
        "Engines",
        *_engine_lines(data),
    ]
    return "\n".join(lines)


def _rule_rich(data: dict) -> None:
    from rich.console import Console
    from rich.syntax import Syntax
    from rich.text import Text

    console = Console()
    console.print(Text(f"{data['code']}  {data['title']}", style="bold cyan"))
    console.print(_category_line(data), highlight=False, markup=False)
    console.print("\n[bold]Why[/bold]")
    console.print(Text(_wrap(data["rationale"])))
    console.print("\n[bold red]Bad[/bold red]")
    console.print(Syntax(data["example_bad"], "python", theme="ansi_dark", padding=(0, 4)))
    console.print("[bold green]Good[/bold green]")
    console.print(Syntax(data["example_good"], "python", theme="ansi_dark", padding=(0, 4)))
    console.print("\n[bold]Fix[/bold]")
    console.print(Text(_wrap(data["fix"])))
    console.print("\n[bold]Engines[/bold]")
    console.print(Text("\n".join(_engine_lines(data))))


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def add_arguments_for(name: str, parser: argparse.ArgumentParser) -> None:
    if name == "rules":
        parser.add_argument("--category", choices=list(CATEGORIES.values()), help="only this category")
        parser.add_argument("--engine", choices=list(ENGINES), help="only codes this engine implements")
    else:
        parser.add_argument("code", help="a practice code, e.g. TW201")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from torchwise.core.output import emit

    if getattr(args, "command", None) == "rules" or not hasattr(args, "code"):
        rows = list_rules(category=args.category, engine=args.engine)
        emit(rows, as_json=args.json, rich=_rules_rich, text=_rules_text)
        return 0
    emit(explain(args.code), as_json=args.json, rich=_rule_rich, text=_rule_text)
    return 0
