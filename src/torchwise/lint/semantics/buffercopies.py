"""New CPU tensors copied into a module's registered buffers (TW205): a noisy layer's
``self.weight_epsilon.copy_(eps_out.ger(eps_in))`` with ``eps_in = self._scale_noise(n)`` drawing
``torch.randn(n)`` on the host. The buffer moved to the device with the model, so every resampling
copies the noise across; drawn with ``device=self.weight_epsilon.device`` it would not.

Only where the resampling runs beyond set-up: a method of the class some code other than an
``__init__`` calls (the forward pass, ``self.reset_noise()`` in ``forward``; or another module of the
project, an agent's ``self.model.sample_noise()`` per step), in a project that moves to a device."""

from __future__ import annotations

import ast
from typing import Callable, Iterator, TypeVar

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import never_called
from torchwise.lint.semantics.deadcode import dead_code
from torchwise.lint.semantics.devices import file_moves_to_device
from torchwise.lint.semantics.unselected import only_unselected, unselected_branch
from torchwise.lint.semantics.handoff import _returns, called_helper

T = TypeVar("T")


def buffer_copies(ctx: Context, made: Callable[[AST | None], T | None]) -> Iterator[tuple[ast.Call, T]]:
    """``(the copy_ call, what made says of the CPU factory)`` for each ``self.<buffer>.copy_(value)``
    of a class that registers ``<buffer>``, where ``value`` is host-made (:func:`_host_made`)."""
    if "register_buffer" not in ctx.source or ".copy_(" not in ctx.source or not (
            ctx.project.moves_to_device or file_moves_to_device(ctx)):
        return
    for call in ctx.calls_named("copy_"):
        recv = call.func.value if call.func.__class__ is ast.Attribute else None
        if recv is not None and recv.__class__ is ast.Attribute and recv.attr == "data":
            recv = recv.value  # self.eps.data.copy_(...)
        if recv is None or recv.__class__ is not ast.Attribute or recv.value.__class__ is not ast.Name \
                or recv.value.id != "self" or len(call.args) != 1:
            continue
        klass = ctx.class_of(call)
        func = ctx.function_of(call)
        if klass is None or func is None or func.__class__ is ast.Lambda or recv.attr not in _buffers(ctx, klass):
            continue
        found = _host_made(ctx, call.args[0], call, made, 8)
        if found is not None and _resampled(ctx, func) and not _never_runs(ctx, call, found[0]):
            yield call, found


def _buffers(ctx: Context, klass: ast.ClassDef) -> set[str]:
    key = ("sem:buffers", id(klass))
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = {c.args[0].value for c in ast.walk(klass) if c.__class__ is ast.Call
                                   and c.func.__class__ is ast.Attribute and c.func.attr == "register_buffer"
                                   and c.args and c.args[0].__class__ is ast.Constant and isinstance(c.args[0].value, str)}
    return found


def _host_made(ctx: Context, expr: AST | None, use: AST, made: Callable[[AST | None], T | None], depth: int) -> T | None:
    """What ``made`` says of the CPU factory ``expr`` derives from: the factory itself, a name bound
    to it, a tensor method or ``torch.`` function of such values and numbers (``x.sign().mul_(x.abs())``,
    ``torch.ger(a, b)``), or a helper of the file every ``return`` of which is one."""
    if expr is None or depth <= 0:
        return None
    found = made(expr)
    if found is not None:
        return found
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, expr)  # (x = x.sign() reads the x bound before it)
        return _host_made(ctx, b.value, b.node, made, depth - 1) if b is not None and b.kind == "assign" else None
    if expr.__class__ is ast.BinOp:  # z.sign() * z.abs().sqrt(): host values and numbers
        sides = [_host_made(ctx, side, use, made, depth - 1) for side in (expr.left, expr.right)]
        ok = all(p is not None or _number(e) for p, e in zip(sides, (expr.left, expr.right)))
        return next((p for p in sides if p is not None), None) if ok else None
    if expr.__class__ is not ast.Call or expr.keywords:
        return None
    q = ctx.qualname(expr.func)
    if q is not None and q.startswith("torch.") and q.count(".") == 1 and expr.args:
        parts = [_host_made(ctx, a, use, made, depth - 1) for a in expr.args]  # torch.ger(eps_j, eps_i)
        return parts[0] if all(p is not None or _number(a) for p, a in zip(parts, expr.args)) and any(parts) else None
    if q is None and expr.func.__class__ is ast.Attribute:
        helper = called_helper(ctx, expr)
        if helper is not None and helper.__class__ is not ast.Lambda:  # self._scale_noise(n)
            results = [_host_made(ctx, r.value, r, made, depth - 1) for r in _returns(helper)]
            return results[0] if results and all(r is not None for r in results) else None
        base = _host_made(ctx, expr.func.value, use, made, depth - 1)  # eps_out.ger(eps_in), x.sign().mul_(...)
        if base is not None and all(_number(a) or _host_made(ctx, a, use, made, depth - 1) is not None for a in expr.args):
            return base
    return None


def _number(node: AST) -> bool:
    return node.__class__ is ast.Constant and isinstance(node.value, (int, float))


def _resampled(ctx: Context, func: AST) -> bool:
    """The method holding the copy is called beyond ``__init__``: a ``forward``, or a method another
    method of this file calls, or one another file of the project calls by name (``self.model.sample_noise()``)."""
    name = func.name
    if name == "__init__":
        return False
    if "forward" in name:
        return True  # run by every call of the module
    needle = f".{name}("
    for call in ctx.calls_named(name):
        caller = ctx.function_of(call)
        if caller is not None and caller is not func and getattr(caller, "name", "") != "__init__":
            return True
    return any(needle in text for path, text in ctx.project.files if path != ctx.path)


def _never_runs(ctx: Context, copy: ast.Call, inner: AST) -> bool:
    """The resampling method runs beyond set-up by evidence (:func:`_resampled`), and the factory
    runs whenever it does: only liveness and the branches taken count."""
    func = ctx.function_of(copy)
    return dead_code(ctx, inner) or never_called(ctx, func) or unselected_branch(ctx, copy) or only_unselected(ctx, func) \
        or unselected_branch(ctx, inner)
