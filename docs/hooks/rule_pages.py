"""MkDocs hook: a page per catalog code (``rules/TWnnn.md``) and the index of codes by category
(``rules/index.md``), generated at build time from ``torchwise.catalog`` and the engines' own
documentation, read the way ``torchwise rule CODE`` reads it (``torchwise.cli.rules.coverage``:
the lint rules' docs, the doctor checks' and tune knobs' module docstrings through ``ast``), so
nothing imports torch. No generated page is written to the source tree.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

CATEGORY_TEXT: dict[str, str] = {
    "correctness": (
        "The code is wrong or will fail: a loss that keeps every step's graph alive, probabilities "
        "fed to a loss that wants logits, a model left in eval mode, labels out of range, NaNs, and "
        "the training dynamics that the doctor watches over many steps (TW130–TW138: exploding or "
        "vanishing gradients, dead units, a loss that does not move)."
    ),
    "performance": (
        "The code is right but slow or memory-hungry: data loading, host–device syncs, mixed "
        "precision, memory formats, compilation, batch sizes and threads. Most of these help some "
        "models on some machines and hurt others; `torchwise tune` measures them."
    ),
    "reproducibility": "Seeds and determinism, so that a run can be repeated bit for bit.",
    "devices": (
        "Devices, distributed training and checkpoints: code that runs where CUDA is absent, "
        "launching with torchrun, saving so that a crash cannot corrupt the file, and loading "
        "without running code from it."
    ),
    "api": (
        "PyTorch APIs that were removed, are deprecated, are not public or are easy to misuse, with "
        "their replacements: the rules of TorchFix (each TorchFix code maps to one of these; see "
        "[lint](../lint.md)) and a few more, such as an `async_op=True` collective whose handle is "
        "never waited on. Only `torchwise lint` acts on them; several have safe autofixes."
    ),
}

ENGINE_TEXT = {
    "lint": "`torchwise lint` rule",
    "doctor": "`torchwise doctor` check",
    "tune": "`torchwise tune` knob",
    "trainer": "Trainer default",
}


def _label_paragraphs(doc: str) -> str:
    """A module docstring as Markdown: ``What:``/``Why:``/``Fix:`` lines start bold paragraphs."""
    lines = textwrap.dedent(doc).strip().splitlines()
    out: list[str] = lines[:1]  # the summary line stays as written
    for line in lines[1:]:
        match = re.match(r"^([A-Z][A-Za-z /-]{0,40}):\s+(.*)$", line)
        if match:
            out += ["", f"**{match.group(1)}.** {match.group(2)}"]
        else:
            out.append(line)
    return "\n".join(out).strip()


def _lint_doc(doc: str) -> str:
    """A lint rule's doc (unindented section titles, indented bodies) as Markdown."""
    sections: list[tuple[str, list[str]]] = []
    for line in doc.splitlines():
        if line and not line[0].isspace():
            sections.append((line.strip(), []))
        elif sections:
            sections[-1][1].append(line)
        elif line.strip():
            sections.append(("", [line]))
    parts = []
    for title, body in sections:
        text = textwrap.dedent("\n".join(body)).strip("\n")
        if title.lower().startswith("example"):
            parts.append(f"**{title}**\n\n```python\n{text}\n```")
        else:
            parts.append(f"**{title}.** {text}" if title else text)
    return "\n\n".join(parts)


def _code_block(code: str) -> str:
    return f"```python\n{textwrap.dedent(code).strip()}\n```"


def rule_page(practice: Any, engines: dict[str, list[dict]]) -> str:
    """The Markdown page of one practice."""
    found = [e for e in ENGINE_TEXT if engines.get(e)]
    lines = [
        f"# {practice.code}: {practice.title}",
        "",
        f"**Category:** [{practice.category}](index.md#{practice.category}) · "
        f"**Acted on by:** {', '.join(found) if found else 'documentation only'}",
        "",
        "## Why it matters",
        "",
        practice.rationale,
        "",
        "## Example",
        "",
        "Instead of",
        "",
        _code_block(practice.example_bad),
        "",
        "write",
        "",
        _code_block(practice.example_good),
        "",
        "## Fix",
        "",
        practice.fix,
        "",
        "## What torchwise does about it",
        "",
    ]
    if not found:
        lines += ["No engine acts on this practice yet; it is documented for readers and reviewers.", ""]
    for engine in ENGINE_TEXT:
        for item in engines.get(engine, []):
            if engine == "trainer":
                lines += [f"### {ENGINE_TEXT[engine]}", "", item["doc"], ""]
            elif engine == "lint":
                lines += [f"### {ENGINE_TEXT[engine]} `{item['name']}`", "", _lint_doc(item["doc"]), ""]
            else:
                lines += [f"### {ENGINE_TEXT[engine]} `{item['name']}`", "", _label_paragraphs(item["doc"]), ""]
    lines += [f"`torchwise rule {practice.code}` prints this page in a terminal.", ""]
    return "\n".join(lines)


def index_page(practices: dict[str, Any], coverage: dict[str, dict[str, list]], categories: dict[str, str]) -> str:
    """The index of every code, by category."""
    lines = [
        "# Rules: every code by category",
        "",
        f"The catalog has {len(practices)} practices. Each code below has its own page: why it matters, "
        "an example, the fix, and what each engine does about it. The same in a terminal: "
        "`torchwise rules`, `torchwise rule CODE`.",
        "",
        "Engines: **lint** finds it in the source, **doctor** measures it in real steps, **tune** "
        "measures whether it helps, **trainer** is what the Trainer does by default.",
        "",
    ]
    for digit, category in categories.items():
        codes = [c for c, p in practices.items() if p.category == category]
        if not codes:
            continue
        lines += [f"## {category}", "", f"Codes `TW{digit}xx`. {CATEGORY_TEXT.get(category, '')}", "",
                  "| code | practice | engines |", "|---|---|---|"]
        for code in codes:
            engines = ", ".join(e for e in ENGINE_TEXT if coverage[code].get(e)) or "–"
            title = practices[code].title.replace("|", "\\|")
            lines.append(f"| [{code}]({code}.md) | {title} | {engines} |")
        lines.append("")
    return "\n".join(lines)


def generate() -> dict[str, str]:
    """``{path inside the docs: Markdown}`` for the index and every code."""
    from torchwise.catalog import CATEGORIES, PRACTICES
    from torchwise.cli.rules import coverage

    cov = coverage()
    pages = {"rules/index.md": index_page(PRACTICES, cov, CATEGORIES)}
    for code, practice in PRACTICES.items():
        pages[f"rules/{code}.md"] = rule_page(practice, cov[code])
    return pages


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File, InclusionLevel

    for path, content in generate().items():
        inclusion = InclusionLevel.INCLUDED if path.endswith("index.md") else InclusionLevel.NOT_IN_NAV
        files.append(File.generated(config, path, content=content, inclusion=inclusion))
    return files
