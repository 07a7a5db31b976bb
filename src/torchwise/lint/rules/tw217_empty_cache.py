"""TW217: ``torch.cuda.empty_cache()`` inside the training loop."""

from __future__ import annotations

from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.steps import hot_loop_of, in_except_handler, runs_periodically


class EmptyCacheInLoop(Rule):
    code = "TW217"
    name = "empty-cache-in-loop"
    triggers = ("empty_cache",)
    doc = """\
What it flags
  `torch.cuda.empty_cache()` called inside the loop that runs `backward()` or an optimizer
  `step()` every pass. Left alone: a call under a periodic test (`if step % 500 == 0:`, e.g.
  after deleting a validation pipeline) and one in an `except` clause (recovery after an
  out-of-memory error): neither runs every step.

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
        for call in ctx.calls_to("torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"):
            loop = hot_loop_of(ctx, call)
            if loop is None or runs_periodically(ctx, call) or in_except_handler(ctx, call):
                continue  # not every step: once per interval, or only on the error path
            yield ctx.finding(
                self.code, call,
                f"empty_cache() in the training loop (line {loop.lineno}) forces slow re-allocation every step and frees nothing PyTorch would not reuse",
                suggestion="remove it; lower peak memory with a smaller batch, checkpointing or AMP",
            )


RULE = EmptyCacheInLoop()
