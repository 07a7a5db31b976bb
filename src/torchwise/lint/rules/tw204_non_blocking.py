"""TW204: copies of pinned batches to the GPU without ``non_blocking=True``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, keyword, last_name
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.devices import device_move_target

DATALOADER = "torch.utils.data.DataLoader"
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "trange", "prefetch"})


def pinned_loader_names(ctx: Context) -> set[str]:
    """Names (last identifiers) bound to ``DataLoader(..., pin_memory=True)`` in this file."""
    names: set[str] = set()
    for call in ctx.calls_to(DATALOADER):
        pin = argument(call, "pin_memory", 7)
        if not (pin is not None and pin.__class__ is ast.Constant and pin.value is True):
            continue
        parent = ctx.parent(call)
        if parent.__class__ is ast.Assign:
            for t in parent.targets:
                n = last_name(t)
                if n:
                    names.add(n)
        elif parent.__class__ is ast.AnnAssign:
            n = last_name(parent.target)
            if n:
                names.add(n)
    return names


def _loop_source(it: ast.AST) -> ast.AST:
    while it.__class__ is ast.Call and last_name(it.func) in _WRAPPERS and it.args:
        it = it.args[0]
    return it


def _from_loop(ctx: Context, expr: ast.AST, loop: ast.AST, depth: int = 3) -> bool:
    """Does ``expr`` hold (part of) the batch that ``loop`` takes from its loader?"""
    while expr.__class__ is ast.Subscript:
        expr = expr.value
    if expr.__class__ is not ast.Name or depth <= 0:
        return False
    b = ctx.binding_at(expr.id, expr)
    if b is None:
        return False
    if b.kind == "for":
        return b.node is loop
    if b.kind in ("assign", "unpack") and b.value is not None:
        return _from_loop(ctx, b.value, loop, depth - 1)
    return False


class BlockingCopyFromPinned(Rule):
    code = "TW204"
    name = "blocking-copy-from-pinned"
    triggers = ("pin_memory",)
    fixable = True
    doc = """\
What it flags
  In a loop over a DataLoader created in this file with `pin_memory=True`, copies of the
  batch to a device (`x.to(device)`, `x.cuda()`) that do not pass `non_blocking=True`.

Why it matters
  Pinning the batch only pays off when the copy is asynchronous. A blocking copy makes the
  host wait for the transfer to finish before it can queue the next kernels, so the copy and
  the computation never overlap.

Example
  loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True)
  for x, y in loader:
      x = x.to(device)                    # TW204

Fix
  `x = x.to(device, non_blocking=True)`. Host-to-device copies from pinned memory are safe
  to make non-blocking: later work on the same stream waits for them. `torchwise lint --fix`
  adds the argument.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        names = pinned_loader_names(ctx)
        if not names:
            return
        loops = []
        for loop in [*ctx.nodes.get(ast.For, ()), *ctx.nodes.get(ast.AsyncFor, ())]:
            src = _loop_source(loop.iter)
            if last_name(src) in names:
                loops.append(loop)
        if not loops:
            return
        for call in ctx.calls_named("to", "cuda"):
            target = device_move_target(ctx, call)
            if target is None or keyword(call, "non_blocking") is not None:
                continue
            if call.func.attr == "to" and len(call.args) > 1:
                continue  # .to(device, dtype, non_blocking...) positional forms: leave alone
            recv = call.func.value
            loop = next((l for l in ctx.enclosing_loops(call) if l in loops), None)
            if loop is None or not _from_loop(ctx, recv, loop):
                continue
            edit = ctx.add_keyword(call, "non_blocking=True")
            yield ctx.finding(
                self.code, call,
                "copy of a pinned batch without non_blocking=True blocks the host until it finishes",
                suggestion="pass non_blocking=True",
                fix=Fix("add non_blocking=True", (edit,)) if edit is not None else None,
            )


RULE = BlockingCopyFromPinned()
