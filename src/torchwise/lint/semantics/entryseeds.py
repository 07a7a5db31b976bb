"""Whether every program that runs a module seeds torch first (TW303).

A library module (a model file: no ``__main__``, no ``parse_args(``) that calls
``torch.cuda.manual_seed(s)`` runs inside the scripts that import it. Where each of those
scripts calls ``torch.manual_seed`` unconditionally, every GPU is already seeded: the CUDA seed
of the module is redundant, not partial (R20). The scripts are found through the project's
import graph (:func:`reached_from`, loose towards more scripts: each must seed).
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.reach import reached_from


def _is_script(text: str) -> bool:
    return "__main__" in text or "parse_args(" in text


def importers_seed_torch(ctx: Context) -> bool:
    """``ctx`` is no script, some entry script of the project imports it (directly or not), and
    every such script calls ``torch.manual_seed(...)`` outside any ``if``."""
    if not ctx.project.files or _is_script(ctx.source):
        return False
    key = ("entryseeds", ctx.path)
    found = ctx.project.answers.get(key)
    if found is None:
        scripts = [(p, t) for p, t in ctx.project.files if p != ctx.path and _is_script(t)
                   and ctx.path in reached_from(ctx.project, (p,))]
        found = bool(scripts) and all(_seeds_torch(ctx, p, t) for p, t in scripts)
        ctx.project.answers[key] = found
    return found


def _seeds_torch(ctx: Context, path: str, text: str) -> bool:
    if "manual_seed(" not in text:
        return False
    other = parsed_file(ctx.project, path, text)
    return other is not None and any(not other.enclosing_ifs(c) for c in other.calls_to("torch.manual_seed"))
