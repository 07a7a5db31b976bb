"""TW302: ``cudnn.benchmark = True`` together with ``cudnn.deterministic = True``."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.backends import cudnn_flag_assignments


def exclusive(ctx: Context, a: ast.AST, b: ast.AST) -> bool:
    """Are ``a`` and ``b`` in different branches of one ``if`` (so never both run)?"""
    branch_a: dict[int, bool] = {}
    for if_node, in_body in ctx.enclosing_ifs(a):
        branch_a[id(if_node)] = in_body
    for if_node, in_body in ctx.enclosing_ifs(b):
        if id(if_node) in branch_a and branch_a[id(if_node)] != in_body:
            return True
    return False


_TOP_LINE = lazy_compile(r"^[^\s#]", re.M)
_DET_LINE = lazy_compile(r"^([ \t]+)(?:torch\.backends\.)?cudnn\.deterministic[ \t]*=[ \t]*True\b", re.M)


def _helper_sets_deterministic(ctx: Context, name: str) -> bool:
    """The seeding helper ``name`` (``def seed_everything(seed=11):``), defined once in the project
    (this file included), sets ``cudnn.deterministic = True`` directly in its body, under no ``if``."""
    head = re.compile(r"^def[ \t]+" + re.escape(name) + r"[ \t]*\(", re.M)
    found = []
    for _, text in ctx.project.files or ((ctx.path, ctx.source),):
        if f"def {name}" not in text:
            continue
        for m in head.finditer(text):
            start = text.find("\n", m.end()) + 1
            nxt = _TOP_LINE.search(text, start) if start else None  # the next line at column 0 ends the function
            body = text[start:nxt.start() if nxt else len(text)] if start else ""
            first = re.search(r"^([ \t]+)[^\s#]", body, re.M)
            det = _DET_LINE.search(body)
            found.append(det is not None and first is not None and det.group(1) == first.group(1))
    return len(found) == 1 and found[0]


def _seeded_deterministic(ctx: Context, bench: ast.Assign) -> ast.Call | None:
    """A call before ``bench``, in its scope, of a helper that sets ``cudnn.deterministic = True``
    (``seed_everything(seed)`` from the project's utils), not in another branch of an ``if``."""
    if "seed" not in ctx.source:
        return None
    scope = ctx.scope_of(bench)
    for call in ctx.nodes.get(ast.Call, ()):
        name = last_name(call.func) or ""
        if "seed" not in name.lower() or call.lineno >= bench.lineno or ctx.scope_of(call) is not scope \
                or exclusive(ctx, bench, call):
            continue
        if _helper_sets_deterministic(ctx, name):
            return call
    return None


def _deterministic_caller(ctx: Context, bench: ast.AST, dets: list[ast.AST], depth: int = 2) -> tuple[ast.AST, ast.Call] | None:
    """``main()`` sets ``cudnn.deterministic = True`` (for a seeded run) and then calls
    ``main_worker(...)`` of this file in the same process, which sets ``cudnn.benchmark = True``:
    ``(det, call)`` for a direct call (up to ``depth`` functions up) made after the flag, in a branch
    the flag's ``if`` does not exclude. A function only handed to ``mp.spawn`` starts in a fresh
    process that never saw the flag: not followed."""
    func = ctx.function_of(bench)
    seen: set[int] = set()
    for _ in range(depth):
        if func is None or func.__class__ is ast.Lambda or id(func) in seen:
            return None
        seen.add(id(func))
        calls = [c for c in ctx.calls_named(func.name) if c.func.__class__ is ast.Name and not ctx.contains(func, c)]
        for call in calls:
            scope = ctx.scope_of(call)
            for det in dets:
                if ctx.scope_of(det) is scope and (det.lineno, det.col_offset) < (call.lineno, call.col_offset) \
                        and not exclusive(ctx, det, call):
                    return det, call
        func = ctx.function_of(calls[0]) if len(calls) == 1 else None
    return None


class BenchmarkAndDeterministic(Rule):
    code = "TW302"
    name = "benchmark-with-deterministic"
    triggers = ("deterministic", "benchmark")
    doc = """\
What it flags
  `torch.backends.cudnn.benchmark = True` in the same function (or at module level) as
  `torch.backends.cudnn.deterministic = True`, unless the two are in different branches of
  one `if`. Also `cudnn.benchmark = True` after a call, in the same function or script, of a
  seeding helper of the project (`seed_everything(seed)` from its utils, defined once) that sets
  `cudnn.deterministic = True` in its body under no `if`: the later flag undoes what the helper
  asked for. And `cudnn.benchmark = True` in a function of the file that is called (directly, up
  to two levels) after `cudnn.deterministic = True` was set: `main()` setting the flag for a
  seeded run, then calling `main_worker(gpu, ngpus, args)`, which turns benchmark on. A worker
  only started with `mp.spawn(main_worker, ...)` runs in a fresh process that never saw the flag:
  not followed.

Why it matters
  Benchmark mode times several convolution algorithms and keeps the fastest, and which one
  wins can differ between runs and machines; some of them are not deterministic. Asking for
  both means the speed setting quietly defeats the reproducibility one: results still differ
  from run to run.

Example
  torch.backends.cudnn.deterministic = True
  torch.backends.cudnn.benchmark = True            # TW302

Fix
  For reproducible runs set `benchmark = False` (and see TW305); for speed drop the
  deterministic flag. `torchwise.seed_everything(seed, deterministic=True)` sets a consistent
  combination.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        benches = cudnn_flag_assignments(ctx, "benchmark")
        if not benches:
            return
        dets = cudnn_flag_assignments(ctx, "deterministic")
        for bench in benches:
            for det in dets:
                if ctx.scope_of(bench) is not ctx.scope_of(det) or exclusive(ctx, bench, det):
                    continue
                yield ctx.finding(
                    self.code, bench,
                    f"cudnn.benchmark=True defeats cudnn.deterministic=True (line {det.lineno}): the chosen algorithms vary between runs",
                    suggestion="set cudnn.benchmark = False for reproducible runs",
                )
                break
            else:
                same = any(ctx.scope_of(bench) is ctx.scope_of(d) for d in dets)
                seeded = _seeded_deterministic(ctx, bench) if not same else None
                caller = _deterministic_caller(ctx, bench, dets) if seeded is None and not same and dets else None
                if caller is not None:
                    det, call = caller
                    yield ctx.finding(
                        self.code, bench,
                        f"cudnn.benchmark=True defeats cudnn.deterministic=True (line {det.lineno}), set before "
                        f"{ctx.text(call.func)}() is called (line {call.lineno}): the chosen algorithms vary between runs",
                        suggestion="set cudnn.benchmark = False for reproducible runs",
                    )
                elif seeded is not None:
                    yield ctx.finding(
                        self.code, bench,
                        f"cudnn.benchmark=True defeats the cudnn.deterministic=True that {ctx.text(seeded.func)}() "
                        f"(line {seeded.lineno}) set: the chosen algorithms vary between runs",
                        suggestion="set cudnn.benchmark = False for reproducible runs",
                    )


RULE = BenchmarkAndDeterministic()
