"""``set_epoch`` called only under a flag that does not guard the sampler (TW406).

``if True:  # args.distributed:`` builds a ``DistributedSampler`` on every run (a single process
too: world size 1), while the epoch loop calls ``sampler.set_epoch(epoch)`` only ``if
args.distributed:``: a run without the flag shuffles once and replays that order every epoch.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context


def _flag(test: ast.AST) -> bool:
    """A plain flag: ``args.distributed``, ``self.ddp``, ``distributed`` (not a test of the
    sampler itself, ``sampler is not None``, ``isinstance(...)``, a comparison)."""
    return test.__class__ is ast.Name or test.__class__ is ast.Attribute


def flag_only_set_epoch(ctx: Context) -> frozenset[str] | None:
    """The flags (their text) under which the file's ``set_epoch`` calls run, when every one of them
    runs only in the body of ``if <flag>:``; None when one runs otherwise (or there is none)."""
    key = "tw406:flag-only"
    if key in ctx._cache:
        return ctx._cache[key]
    flags: set[str] = set()
    calls = ctx.calls_named("set_epoch")
    for call in calls:
        ifs = ctx.enclosing_ifs(call)
        test = ifs[0][0].test if ifs and ifs[0][1] and ifs[0][0].__class__ is ast.If else None
        if test is None or not _flag(test):
            flags = set()
            break
        flags.add(ctx.text(test))
    found = frozenset(flags) if calls and flags else None
    ctx._cache[key] = found
    return found


def built_regardless(ctx: Context, sampler: ast.Call, flags: frozenset[str]) -> bool:
    """The sampler is built whatever the flags say: in no ``if`` or conditional expression but ones
    whose test is a constant (``if True:``), and the file names none of the flags beside its
    ``set_epoch`` guards and the sampler's ... (a flag tested elsewhere before the sampler may return
    early or choose another path)."""
    for branch, _ in ctx.enclosing_ifs(sampler):
        if branch.test.__class__ is not ast.Constant or not branch.test.value:
            return False
    func = ctx.function_of(sampler)
    if func is None:
        return False
    for node in ast.walk(func):
        if node.__class__ is ast.If and ctx.text(node.test) in flags and node.lineno < sampler.lineno:
            return False  # `if args.distributed: ... return` / another path chosen by the flag before it
    return True
