"""Where a model is wrapped in ``DistributedDataParallel`` and where gradients accumulate over
micro-steps (TW215): the wrappers (PyTorch's and apex's, also behind a helper of the project:
``model = apply_data_parallel_wrapper(config, model)`` whose body builds the wrapper), and
accumulation over the chunks of a batch (``for chunk, target in zip(data_chunks,
target_chunks): ... loss.backward()`` with one ``optimizer.step()`` after that loop)."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.projectcode import def_bodies
from torchwise.lint.semantics.steps import optimizer_steps, runs_periodically

DDPS = ("torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
        "apex.parallel.DistributedDataParallel")
_DEF = lazy_compile(r"^[ \t]*def[ \t]+(\w+)[ \t]*\(", re.M)


def wraps_through_helper(ctx: Context) -> bool:
    """Does this file call a function of the project whose body builds a
    ``DistributedDataParallel`` (``apply_data_parallel_wrapper(config, model)``)?"""
    names = _wrapping_functions(ctx)
    return any(name in ctx.calls_by_name for name in names)


def _wrapping_functions(ctx: Context) -> frozenset[str]:
    found = ctx.project.answers.get("ddpwrap:helpers")
    if found is None:
        out = set()
        for _, text in ctx.project.files:
            if "DistributedDataParallel(" not in text:
                continue
            for name in set(_DEF.findall(text)):
                if any("DistributedDataParallel(" in body for body in def_bodies(text, name)):
                    out.add(name)
        found = ctx.project.answers["ddpwrap:helpers"] = frozenset(out)
    return found


def inner_accumulation(ctx: Context, bw: ast.Call, loops: list[AST]) -> bool:
    """The backward pass runs in an inner loop over parts of the batch the outer loop took
    (its iterable names what the outer pass bound: ``zip(data_chunks, target_chunks)`` with
    ``data_chunks, target_chunks = subdivide_batch(config, data, targets)``), with no optimizer
    step inside it, and the outer loop steps the optimizer after the inner loop, every pass."""
    if len(loops) < 2 or loops[0].__class__ is not ast.For:
        return False
    inner, outer = loops[0], loops[1]
    if any(inner in ctx.enclosing_loops(s) for s in optimizer_steps(ctx)):
        return False
    end = inner.end_lineno or inner.lineno
    after = [s for s in optimizer_steps(ctx) if ctx.enclosing_loops(s)[:1] == [outer] and s.lineno > end
             and not runs_periodically(ctx, s)]
    if not after:
        return False
    bound = _bound_in_pass(ctx, outer, inner)
    return any(n.__class__ is ast.Name and n.id in bound for n in ast.walk(inner.iter))


def _bound_in_pass(ctx: Context, outer: AST, inner: AST) -> set[str]:
    """Names the outer loop binds before ``inner``: its target and assignments in its body."""
    names = {n.id for n in ast.walk(outer.target) if n.__class__ is ast.Name} if outer.__class__ is ast.For else set()
    for stmt in outer.body:
        if stmt.lineno >= inner.lineno:
            break
        for n in ast.walk(stmt):
            if n.__class__ in (ast.Assign, ast.AnnAssign):
                targets = n.targets if n.__class__ is ast.Assign else [n.target]
                names |= {t.id for tg in targets for t in ast.walk(tg) if t.__class__ is ast.Name}
    return names
