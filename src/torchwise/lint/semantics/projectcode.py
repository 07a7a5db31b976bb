"""Functions defined elsewhere in the project, read on demand: the project scan keeps the
source of the short functions that mention what rules may ask about (a host read, a GPU set-up,
``pin_memory``); a rule that meets a call of one of them has it parsed here and keeps the answer, once per process."""

from __future__ import annotations

import ast
import os
from typing import Callable

from torchwise.lint.engine import Context, legacy
from torchwise.lint.facts import FunctionBlock, ProjectFacts


def parsed(block: FunctionBlock) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The parsed function of ``block`` (None when it does not parse)."""
    try:
        body = legacy.parse(block.text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return body[0] if body and body[0].__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) else None


def _offset(facts: ProjectFacts, block: FunctionBlock, test: Callable[[ast.AST], int | None]) -> int | None:
    """``test`` on the parsed block, once per process (only the answer is kept, not the tree)."""
    key = ("block", block.path, block.line, test)
    if key not in facts.answers:
        func = parsed(block)
        facts.answers[key] = test(func) if func is not None else None
    return facts.answers[key]


def function_verdict(facts: ProjectFacts, kind: str, name: str | None, test: Callable[[ast.AST], int | None],
                     every: bool = True, module: str | None = None, variant: object = None) -> str | None:
    """``"path:line"`` where the project's function ``name`` does what ``test`` looks for (it
    returns the line within the function), when every definition of that name in the project
    does (several classes may define ``update``), or with ``every=False`` when one does; else
    None. With ``module`` (``data_setup.create_dataloaders(...)``), only the definitions in
    files of that name count. ``kind``: the facts' block table; ``variant``: what else ``test``
    depends on (the answer is kept per variant)."""
    blocks = getattr(facts, kind).get(name or "")
    if module is not None:
        blocks = tuple(b for b in blocks or () if os.path.splitext(os.path.basename(b.path))[0] == module)
        every = False  # the definition of that module
    if not blocks:
        return None
    key = (kind, name, every, module, variant)
    if key not in facts.answers:
        found: list[str] = []
        # with ``every``, one definition that does not mention the needles, or fails the test, settles it
        if not every or len(blocks) >= facts.definitions.get(name or "", 0):
            for block in blocks:
                offset = _offset(facts, block, test)
                if offset is not None:
                    found.append(f"{block.path}:{block.line + offset - 1}")
                elif every:
                    break
        complete = len(found) == facts.definitions.get(name or "", 0)
        facts.answers[key] = found[0] if found and (complete or not every) else None
    return facts.answers[key]


def share_context(facts: ProjectFacts, ctx: Context) -> None:
    """Offer a file a rule parsed for the project's facts (a caller, a file that saves checkpoints)
    to the lint of that file, if it is still to come in this process."""
    facts.answers[("context", ctx.path)] = ctx


def shared_context(facts: ProjectFacts | None, path: str, source: str) -> Context | None:
    """The parsed file ``path`` when this process parsed it (with exactly ``source``) for the
    project's facts before linting it; handed over once."""
    if facts is None:
        return None
    ctx = facts.answers.pop(("context", path), None)
    return ctx if ctx is not None and ctx.source == source else None


def def_bodies(text: str, name: str, method: bool = False) -> list[str]:
    """The bodies (as text, the ``def`` line left out) of every ``def name(`` in ``text`` - with
    ``method``, only those whose first parameter is ``self``. Found by text, no parsing."""
    out = []
    needle = f"def {name}("
    pos = text.find(needle)
    while pos >= 0:
        start = text.rfind("\n", 0, pos) + 1
        head = text[start:pos]
        if head.strip(" \t") in ("", "async") and (not method or text.startswith("self", pos + len(needle))):
            indent = len(head) - len(head.lstrip(" \t"))
            cursor = text.find("\n", _signature_end(text, pos + len(needle)))
            cursor = len(text) if cursor < 0 else cursor + 1
            begin = cursor
            while cursor < len(text):
                end = text.find("\n", cursor)
                end = len(text) if end < 0 else end
                line = text[cursor:end]
                if line.strip() and len(line) - len(line.lstrip(" \t")) <= indent:
                    break
                cursor = end + 1
            out.append(text[begin:cursor])
        pos = text.find(needle, pos + 1)
    return out


def _signature_end(text: str, pos: int) -> int:
    """Where the parameter list opened just before ``pos`` closes (a signature over several
    lines, ``def setup(`` then a parameter per line then ``) -> nn.Module:``); ``pos`` when it
    does not close."""
    depth = 1
    for i in range(pos, min(len(text), pos + 4000)):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return pos


def module_texts(facts: ProjectFacts) -> dict[str, list[str]]:
    """The texts of the project's files by module name (the file name without ``.py``), once per process."""
    found = facts.answers.get("modules:texts")
    if found is None:
        found = facts.answers["modules:texts"] = {}
        for path, text in facts.files:
            found.setdefault(os.path.splitext(os.path.basename(path))[0], []).append(text)
    return found


def project_modules(facts: ProjectFacts) -> frozenset[str]:
    """Names an import of the project's own code may start with: its modules and the folders
    that hold them (``util`` of ``util.py``, ``lib`` of ``lib/losses.py``)."""
    found = facts.answers.get("modules:names")
    if found is None:
        names = set(module_texts(facts))
        for path, _ in facts.files:
            names.update(part for part in os.path.dirname(path).replace("\\", "/").split("/") if part.isidentifier())
        found = facts.answers["modules:names"] = frozenset(names - {"torch", "numpy", "np"})
    return found
