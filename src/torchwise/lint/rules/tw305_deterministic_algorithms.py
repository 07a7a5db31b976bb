"""TW305: ``cudnn.deterministic = True`` without ``torch.use_deterministic_algorithms(True)``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.backends import cudnn_flag_assignments
from torchwise.lint.semantics.files import in_demo_main
from torchwise.lint.semantics.optiondefaults import option_default


class PartialDeterminism(Rule):
    code = "TW305"
    name = "partial-determinism"
    triggers = ("deterministic",)
    doc = """\
What it flags
  `torch.backends.cudnn.deterministic = True`, or set from an option that is on by default
  (`= args.torch_deterministic` with `add_argument("--torch-deterministic", default=True)` in
  the file, `= config.CUDNN.DETERMINISTIC` where a module of the project assigns
  `config.CUDNN.DETERMINISTIC = True`), in a file that never calls
  `torch.use_deterministic_algorithms(...)`; also an option whose default lint cannot read (a
  parameter `cfg`, a YAML file). Not flagged: an option off by default (`store_true`,
  `config.CUDNN.DETERMINISTIC = False` in the config module): the project does not ask for
  determinism unless a user turns it on.

Why it matters
  The cuDNN flag covers cuDNN convolutions only. Many other CUDA kernels - scatter/index_add
  with atomics, some pooling and interpolation backward passes, cuBLAS with several
  workspaces - remain nondeterministic, so results still vary between runs.
  `use_deterministic_algorithms(True)` switches every operation to a deterministic
  implementation or raises where none exists; for cuBLAS it also needs the environment
  variable `CUBLAS_WORKSPACE_CONFIG=:4096:8` (or `:16:8`) set before CUDA starts.

Example
  torch.backends.cudnn.deterministic = True        # TW305: the rest stays nondeterministic

Fix
  `torch.use_deterministic_algorithms(True)` plus
  `os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"` at start-up, or
  `torchwise.seed_everything(seed, deterministic=True)`, which sets all of it.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        dets = cudnn_flag_assignments(ctx, "deterministic", literal_only=False)
        if not dets or ctx.calls_to("torch.use_deterministic_algorithms", "torch.set_deterministic_debug_mode"):
            return
        for node in dets:
            if in_demo_main(ctx, node):
                continue  # a smoke test that prints a shape: nothing to reproduce
            if node.value.__class__ is not ast.Constant and option_default(ctx, node.value) is False:
                continue  # an option that is off by default: nothing asks for determinism
            when = "" if node.value.__class__ is ast.Constant else f" (when {ctx.text(node.value)} is on)"
            yield ctx.finding(
                self.code, node,
                f"cudnn.deterministic covers cuDNN only; other CUDA kernels stay nondeterministic{when}",
                suggestion='also call torch.use_deterministic_algorithms(True) and set CUBLAS_WORKSPACE_CONFIG=":4096:8"',
            )


RULE = PartialDeterminism()
