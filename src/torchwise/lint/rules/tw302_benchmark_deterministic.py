"""TW302: ``cudnn.benchmark = True`` together with ``cudnn.deterministic = True``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
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


class BenchmarkAndDeterministic(Rule):
    code = "TW302"
    name = "benchmark-with-deterministic"
    triggers = ("deterministic",)
    doc = """\
What it flags
  `torch.backends.cudnn.benchmark = True` in the same function (or at module level) as
  `torch.backends.cudnn.deterministic = True`, unless the two are in different branches of
  one `if`.

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


RULE = BenchmarkAndDeterministic()
