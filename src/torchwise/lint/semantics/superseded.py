"""Superseded modules: a module no file of the project imports whose class or function is the
project's name for one that another module defines and every user imports from there - an old
version left beside the new one (``vocoder/models/deepmind_version.py`` and
``fatchord_version.py`` both define ``WaveRNN``; the project imports ``WaveRNN`` only from
``fatchord_version``). The old one never runs (ruling R5 of issue 22). A text test per name,
cached per project."""

from __future__ import annotations

import os
import re

from torchwise.lint.engine import AST, Context



def _top_names(text: str) -> set[str]:
    """Names of the module-level ``class``/``def`` lines of ``text`` (found with ``str.find``)."""
    out = set()
    for head in ("\nclass ", "\ndef "):
        pos = text.find(head)
        while pos >= 0:
            start = pos + len(head)
            end = start
            while end < len(text) and (text[end].isalnum() or text[end] == "_"):
                end += 1
            out.add(text[start:end])
            pos = text.find(head, end)
    return out


def superseded(ctx: Context, top: AST) -> bool:
    """``top`` (a module-level class or function of a module nobody imports) shares its name with
    a definition of another module, and the project imports that name only from other modules."""
    name = getattr(top, "name", None)
    if not name or name.startswith("_") or not ctx.project.files:
        return False
    defs = ctx.project.answers.get("superseded:defs")
    if defs is None:  # module-level class and function names -> how many files define them, found once
        defs = {}
        for _, text in ctx.project.files:
            for n in _top_names(text):
                defs[n] = defs.get(n, 0) + 1
        ctx.project.answers["superseded:defs"] = defs
    if defs.get(name, 0) < 2:
        return False  # no other module defines it
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    key = ("superseded", ctx.path, name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = _imported_elsewhere(ctx, name, stem)
        ctx.project.answers[key] = found
    return found


def _imported_elsewhere(ctx: Context, name: str, stem: str) -> bool:
    defines = re.compile(r"^[ \t]*(?:class|def)[ \t]+" + re.escape(name) + r"\b", re.M)
    imports = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import\b[^\n]*\b" + re.escape(name) + r"\b", re.M)
    sources: set[str] = set()
    defined_elsewhere = False
    for path, text in ctx.project.files:
        if path == ctx.path or name not in text:
            continue
        if defines.search(text) and os.path.splitext(os.path.basename(path))[0] != stem:
            defined_elsewhere = True
        sources.update(m.group(1).rsplit(".", 1)[-1] for m in imports.finditer(text))
    return defined_elsewhere and bool(sources) and stem not in sources
