"""Lines that never run, for every per-call rule (``Rule.per_call``; ruling R5 of issue 22): the
advice of such a rule (a copy per batch, a sync per step, a wrapper around a model, a checkpoint
loaded on another machine) applies only where the code runs.

A line never runs when

* it lies in dead code (:mod:`.deadcode`: a function or class nothing in the project names but
  dead code, a function named only in its own ``def``, a left-over module); or
* it lies in a branch that no run selects (:mod:`.unrunbranches`): an option of a class no
  construction sets, a parameter no call passes, a local flag bound once to a constant.

Caution for code whose callers are outside the project: a public name of a module of an
installable package (``setup.py``/``pyproject.toml`` at or above it) or one its module lists in
``__all__`` is an API, alive though the project never calls it; so is anything decorated (a
registry's ``@register``). The answers are computed once per file.
"""

from __future__ import annotations

from torchwise.lint.engine import Context
from torchwise.lint.semantics.deadcode import dead_at
from torchwise.lint.semantics.deadmethods import function_at
from torchwise.lint.semantics.callvalues import installable
from torchwise.lint.semantics.unrunbranches import in_unrun_branch

def never_runs_at(ctx: Context, line: int) -> bool:
    """Line ``line`` of the file never runs (module doc)."""
    cache = ctx._cache.get("neverruns:lines")
    if cache is None:
        cache = ctx._cache["neverruns:lines"] = {}
    found = cache.get(line)
    if found is None:
        found = _never_runs(ctx, line)
        cache[line] = found
    return found


def _never_runs(ctx: Context, line: int) -> bool:
    if in_unrun_branch(ctx, line):
        return True
    if not ctx.project.files or not dead_at(ctx, line):
        return False
    return not _api(ctx, line)


def _api(ctx: Context, line: int) -> bool:
    """The dead code at ``line`` is the public API of a library: a public module-level name (or a
    method of a public class) of a module of an installable package, or a name in ``__all__``."""
    func = function_at(ctx, line)
    top = func
    while top is not None and ctx.parent(top) is not ctx.tree:
        top = ctx.parent(top)
    if top is None or not hasattr(top, "name"):
        return False
    if "__all__" in ctx.source and (f"'{top.name}'" in ctx.source or f'"{top.name}"' in ctx.source):
        return True
    if top.name.startswith("_") or (func is not None and func.name.startswith("_") and func.name != "__init__"):
        return False
    return installable(ctx)
