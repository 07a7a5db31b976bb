"""Host round trips in a module's ``forward`` (TW207): the labels copied to the host to build a
tensor there, which the same ``forward`` then moves back to the device - a label-smoothing loss's
``targets = torch.zeros(log_probs.size()).scatter_(1, targets.unsqueeze(1).cpu(), 1)`` followed by
``if self.use_gpu: targets = targets.cuda()``. The ``.cpu()`` is there because the labels come on
the accelerator: it waits for the GPU every forward pass (build the tensor on the labels' device
instead: ``torch.zeros_like(log_probs).scatter_(1, targets.unsqueeze(1), 1)``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.forwardreads import from_inputs
from torchwise.lint.semantics.once import forward_path_function

_BACK = frozenset({"cuda", "to"})


def forward_round_trips(ctx: Context) -> list[tuple[AST, AST, str]]:
    """``(the .cpu() call, the forward, description)`` for each such round trip of the file."""
    if ".cpu()" not in ctx.source or "def forward" not in ctx.source:
        return []
    out = []
    for call in ctx.calls_named("cpu"):
        if call.args or call.keywords or call.func.__class__ is not ast.Attribute:
            continue
        stmt = ctx.statement_of(call)
        func = ctx.function_of(call)
        if func is None or func.name != "forward" or stmt.__class__ is not ast.Assign or len(stmt.targets) != 1 \
                or stmt.targets[0].__class__ is not ast.Name or ctx.parent(call).__class__ is ast.Attribute:
            continue  # (x.cpu().numpy(): a copy to the host of its own, semantics.forwardreads)
        klass = ctx.parent(func)
        if klass.__class__ is not ast.ClassDef or not any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)):
            continue
        name = stmt.targets[0].id
        if _moved_back(ctx, func, stmt, name) and from_inputs(ctx, call.func.value, func) \
                and forward_path_function(ctx, call) is not None:
            out.append((call, func, "a host round trip (.cpu() of the inputs, moved back to the device)"))
    return out


def _moved_back(ctx: Context, func: AST, stmt: AST, name: str) -> bool:
    """A later statement of ``func`` rebinds ``name`` to ``name.cuda()`` / ``name.to(...)``."""
    for node in ctx.walk_body(func.body):
        if node.__class__ is ast.Assign and node.lineno > stmt.lineno and len(node.targets) == 1 \
                and node.targets[0].__class__ is ast.Name and node.targets[0].id == name:
            value = node.value
            return value.__class__ is ast.Call and last_name(value.func) in _BACK and value.func.__class__ is ast.Attribute \
                and value.func.value.__class__ is ast.Name and value.func.value.id == name
    return False
