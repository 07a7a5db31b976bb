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

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.cpuoptions import explicit_cpu_option
from torchwise.lint.semantics.factorynames import TYPED_PREFIXES
from torchwise.lint.semantics.fallback import own_cpu_choice

# calls that need a CUDA GPU (they raise "Torch not compiled with CUDA enabled" / "no CUDA GPUs")
_CUDA_CALLS = frozenset({"synchronize", "current_device"})
_CUDA_TYPED = lazy_compile(rf"(?:{'|'.join(TYPED_PREFIXES)})Tensor$")


def promised_cpu_run(ctx: Context) -> str:
    """See the module doc: ``"option"`` when the file offers a CPU run by an option of its own,
    ``"handed"`` when it only takes the device a CPU-driven caller hands it, else ``""``."""
    if "add_argument(" in ctx.source and explicit_cpu_option(ctx.source):
        return "option"
    project = ctx.project
    return "handed" if len(project.files) > 1 and ctx.path in project.cpu_driven and not own_cpu_choice(ctx) else ""


def unhanded_lines(ctx: Context) -> set[int]:
    """Lines of a file handed its device where a hard-coded CUDA line is not the CPU run's: the
    module's ``if __name__ == "__main__":`` block (its own smoke test, which importers never run)
    and the signatures of its functions (``def mask(h, w, device=torch.device("cuda"))``: a default
    the callers replace with the device they hand, ``device=x.device``)."""
    lines: set[int] = set()
    for stmt in ctx.tree.body if "__main__" in ctx.source else ():
        if stmt.__class__ is ast.If and "__name__" in ctx.text(stmt.test) and "__main__" in ctx.text(stmt.test):
            lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    for f in ctx.nodes.get(ast.FunctionDef, ()):
        if f.args.defaults or f.args.kw_defaults:
            lines.update(range(f.lineno, f.body[0].lineno))
    return lines


def cuda_calls(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``torch.cuda.synchronize()``, ``torch.cuda.current_device()`` and the typed constructors
    (``torch.cuda.FloatTensor(n, c)``): each needs a CUDA GPU, with its qualified name."""
    if "cuda." not in ctx.source:
        return
    for call in ctx.nodes.get(ast.Call, ()):
        func = call.func
        if func.__class__ is not ast.Attribute or func.attr not in _CUDA_CALLS and not func.attr.endswith("Tensor"):
            continue
        q = ctx.qualname(func)
        if q is not None and q.startswith("torch.cuda.") and (q[11:] in _CUDA_CALLS or _CUDA_TYPED.match(q[11:])):
            yield call, q


def set_device_calls(ctx: Context) -> Iterator[ast.Call]:
    """``torch.cuda.set_device(args.gpu)``: it raises on a build without CUDA."""
    for call in ctx.calls_named("set_device") if "set_device" in ctx.source else ():
        if ctx.qualname(call.func) == "torch.cuda.set_device":
            yield call


__all__ = ["cuda_calls", "unhanded_lines", "promised_cpu_run", "set_device_calls"]
