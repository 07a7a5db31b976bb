"""TW512: an asynchronous collective whose work handle is never waited on."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, keyword
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule

_COLLECTIVES = tuple(f"torch.distributed.{n}" for n in (
    "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "broadcast",
    "reduce", "all_to_all", "all_to_all_single", "gather", "scatter", "barrier",
))
_ALWAYS_ASYNC = ("torch.distributed.isend", "torch.distributed.irecv")


class UnwaitedCollective(Rule):
    code = "TW512"
    name = "unwaited-async-collective"
    triggers = ("async_op", "isend", "irecv")
    doc = """\
What it flags
  `dist.all_reduce(..., async_op=True)` (any collective) or `dist.isend`/`dist.irecv` whose
  returned work handle is thrown away, or bound to a name that is never used afterwards (no
  `.wait()`, not stored, passed on or returned).

Why it matters
  An asynchronous collective only starts the communication. Until `work.wait()` the result
  tensor may still be incomplete and must not be read or changed; code that carries on reads
  partial sums or races the transfer, which gives wrong numbers or hangs, and only sometimes.

Example
  import torch.distributed as dist
  dist.all_reduce(grad, async_op=True)                 # TW512
  grad /= world_size

Fix
  Keep the handle and wait before using the tensor: `work = dist.all_reduce(grad, async_op=True)`,
  other work, then `work.wait()`; or drop `async_op=True`.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_to(*_COLLECTIVES, *_ALWAYS_ASYNC):
            if ctx.qualname(call.func) not in _ALWAYS_ASYNC:
                kw = keyword(call, "async_op")
                if kw is None or not (kw.value.__class__ is ast.Constant and kw.value.value is True):
                    continue
            parent = ctx.parent(call)
            if parent.__class__ is ast.Expr:
                yield self._finding(ctx, call, "its work handle is discarded")
            elif parent.__class__ is ast.Assign and len(parent.targets) == 1 and parent.targets[0].__class__ is ast.Name:
                name = parent.targets[0].id
                if not self._used_later(ctx, name, parent):
                    yield self._finding(ctx, call, f"{name} is never waited on")

    @staticmethod
    def _used_later(ctx: Context, name: str, assign: ast.Assign) -> bool:
        scope = ctx.scope_of(assign)
        body = [scope.body] if scope.__class__ is ast.Lambda else scope.body
        for node in ctx.walk_body(body, into_defs=True):
            if node.__class__ is ast.Name and node.id == name and node.ctx.__class__ is ast.Load:
                return True
        return False

    def _finding(self, ctx: Context, call: ast.Call, why: str) -> Finding:
        return ctx.finding(self.code, call, f"asynchronous {ctx.text(call.func)}(): {why}, so the tensor may be used before the transfer ends",
                           suggestion="keep the work handle and call .wait() before using the tensor", end_node=call.func)


RULE = UnwaitedCollective()
