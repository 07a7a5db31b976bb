"""Host reads the algorithm needs: a value read off the device (``.cpu().numpy()``) and handed to
an object that works on it on the host every step - a prioritized replay memory's sum tree, a
hard-example miner, a loss-aware sampler that drew the step's inputs - rather than logged or collected."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.devices import is_device_tensor
from torchwise.lint.semantics.steps import names_feeding_backward

_SINKS = frozenset({"append", "extend", "add", "update", "insert", "put", "write", "print", "format", "info", "debug",
                    "warning", "log", "set_postfix", "set_description", "record", "track", "push", "accumulate"})
_SINK_PREFIXES = ("log", "add_", "print", "record", "write", "set_post", "set_desc", "track")


def consumed_on_host(ctx: Context, read: ast.Call) -> bool:
    """Is the value read at ``read`` (a ``.cpu()``/``.numpy()``/``.tolist()`` chain) handed straight
    to a method of an object that works on it on the host, rather than logged or collected:
    ``memory.update_priorities(idxs, loss.detach().cpu().numpy())``? Then the algorithm needs it
    there every step (a NumPy segment tree, hard-example mining), and the read is no waste."""
    if read.__class__ is not ast.Call:
        return False  # text formatted from a tensor (semantics.formatreads): shown, not worked on
    node: AST = read
    while True:  # the whole chain: loss.detach().cpu().numpy()
        parent = ctx.parent(node)
        if parent.__class__ is ast.Attribute and ctx.parent(parent).__class__ is ast.Call and ctx.parent(parent).func is parent:
            node = ctx.parent(parent)
            continue
        break
    if getattr(read.func, "attr", "") == "item" or last_name(node.func) == "item":
        return False  # a scalar: logged, not consumed
    call = ctx.parent(node)
    if call.__class__ is ast.Assign:
        return _handed_on_later(ctx, call)
    return _host_consumer(ctx, call, node)


_MODULE_ALIASES = frozenset({"np", "numpy", "math", "torch", "F", "scipy", "sp"})
_DISPLAY = lazy_compile(r"scalar|plot|vis|show|display|summar|image|histogram", re.I)


def _host_consumer(ctx: Context, call: AST, arg: AST) -> bool:
    """``call`` is a method call (not a logger, a collection or a library function) of an object
    that is no device tensor, with ``arg`` among its arguments."""
    if call.__class__ is not ast.Call or arg is call.func or call.func.__class__ is not ast.Attribute:
        return False
    name = call.func.attr
    if name in _SINKS or name.startswith(_SINK_PREFIXES) or ctx.qualname(call.func) is not None:
        return False  # logged, collected, or a library function (np.mean(...): a metric)
    if call.func.value.__class__ is ast.Name and call.func.value.id in _MODULE_ALIASES:
        return False  # np.isnan(...) with NumPy reached through a star import: a library function all the same
    outer = ctx.parent(call)
    if outer.__class__ is ast.Call and call in outer.args:  # mae(normalizer.denorm(out.cpu()), y): what takes the result decides
        return _host_consumer(ctx, outer, call)
    return not is_device_tensor(ctx, call.func.value, call)


def _handed_on_later(ctx: Context, stmt: ast.Assign) -> bool:
    """``loss_PER = loss.detach().abs().cpu().numpy()`` ... ``memory.update_priority_on_tree(idx,
    loss_PER)`` later in the same function (through names assigned from it: ``abs_err =
    abs(err)``): the value reaches a host consumer (:func:`_host_consumer`) by name, and is
    neither summed into a running metric nor shown (a visualiser's ``vis_scalar``) on the way."""
    names = {t.id for t in stmt.targets if t.__class__ is ast.Name}
    scope = ctx.function_of(stmt)
    if not names or scope is None or scope.__class__ is ast.Lambda:
        return False
    end = stmt.end_lineno or stmt.lineno
    found = False
    for n in ctx.walk_body(scope.body):
        if getattr(n, "lineno", 0) <= end:
            continue
        if n.__class__ is ast.AugAssign and any(m.__class__ is ast.Name and m.id in names for m in ast.walk(n.value)):
            return False  # summed for a running average (interval_loss += np_loss): a metric
        if n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and _DISPLAY.search(n.func.attr) \
                and any(m.__class__ is ast.Name and m.id in names for a in n.args for m in ast.walk(a)):
            return False  # shown (vis.vis_scalar('Loss', step, np_loss)): a metric
        if n.__class__ is ast.Assign and any(m.__class__ is ast.Name and m.id in names for m in ast.walk(n.value)):
            names |= {t.id for t in n.targets if t.__class__ is ast.Name}
        elif n.__class__ is ast.Call and any(a.__class__ is ast.Name and a.id in names and _host_consumer(ctx, n, a)
                                              for a in n.args):
            found = True
    return found


_DRAWS = ("sample", "sample_batch", "sample_timesteps", "draw", "_sample")


def feeds_its_sampler(ctx: Context, call: ast.Call, region: AST) -> bool:
    """``self.schedule_sampler.update_with_local_losses(t, losses["loss"].detach())`` in a step
    where the same object drew an input of the loss earlier (``t, weights =
    self.schedule_sampler.sample(...)``; ``loss = (losses["loss"] * weights).mean()``): a
    loss-aware sampler or a prioritized replay memory keeps what it is handed on the host to draw
    the next step's inputs, so the algorithm needs the value there."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.value.__class__ is ast.Name and func.value.id in ("self", "cls"):
        return False  # (a method of the trainer itself draws nothing)
    owner = ast.dump(func.value)
    pos = (call.lineno, call.col_offset)
    for node in _draws(ctx, region):
        if (node.lineno, node.col_offset) < pos and ast.dump(node.value.func.value) == owner:
            feeding = names_feeding_backward(ctx, ctx.scope_of(call))
            if any(n.__class__ is ast.Name and n.id in feeding for t in node.targets for n in ast.walk(t)):
                return True
    return False


def _draws(ctx: Context, region: AST) -> list[ast.Assign]:
    """``t, weights = sampler.sample(...)`` statements of the region (found once per region)."""
    key = ("sem:draws", id(region))
    found = ctx._cache.get(key)
    if found is None:
        end = getattr(region, "end_lineno", None) or region.lineno
        found = ctx._cache[key] = [
            stmt for c in ctx.calls_named(*_DRAWS) if region.lineno <= c.lineno <= end and c.func.__class__ is ast.Attribute
            and (stmt := ctx.parent(c)).__class__ is ast.Assign and stmt.value is c]
    return found
