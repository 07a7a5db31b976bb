"""Loops that run once per batch of an evaluation or inference pass (TW217): the innermost loop
around a node when

* it iterates a data loader (``for i, item in enumerate(val_loader):``, ``for x, y in
  tqdm(self.test_loader):``, any name ending in ``loader``), or
* it runs a network on its own level (``ret = net(ray_o, ray_d, ...)``, not in a loop nested in it)
  and it, or a loop around it in the same function, walks the data in pieces: ``range(len(xs))``,
  ``range(0, n, chunk)``, ``torch.split(...)``/``.split(...)``/``.chunk(...)`` - a renderer's
  chunks, a long sequence's windows.

Not a loop over epochs (``for epoch in ...``), over a literal list (a benchmark's batch sizes), or
whose network is chosen by the loop (``for net in nets:``, ``models[i](x)``): emptying the cache
between models or settings is what the advice allows."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.models import is_module_instance

_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "trange"})
_PIECES = frozenset({"split", "chunk", "array_split"})


def _iterated(node: AST) -> AST:
    while node.__class__ is ast.Call and node.args and last_name(node.func) in _WRAPPERS - {"trange"}:
        node = node.args[0]
    return node


def _loader_loop(loop: AST) -> bool:
    it = _iterated(getattr(loop, "iter", None))
    name = last_name(it) if it is not None and it.__class__ in (ast.Name, ast.Attribute) else None
    return name is not None and name.lower().endswith("loader")


def _in_pieces(loop: AST) -> bool:
    it = _iterated(getattr(loop, "iter", None))
    if it is None or it.__class__ is not ast.Call:
        return False
    name = last_name(it.func)
    if name in _PIECES:
        return True
    if name not in ("range", "trange"):
        return False
    if len(it.args) == 3:
        return True  # range(0, n_rays, chunk)
    return len(it.args) == 1 and it.args[0].__class__ is ast.Call and last_name(it.args[0].func) == "len"


def _targets(loop: AST) -> set[str]:
    target = getattr(loop, "target", None)
    return {n.id for n in ast.walk(target) if n.__class__ is ast.Name} if target is not None else set()


def _runs_network(ctx: Context, loop: AST) -> bool:
    """A network run on the loop's own level, not picked by the loop's variable."""
    chosen = _targets(loop)
    for node in ctx.walk_body(loop.body):
        if node.__class__ is not ast.Call or node.func.__class__ not in (ast.Name, ast.Attribute):
            continue
        if ctx.enclosing_loops(node)[:1] != [loop]:
            continue
        if any(n.__class__ is ast.Name and n.id in chosen for n in ast.walk(node.func)):
            continue
        if is_module_instance(ctx, node.func, node):
            return True
    return False


def _epoch_loop(ctx: Context, loop: AST) -> bool:
    text = (ctx.text(getattr(loop, "target", loop)) + " " + ctx.text(getattr(loop, "iter", loop))).lower()
    return "epoch" in text


def batch_pass_loop(ctx: Context, node: AST) -> AST | None:
    """The loop around ``node`` that runs once per batch or piece of data (module doc), or None."""
    loops = ctx.enclosing_loops(node)
    if not loops or loops[0].__class__ is not ast.For or _epoch_loop(ctx, loops[0]):
        return None
    loop = loops[0]
    if _loader_loop(loop):
        return loop
    if any(_in_pieces(x) for x in loops) and _runs_network(ctx, loop):
        return loop
    return None


__all__ = ["batch_pass_loop"]
