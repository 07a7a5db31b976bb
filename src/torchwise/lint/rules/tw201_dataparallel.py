"""TW201: ``nn.DataParallel`` instead of ``DistributedDataParallel``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


def _wraps_for_caller(ctx: Context, call: ast.Call) -> bool:
    """``def wrap(module): return DataParallel(module, ...)``: the module comes from the caller."""
    parent = ctx.parent(call)
    returned_name = None
    if parent.__class__ is ast.Assign and len(parent.targets) == 1 and parent.targets[0].__class__ is ast.Name:
        returned_name = parent.targets[0].id  # model = DataParallel(model) ... return model
    elif parent.__class__ is not ast.Return:
        return False
    func = ctx.scope_of(call)
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "module"), None)
    if first is None or first.__class__ is not ast.Name or first.id not in params:
        return False
    if returned_name is None:
        return True
    return any(
        n.__class__ is ast.Return and n.value is not None and n.value.__class__ is ast.Name and n.value.id == returned_name
        for n in ctx.walk_body(func.body)
    )


class DataParallelUsed(Rule):
    code = "TW201"
    name = "data-parallel"
    triggers = ("DataParallel", "data_parallel")
    doc = """\
What it flags
  Wrapping a model in `torch.nn.DataParallel` (however it was imported: `nn.DataParallel`,
  `from torch.nn.parallel import DataParallel as DP`...) and calls of the functional
  `torch.nn.parallel.data_parallel`. `isinstance` checks are not flagged.

Why it matters
  DataParallel runs one Python process that drives every GPU from threads: the GIL
  serialises the work, inputs are scattered and outputs gathered through GPU 0 on every
  step, and the model is replicated each step. GPU 0 runs out of memory first and scaling
  stops after a few devices. DistributedDataParallel runs one process per GPU, overlaps the
  gradient all-reduce with the backward pass and is faster even on a single machine.

Example
  model = nn.DataParallel(model)                    # TW201

Fix
  Launch with `torchrun --nproc_per_node=N train.py`, call
  `torch.distributed.init_process_group()` and wrap with
  `DistributedDataParallel(model, device_ids=[local_rank])` (the torchwise Trainer does this).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_to("torch.nn.DataParallel", "torch.nn.parallel.data_parallel"):
            if _wraps_for_caller(ctx, call):
                continue  # a library helper that offers DataParallel to its caller, who chooses
            yield ctx.finding(
                self.code, call,
                "nn.DataParallel drives all GPUs from one process; DistributedDataParallel is faster and scales",
                suggestion="use DistributedDataParallel with one process per GPU (torchrun)",
                end_node=call.func,
            )


RULE = DataParallelUsed()
