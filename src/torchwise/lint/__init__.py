"""``torchwise lint``: a fast static checker for PyTorch training pitfalls, with safe fixes.

Every rule checks one practice of the catalog (``torchwise rules``); only the standard library
(``ast``, ``tokenize``) is used, so linting never imports torch.

The package is layered one way, each layer importing only those below it (checked by
``tests/lint/test_lint_layers.py``): data (``findings``, ``facts``); the engine core
(``engine/``: parsing, the index, def-use, positions, ``# noqa``, applying fixes); the semantic
helpers (``semantics/``, one module per theme: steps, losses, models, autograd, devices, data...);
the project scan (``project``); the rules (``rule``, ``rules/``, one module per code); and the
drivers (``core``, ``runner``, ``cli``, ``output``, ``config``, ``flake8_plugin``). A new rule
goes in ``rules/`` and uses the helpers; knowledge two rules share goes into a helper module.

>>> from torchwise.lint import lint_source
>>> [f.code for f in lint_source("import torch\\nsd = torch.load('m.pt')\\n")]
['TW401']
"""

from __future__ import annotations

from typing import Iterable, Sequence

from torchwise.lint.core import apply_fixes, check_source, fix_source as _fix_source, resolve_codes
from torchwise.lint.findings import SYNTAX_CODE, Edit, Finding, Fix


def lint_source(
    source: str | bytes,
    path: str = "<stdin>",
    select: Iterable[str] | str | None = None,
    ignore: Iterable[str] | str | None = None,
) -> list[Finding]:
    """Findings for one piece of source code, sorted by position.

    ``select``/``ignore`` take codes or prefixes (``"TW401"``, ``"TW2"``); by default every rule
    runs. Bytes are decoded like Python does (BOM, coding cookie). A file that cannot be decoded
    or parsed gives a single ``TW000`` finding saying why; nothing raises for bad input.
    """
    return check_source(source, path, resolve_codes(select, ignore))


def fix_source(
    source: str,
    path: str = "<stdin>",
    select: Iterable[str] | str | None = None,
    ignore: Iterable[str] | str | None = None,
    *,
    unsafe: bool = False,
) -> tuple[str, list[Finding]]:
    """Apply every safe fix (with ``unsafe=True`` also the fixes that may change behaviour);
    returns the new source and the findings that remain."""
    new, remaining, _ = _fix_source(source, path, resolve_codes(select, ignore), unsafe=unsafe)
    return new, remaining


def lint_paths(
    paths: Sequence[str],
    select: Iterable[str] | str | None = None,
    ignore: Iterable[str] | str | None = None,
    *,
    use_config: bool = True,
    jobs: int | None = None,
) -> list[Finding]:
    """Findings for files and folders (recursing, skipping .git, virtual environments, build
    folders and config excludes), honouring ``[tool.torchwise.lint]`` in pyproject.toml.

    Raises :class:`torchwise.core.errors.UsageError` for a path that does not exist or an unknown code.
    """
    from torchwise.lint.runner import Selection, discover, run_jobs

    selection = Selection(
        select=list(_split(select)) or None,
        ignore=list(_split(ignore)),
        use_config=use_config,
    )
    resolve_codes(selection.select, selection.ignore)  # validate codes early
    results = run_jobs(discover(list(paths), selection), jobs)
    out: list[Finding] = []
    for r in results:
        out.extend(r.findings)
    return out


def _split(selectors: Iterable[str] | str | None) -> list[str]:
    if selectors is None:
        return []
    if isinstance(selectors, str):
        selectors = [selectors]
    return [p.strip() for s in selectors for p in str(s).split(",") if p.strip()]


def all_rules() -> list:
    """Every lint rule object (``.code``, ``.name``, ``.doc``), in code order."""
    from torchwise.lint.rules import all_rules as _all

    return _all()


__all__ = [
    "SYNTAX_CODE", "Edit", "Finding", "Fix", "all_rules", "apply_fixes", "fix_source", "lint_paths", "lint_source",
]
