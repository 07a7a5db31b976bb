"""Griffe extension for the API reference: torchwise's docstrings, written for the terminal and
for ``help()``, rendered as Markdown without editing them.

* Sphinx roles (``:func:`x```, ``:class:`~a.b.C```...) become code spans (``x``, ``C``).
* Interactive examples (``>>>`` lines and the output after them) become ```pycon blocks.
"""

from __future__ import annotations

import re
from typing import Any

try:
    import griffe
except ImportError:  # the converter below is plain Python, tested without the docs extra
    griffe = None

ROLE = re.compile(r":(?:func|class|meth|attr|data|mod|exc|obj|const):`~?([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match.group(1)
    if match.group(0).split("`", 1)[1].startswith("~"):
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def _fence_examples(text: str) -> str:
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].lstrip().startswith(">>>"):
            out.append(lines[i])
            i += 1
            continue
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        block = []
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            block.append(lines[i][len(indent):])
            i += 1
        if out and out[-1].strip():
            out.append("")
        out += ["```pycon", *block, "```", ""]
    return "\n".join(out)


def markdown_docstring(text: str) -> str:
    """The docstring text with roles as code spans and examples fenced."""
    return _fence_examples(ROLE.sub(_role, text))


if griffe is not None:

    class TorchwiseDocstrings(griffe.Extension):
        """Rewrites each docstring once, when its object is loaded."""

        def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
            docstring = getattr(obj, "docstring", None)
            if docstring is not None and docstring.value:
                docstring.value = markdown_docstring(docstring.value)
