"""Loads in one branch of an ``if`` whose other branch decides (TW402): the GPU branch of
``if torch.cuda.is_available():`` restores where a GPU is, and a branch whose other side loads
with ``map_location`` is the GPU side of a choice - except the ``args.gpu is None`` side (no
single GPU picked: every GPU under DataParallel, or the CPU) in a file that offers a CPU run
(the ImageNet example's ``if args.gpu is None: checkpoint = torch.load(args.resume)``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, argument, last_name
from torchwise.lint.semantics.fallback import has_cpu_fallback


def other_branch_maps(ctx: Context, load: ast.Call) -> bool:
    """``if torch.cuda.is_available(): torch.load(f)``: the GPU branch restores where a GPU is
    (the ``else`` branch is the one that needs ``map_location``), also when its ``else`` loads
    with ``map_location``. Not the branch of ``if args.gpu is None:`` (no GPU chosen: every GPU,
    or the CPU) in a file that offers a CPU run."""
    for if_node, in_body in ctx.enclosing_ifs(load):
        if in_body and ctx.qualname(getattr(if_node.test, "func", None) or if_node.test) == "torch.cuda.is_available":
            return True
        if in_body and _no_gpu_chosen(if_node.test) and has_cpu_fallback(ctx):
            continue
        other = if_node.orelse if in_body else if_node.body
        for stmt in other if isinstance(other, list) else [other]:
            for node in ast.walk(stmt):
                if node.__class__ is ast.Call and ctx.qualname(node.func) == "torch.load" and (
                        argument(node, "map_location", 1) is not None):
                    return True
    return False


def _no_gpu_chosen(test: ast.AST) -> bool:
    """``args.gpu is None``: the run picked no single GPU."""
    return test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.Is \
        and test.comparators[0].__class__ is ast.Constant and test.comparators[0].value is None \
        and "gpu" in (last_name(test.left) or "").lower()
