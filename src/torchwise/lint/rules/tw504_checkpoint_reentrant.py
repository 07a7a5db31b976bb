"""TW504: ``torch.utils.checkpoint.checkpoint`` without an explicit ``use_reentrant``."""

from __future__ import annotations

from typing import Iterator

from torchwise.lint.engine import Context, has_star_args, keyword
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.files import in_compat_fallback

_CHECKPOINTS = ("torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential")
_NEW_API = lazy_compile(r"\buse_reentrant\b")


class CheckpointReentrant(Rule):
    code = "TW504"
    name = "checkpoint-use-reentrant"
    triggers = ("checkpoint",)
    fixable = False  # its only fix may change behaviour: offered with --unsafe-fixes
    per_call = True  # the warning and the reentrant variant's limits matter only where the call runs (R5)
    doc = """\
What it flags
  `torch.utils.checkpoint.checkpoint(...)` (or `checkpoint_sequential`) called without the
  `use_reentrant` argument. Left alone: the old-torch branch of version-dependent code (under
  `if is_torch_version(">=", "1.11.0"): ... else:`, in an `except TypeError:` fallback, or
  beside a branch that passes `use_reentrant`), since torch before 1.11 does not accept it;
  and a call under an option nothing in the project sets (`if getattr(self.config,
  "gradient_checkpointing", False) and self.training:` in a vendored Hugging Face modeling file
  when no file, config or script names `gradient_checkpointing` but such reads).

Why it matters
  PyTorch warns on every such call and plans to change the default. The old reentrant variant
  does not support `torch.autograd.grad`, keyword arguments to the function, or inputs that do
  not require grad (gradients silently become None for the checkpointed part); the
  non-reentrant one has none of these limits.

Example
  h = torch.utils.checkpoint.checkpoint(block, x)      # TW504

Fix
  Pass `use_reentrant=False` (recommended) or `use_reentrant=True` to keep the old behaviour.
  `--unsafe-fixes` adds `use_reentrant=False`: unsafe because it changes which variant runs.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_to(*_CHECKPOINTS):
            if keyword(call, "use_reentrant") is not None or has_star_args(call):
                continue
            if in_compat_fallback(ctx, call, _NEW_API):
                continue  # the branch for torch versions that do not know the argument
            edit = ctx.add_keyword(call, "use_reentrant=False")
            fix = Fix("pass use_reentrant=False", (edit,), safe=False,
                      why_unsafe="switches from the reentrant variant (the current default) to the non-reentrant one") if edit else None
            yield ctx.finding(self.code, call, "checkpoint() without use_reentrant: pass it explicitly (False is recommended)",
                              suggestion="pass use_reentrant=False", fix=fix, end_node=call.func)


RULE = CheckpointReentrant()
