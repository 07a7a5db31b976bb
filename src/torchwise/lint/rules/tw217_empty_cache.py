"""TW217: ``torch.cuda.empty_cache()`` inside the training loop."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.batchpasses import batch_pass_loop
from torchwise.lint.semantics.delegation import delegated_loop_of
from torchwise.lint.semantics.steps import hot_loop_of, in_except_handler, runs_periodically


class EmptyCacheInLoop(Rule):
    code = "TW217"
    per_call = True
    name = "empty-cache-in-loop"
    triggers = ("empty_cache",)
    doc = """\
What it flags
  `torch.cuda.empty_cache()` called inside the loop that runs `backward()` or an optimizer
  `step()` every pass, or that hands its training to a call every pass (an RL main loop
  calling `update_params(batch)`, which runs another module's `ppo_step(...)` on the batch the
  pass collected; `self.train_step(batch)`; a helper handed the loss and the optimizer).
  `torch` may come from a star import (`from utils import *`). Left alone: a call under a
  periodic test (`if step % 500 == 0:`, e.g. after deleting a validation pipeline), one in an
  `except` clause (recovery after an out-of-memory error), and one in a loop that calls a
  function training over a loader of its own (once per epoch): none runs every step.
  Also a call in a loop that runs once per batch of an evaluation or inference pass: a loop over
  a data loader (`for i, item in enumerate(val_loader):` after each validation batch), or a loop
  that runs a network itself while it or a loop around it walks the data in pieces
  (`range(len(chunks))`, `range(0, n, chunk)`, `torch.split(...)`: a renderer emptying the cache
  after every chunk). Not a loop over epochs, over a literal list of settings, or one whose
  network the loop picks (`for net in nets:`): emptying the cache between models or settings is
  the fix's own advice.

Why it matters
  The caching allocator keeps freed blocks to hand them out again on the next step without
  asking the driver. Emptying the cache returns them, so the next step has to allocate
  everything again through slow, synchronising `cudaMalloc` calls. It does not give the
  process more memory to work with: the blocks were already free for PyTorch to reuse.

Example
  for x, y in loader:
      ...
      optimizer.step()
      torch.cuda.empty_cache()              # TW217

Fix
  Remove it. To lower peak memory use a smaller batch, activation checkpointing or mixed
  precision; to share a GPU with another process, call it once between phases.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in _empty_cache_calls(ctx):
            loop = hot_loop_of(ctx, call) or delegated_loop_of(ctx, call)
            batches = batch_pass_loop(ctx, call) if loop is None else None
            if loop is None and batches is None or runs_periodically(ctx, call) or in_except_handler(ctx, call):
                continue  # not every step: once per interval, or only on the error path
            where = f"the training loop (line {loop.lineno})" if loop is not None else f"the loop over the data (line {batches.lineno})"
            yield ctx.finding(
                self.code, call,
                f"empty_cache() in {where} forces slow re-allocation every step and frees nothing PyTorch would not reuse",
                suggestion="remove it; lower peak memory with a smaller batch, checkpointing or AMP",
            )


def _empty_cache_calls(ctx: Context) -> list[ast.Call]:
    """``torch.cuda.empty_cache()`` calls; also spelled out where ``torch`` comes from a star import
    (``from utils import *``) that the file does not resolve."""
    found = list(ctx.calls_to("torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"))
    if "torch" not in ctx.imports and any(a.name == "*" for n in ctx.nodes.get(ast.ImportFrom, ()) for a in n.names):
        found += [c for c in ctx.calls_named("empty_cache") if ctx.text(c.func) == "torch.cuda.empty_cache"]
    return found


RULE = EmptyCacheInLoop()
