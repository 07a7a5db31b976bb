"""Network runs in a training loop whose output only becomes a picture (TW104, METHOD R19):
``fake = net_G(sample_z).cpu()`` every ``sample_step`` steps, then ``grid = make_grid(fake)``,
``writer.add_image('sample', grid, step)``, ``save_image(grid, path)``; or ``save_image(G(z_fixed),
path)`` in place. Nothing backpropagates through the output, yet autograd records the whole
generation. Also a helper of the file that does this (``def sample_image(n_row, batches_done):``)
when the training loop calls it bare.

The output must go only to picture sinks (``save_image``, ``make_grid``, ``add_image(s)``,
``imsave``, ``imshow``, a visdom ``vis.image``/``vis.img``, ``wandb.Image``), through arithmetic,
methods (``.cpu()``, ``.detach()``, ``.data``), indexing, ``torch.cat``/``stack`` and names bound
from it (two steps); a run whose output also reaches a loss, a discriminator, a list or a return
(the training forward of a GAN, whose ``gen_imgs`` are saved besides) is left alone, as is one
under no_grad."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.models import is_module_instance
from torchwise.lint.semantics.steps import hot_loop_of, names_feeding_backward

_SINKS = frozenset({"save_image", "save_images", "make_grid", "add_image", "add_images", "add_video", "imsave", "imwrite",
                    "imshow", "image", "images", "img", "Image", "to_pil_image"})
_THROUGH = frozenset({"cat", "stack"})
_NEEDLES = ("save_image", "make_grid", "add_image", "imsave", "imwrite", "imshow", ".image(", ".images(", ".img(", "Image(",
            "to_pil_image")


def _consumer(ctx: Context, node: AST) -> tuple[str, AST | None]:
    """Where the value of ``node`` goes: ``("sink", call)``, ``("assign", stmt)`` or ``("other", None)``."""
    while True:
        p = ctx.parent(node)
        cls = p.__class__
        if cls is ast.Attribute and p.value is node or cls is ast.Subscript and p.value is node \
                or cls in (ast.BinOp, ast.UnaryOp, ast.List, ast.Tuple, ast.Starred):
            node = p
        elif cls is ast.Call and p.func is node:
            node = p  # fake.cpu(), fake.detach().clamp(-1, 1)
        elif cls is ast.Call and node in p.args:
            name = last_name(p.func)
            if name in _SINKS:
                return "sink", p
            if name not in _THROUGH:
                return "other", None
            node = p
        elif cls is ast.Assign and p.value is node:
            return "assign", p
        else:
            return "other", None


def _only_pictures(ctx: Context, node: AST, region: AST, depth: int = 2) -> bool:
    kind, where = _consumer(ctx, node)
    if kind == "sink":
        return True
    if kind != "assign" or depth <= 0 or any(t.__class__ is not ast.Name for t in where.targets):
        return False
    names = {t.id for t in where.targets}
    pos = (where.lineno, where.col_offset)
    uses = []
    for n in ctx.walk_body(region.body):
        if n.__class__ is ast.Name and n.id in names and (n.lineno, n.col_offset) > pos:
            if n.ctx.__class__ is not ast.Load:
                break  # rebound: later uses see another value
            uses.append(n)
    return bool(uses) and all(_only_pictures(ctx, u, region, depth - 1) for u in uses)


def _carried(ctx: Context, name: str, region: AST) -> bool:
    """Is the first occurrence of ``name`` in the loop body a read (a value carried from the pass before)?"""
    if region.__class__ not in (ast.For, ast.While, ast.AsyncFor):
        return False
    first = next((n for n in ctx.walk_body(region.body) if n.__class__ is ast.Name and n.id == name), None)
    return first is not None and first.ctx.__class__ is ast.Load


def _trained(ctx: Context, call: ast.Call, region: AST) -> bool:
    """The network ``call`` runs is trained in the loop (or, for a helper, in the loops that call
    it): the same callee runs in a statement that binds a name a backward pass starts from
    (``loss_g = -disc(gen(z)).mean()``) or runs the backward itself."""
    root = call.func
    while root.__class__ is ast.Attribute:
        root = root.value
    if root.__class__ is not ast.Name or root.id in ctx.imports:
        return False  # torch.argmax(...), F.interpolate(...): a library function, no network of the project
    b = ctx.binding_at(root.id, call)
    if b is not None and b.kind in ("def", "class", "import"):
        return False
    text = ctx.text(call.func)
    loops = [region] if region.__class__ is not ast.FunctionDef else [
        hot_loop_of(ctx, c) for c in ctx.calls_named(region.name) if hot_loop_of(ctx, c) is not None]
    for loop in loops:
        feeding = names_feeding_backward(ctx, ctx.scope_of(loop))
        for n in ctx.walk_body(loop.body):
            if n is call or n.__class__ is not ast.Call or ctx.text(n.func) != text:
                continue
            stmt = ctx.statement_of(n)
            if any(t.__class__ is ast.Name and t.id in feeding for t in getattr(stmt, "targets", ())) \
                    or "backward(" in ctx.text(stmt):
                return True
    return False


def _training_helper(ctx: Context, call: ast.Call) -> bool:
    """``call`` sits in a module-level function of the file that a training loop calls bare."""
    func = ctx.function_of(call)
    if func is None or ctx.parent(func) is not ctx.tree or ctx.enclosing_loops(call):
        return False
    callers = [c for c in ctx.calls_named(func.name) if c.func.__class__ is ast.Name]
    return bool(callers) and not any(under_no_grad(ctx, c) for c in callers) and any(hot_loop_of(ctx, c) for c in callers)


def picture_samples(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(run, message)`` for each network run whose output only becomes a picture (module doc)."""
    if not any(n in ctx.source for n in _NEEDLES):
        return
    sinks = [c for c in ctx.nodes.get(ast.Call, ()) if last_name(c.func) in _SINKS]
    pictured = {n.id for c in sinks for a in c.args for n in ast.walk(a) if n.__class__ is ast.Name}
    for node in ctx.nodes.get(ast.Assign, ()) if pictured else ():
        if any(t.__class__ is ast.Name and t.id in pictured for t in node.targets):
            pictured |= {n.id for n in ast.walk(node.value) if n.__class__ is ast.Name}
    for call in ctx.nodes.get(ast.Call, ()) if sinks else ():
        if call.func.__class__ not in (ast.Name, ast.Attribute) or not call.args or last_name(call.func) in _SINKS:
            continue
        kind, where = _consumer(ctx, call)
        if kind == "other" or kind == "assign" and not any(t.__class__ is ast.Name and t.id in pictured for t in where.targets):
            continue  # (cheap tests first: most calls feed something else)
        loop = hot_loop_of(ctx, call)
        region = loop if loop is not None else ctx.function_of(call) if _training_helper(ctx, call) else None
        if region is None or not _only_pictures(ctx, call, region) or under_no_grad(ctx, call) or not (
                is_module_instance(ctx, call.func, call) or _trained(ctx, call, loop or region)):
            continue
        stmt = ctx.statement_of(call)
        bound = {n.id for t in getattr(stmt, "targets", ()) for n in ast.walk(t) if n.__class__ is ast.Name}
        if any(_carried(ctx, name, region) for name in bound):
            continue  # the next pass reads it before binding it again: it may feed that step
        yield call, (f"{ctx.text(call.func)}(...) runs with autograd recording in the training loop only to make a "
                     "picture for the logs; nothing backpropagates through it")


__all__ = ["picture_samples"]
