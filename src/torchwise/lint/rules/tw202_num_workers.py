"""TW202: a DataLoader that loads in the main process (``num_workers`` 0 or unset)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, has_star_args
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule

DATALOADER = "torch.utils.data.DataLoader"


class SynchronousDataLoader(Rule):
    code = "TW202"
    name = "dataloader-no-workers"
    triggers = ("DataLoader",)
    doc = """\
What it flags
  `torch.utils.data.DataLoader(...)` (under any import alias) whose `num_workers` is the
  literal 0 or is not given at all (by keyword or as the sixth positional argument). Calls
  that pass `**kwargs` are left alone, since the value may be in there.

Why it matters
  With no workers, every batch is read, decoded, augmented and collated in the training
  process, in between steps, while the GPU waits. Worker processes prepare the next batches
  in parallel with the step. The right count depends on the machine and the data, so it
  should be measured; too many workers can also be slower.

Example
  loader = DataLoader(train_set, batch_size=64, shuffle=True)     # TW202

Fix
  Pass `num_workers=N` (start near the number of cores per GPU), usually with
  `persistent_workers=True`; `torchwise tune` measures the best count for your data.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_to(DATALOADER):
            value = argument(call, "num_workers", 5)
            if value is None:
                if has_star_args(call):
                    continue
                message = "DataLoader without num_workers loads every batch in the training process"
            elif value.__class__ is ast.Constant and value.value == 0 and type(value.value) is int:
                message = "DataLoader with num_workers=0 loads every batch in the training process"
            else:
                continue
            yield ctx.finding(
                self.code, call, message,
                suggestion="set num_workers > 0 (measure the best count, e.g. with torchwise tune)",
                end_node=call.func,
            )


RULE = SynchronousDataLoader()
