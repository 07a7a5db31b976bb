"""Whether a Python file may name a module by its file stem (for :mod:`.deadmodules`' left-over
modules): a stem that is a common word (``vae.py``, ``distributions.py``, ``adaptive_softmax.py``)
occurs in files that never mean the module - a local variable (``vae = VQVAE(...)``,
``vae.decode(x)``), another object's attribute (``self.vae``), a library's module (``from
torch.distributions import Normal``), a keyword argument's value (``scope='adaptive_softmax'``),
prose in a docstring or a comment. A mention counts where it may load the module: an import from
the project (``import vae``, ``from models import vae``, ``from .vae import VAE``), an attribute of
the module's package (``models.vae``), a string other than a keyword argument's value or prose (a
module path, ``'python -m vae'``, a list of module names). A bare name means the module only where
the file imports it, which counts already. Text tests."""

from __future__ import annotations

import os
import re

from torchwise.lint.engine import Context
from torchwise.lint.semantics.deadtext import commented, import_spans


def project_roots(ctx: Context) -> frozenset[str]:
    """Every folder and module name of the project's Python files: what an import of the
    project's own code starts with."""
    found = ctx.project.answers.get("stemmentions:roots")
    if found is None:
        names: set[str] = set()
        for p, _ in ctx.project.files:
            parts = p.replace("\\", "/").split("/")
            names.update(parts[:-1])
            names.add(os.path.splitext(parts[-1])[0])
        found = ctx.project.answers["stemmentions:roots"] = frozenset(names)
    return found


def may_name_module(ctx: Context, text: str, stem: str, package: str) -> bool:
    """``text`` (another Python file) holds a mention of ``stem`` that may mean the module
    ``stem.py`` of the folder ``package``."""
    roots = project_roots(ctx)
    spans = None
    for m in re.finditer(r"(?<![\w])" + re.escape(stem) + r"(?![\w])", text):
        at = m.start()
        start = text.rfind("\n", 0, at) + 1
        head = text[start:at]
        if "#" in head and commented(text, at):
            continue
        spans = import_spans(text) if spans is None else spans
        stmt = next((text[a:b] for a, b in spans if a <= at < b), None)
        if stmt is not None:
            if _project_import(stmt, stem, roots):
                return True
            continue
        quote = next((q for q in ("'", '"') if head.count(q) % 2 == 1), "")
        if quote:
            end = text.find("\n", at)
            line = text[start:end if end >= 0 else len(text)]
            if text[m.end():m.end() + 1] == quote and _keyword_value(text, start, head, quote):
                continue  # scope='adaptive_softmax': a keyword argument's value names something else
            if " " in head[head.rfind(quote) + 1:] + line[at - start:].split(quote, 1)[0] and not re.search(r"python|-m |import |\.py|/", line):
                continue  # prose in a one-line string
            return True
        if head.endswith(".") and package and re.search(r"(?<![\w.])(?:[\w.]+\.)?" + re.escape(package) + r"\.$", head):
            return True  # models.vae: the package's attribute
    return False


def _project_import(stmt: str, stem: str, roots: frozenset[str]) -> bool:
    """The import statement ``stmt`` may import the project's module ``stem``: it starts from the
    project (a relative import, a root that is a folder or module of the project), not from a
    library (``from torch.distributions import Normal``)."""
    words = stmt.split()
    if words[0] == "from":
        module = words[1]
        return module.startswith(".") or module.split(".")[0] in roots
    for token in re.findall(r"[\w.]+", stmt[len("import"):]):
        parts = token.split(".")
        if stem in parts and parts[0] in roots:
            return True
    return False


def _keyword_value(text: str, start: int, head: str, quote: str) -> bool:
    """The string that ``head`` (its line up to the string, which starts at ``start``) opens is a
    keyword argument's value (``f(x, scope='...')``, or ``scope='...'`` on a line continuing a
    call), not a variable's value (``runner = 'ImpressionRunner'``, which code may look up)."""
    if re.search(r"[(,][ \t]*\w+[ \t]*=[ \t]*[rbuf]?" + quote + r"$", head):
        return True
    if not re.match(r"[ \t]*\w+[ \t]*=[ \t]*[rbuf]?" + quote + r"$", head):
        return False
    before = text[:start].rstrip()
    return before.endswith((",", "("))
