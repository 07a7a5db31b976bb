"""Files that promise a CPU run they do not keep (METHOD R17): the device is the user's or the caller's.

Two shapes of a file with a device choice somewhere in reach, where every hard-coded CUDA line
outside a device flag breaks the CPU run:

- the file parses an option whose only purpose is a CPU run (``--no_cuda``, ``--cpu``, a
  ``--device`` defaulting to ``"cuda"``) and still moves its model with a bare ``.cuda()``;
- the file's only device handling is a ``device`` parameter (``def __init__(self, model,
  device)``, then ``x.to(self.device)``), and a CPU run of the project reaches it
  (:mod:`torchwise.lint.project.cpudriven`: its entry point falls back to ``"cpu"`` and imports
  it, also by a name built at run time): the device it is handed may be the CPU, and a
  ``device="cuda"`` or ``.cuda()`` beside the ``.to(self.device)`` moves breaks that run.
"""

from __future__ import annotations

from torchwise.lint.engine import Context
from torchwise.lint.project.cpudriven import explicit_cpu_option
from torchwise.lint.semantics.fallback import own_cpu_choice


def promised_cpu_run(ctx: Context) -> bool:
    """See the module doc: the file offers a CPU run by an option of its own, or only takes the
    device a CPU-driven caller hands it."""
    if "add_argument(" in ctx.source and explicit_cpu_option(ctx.source):
        return True
    project = ctx.project
    return len(project.files) > 1 and ctx.path in project.cpu_driven and not own_cpu_choice(ctx)


__all__ = ["promised_cpu_run"]
