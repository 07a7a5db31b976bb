"""Options that nothing in the project sets (for :mod:`.unrunbranches`): a test
``getattr(config, "gradient_checkpointing", False)`` - the switch of a vendored Hugging Face
modeling file, ``getattr(args, "use_amp", False)`` - reads an attribute with a false default, and
the project never sets it: the name occurs in no Python file but in such reads (a
``getattr(..., "name", False)`` again) or in the prose of a message (``"... incompatible with
`config.gradient_checkpointing=True`"``), and in no config, shell script, notebook or README. No
keyword (``from_pretrained(path, gradient_checkpointing=True)``), assignment
(``config.gradient_checkpointing = True``), argparse option (``--gradient_checkpointing``) or key
(``{"gradient_checkpointing": true}``) sets it: the default holds on every run, and the branch
it guards never runs. Text tests, once per name and project."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.deadmodules import named_in_references
from torchwise.lint.semantics.deadtext import commented

_FALSY = (False, None, 0)


def unset_option(ctx: Context, test: AST) -> bool:
    """``test`` is ``getattr(obj, "name", <False|None|0>)`` for a name the project never sets
    (module doc): it is false on every run."""
    if test.__class__ is not ast.Call or test.func.__class__ is not ast.Name or test.func.id != "getattr" \
            or len(test.args) != 3 or test.keywords:
        return False
    key, default = test.args[1], test.args[2]
    if key.__class__ is not ast.Constant or not isinstance(key.value, str) or not key.value.isidentifier() \
            or default.__class__ is not ast.Constant or default.value not in _FALSY:
        return False
    name = key.value
    answers = ctx.project.answers if ctx.project.files else ctx._cache
    found = answers.get(("unsetoption", name))
    if found is None:
        texts = ctx.project.files or ((ctx.path, ctx.source),)
        found = all(_only_read(text, name) for _, text in texts if name in text) and not named_in_references(ctx, name, docs=True)
        answers[("unsetoption", name)] = found
    return found


def _read_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"getattr\([^,()\n]*(?:\([^()\n]*\))?[^,()\n]*,[ \t]*(['\"])" + re.escape(name) + r"\1[ \t]*,[ \t]*(?:False|None|0)[ \t]*\)")


def _only_read(text: str, name: str) -> bool:
    """Every whole-word mention of ``name`` in ``text`` is a ``getattr(..., "name", False)`` read,
    a comment, or part of a one-line string of prose (a space in it)."""
    reads = [m.span() for m in _read_pattern(name).finditer(text)]
    for m in re.finditer(r"(?<![\w])" + re.escape(name) + r"(?![\w])", text):
        where = m.start()
        if any(a <= where < b for a, b in reads) or commented(text, where):
            continue
        start = text.rfind("\n", 0, where) + 1
        end = text.find("\n", where)
        if not _in_prose(text[start:end if end >= 0 else len(text)], where - start, len(name)):
            return False
    return True


def _in_prose(line: str, at: int, size: int) -> bool:
    head = line[:at]
    quote = next((q for q in ("'", '"') if head.count(q) % 2 == 1), None)
    if quote is None:
        return False
    close = line.find(quote, at + size)
    return close >= 0 and " " in line[head.rfind(quote) + 1:close]
