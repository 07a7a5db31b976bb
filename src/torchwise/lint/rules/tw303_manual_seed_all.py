"""TW303: ``torch.cuda.manual_seed`` seeds only the current GPU."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.project.text import clock_seed
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.entryseeds import importers_seed_torch
from torchwise.lint.semantics.gpuseeds import cuda_branch_seeds, multi_gpu


class CudaManualSeed(Rule):
    code = "TW303"
    name = "cuda-manual-seed-one-device"
    triggers = ("manual_seed",)
    fixable = True
    doc = """\
What it flags
  `torch.cuda.manual_seed(s)` in a function (or module level) that does not also call
  `torch.manual_seed` or `torch.cuda.manual_seed_all`, which seed every device (in a
  multi-GPU script, a `torch.manual_seed` only in the `else` of the GPU check covers nothing). Not when
  the seed is the clock (`torch.cuda.manual_seed(int(time.time()))`, or `args.seed =
  time.time()` in the same file): it differs on every run, so no reproducibility is intended.
  Nor in a module that is no script (a model file calling `torch.cuda.manual_seed(233)` in its
  `__init__`) when every entry script of the project that imports it, directly or through other
  modules, calls `torch.manual_seed(s)` outside any `if`: every GPU is seeded already, the CUDA
  seed is redundant.

Why it matters
  `torch.cuda.manual_seed` seeds the generator of the current device only. In a process that
  uses several GPUs the others keep unseeded generators, so dropout masks and random tensors
  created there differ between runs.

Example
  torch.cuda.manual_seed(42)                      # TW303

Fix
  `torch.cuda.manual_seed_all(42)`, or simply `torch.manual_seed(42)`, which seeds the CPU
  and every CUDA device. `torchwise lint --fix` renames the call; on a single GPU it does the
  same as before.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        calls = ctx.calls_to("torch.cuda.manual_seed")
        if not calls:
            return
        covering = ctx.calls_to("torch.manual_seed", "torch.cuda.manual_seed_all")
        split = cuda_branch_seeds(ctx) if multi_gpu(ctx) else []
        covered = {id(ctx.scope_of(c)) for c in covering}
        for call in calls:
            if id(ctx.scope_of(call)) in covered and call not in split:
                continue  # (not when torch.manual_seed runs only on the CPU branch of a multi-GPU script)
            if call.args and clock_seed(ctx.source, ctx.text(call.args[0])):
                continue  # seeded with the clock (args.seed = time.time()): no reproducibility intended
            if importers_seed_torch(ctx):
                continue  # a model module whose every script seeds torch (every GPU) unconditionally: redundant
            fix = None
            if call.func.__class__ is ast.Attribute:
                edit = ctx.replace_attr(call.func, "manual_seed_all")
                if edit is not None:
                    fix = Fix("use torch.cuda.manual_seed_all", (edit,))
            yield ctx.finding(
                self.code, call,
                "torch.cuda.manual_seed seeds only the current GPU",
                suggestion="use torch.cuda.manual_seed_all (or torch.manual_seed, which seeds every device)",
                fix=fix,
                end_node=call.func,
            )


RULE = CudaManualSeed()
