"""TW208: gradients zeroed by a memset instead of being set to None."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, keyword
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule


def _grad_chain(expr: ast.AST) -> bool:
    """``p.grad`` or ``p.grad.data``."""
    if expr.__class__ is ast.Attribute and expr.attr == "data":
        expr = expr.value
    return expr.__class__ is ast.Attribute and expr.attr == "grad"


_INPLACE = frozenset({"add_", "sub_", "mul_", "div_", "copy_", "addcmul_", "addcdiv_", "clamp_", "masked_fill_", "index_add_"})


def _grads_updated_in_place(ctx: Context) -> bool:
    """``p.grad += g``, ``p.grad.add_(g)``, ``p.grad[i] = v``, ``p.grad.data.mul_(s)``: code that
    accumulates into a gradient tensor it expects to exist."""
    key = "tw208:inplace"
    found = ctx._cache.get(key)
    if found is None:
        found = False
        for node in ctx.nodes.get(ast.AugAssign, ()):
            if _grad_chain(node.target):
                found = True
        for node in ctx.nodes.get(ast.Assign, ()):
            if any(t.__class__ is ast.Subscript and _grad_chain(t.value) for t in node.targets):
                found = True
        if not found:
            for call in ctx.nodes.get(ast.Call, ()):
                func = call.func
                if func.__class__ is ast.Attribute and func.attr in _INPLACE and _grad_chain(func.value):
                    found = True
                    break
        ctx._cache[key] = found
    return found


def _reads_grad(ctx: Context) -> bool:
    """Does any code read a ``.grad`` (not only assign or delete it)?"""
    for node in ctx.nodes.get(ast.Attribute, ()):
        if node.attr == "grad" and node.ctx.__class__ is ast.Load:
            parent = ctx.parent(node)
            if parent.__class__ is ast.Attribute and parent.attr in ("zero_", "detach_") and ctx.parent(parent).__class__ is ast.Call:
                continue
            return True
    return False


def _marked_requires_grad(ctx: Context, call: ast.Call) -> bool:
    """``nx.grad.zero_()`` where the function itself turned on the gradient of ``nx``
    (``nx.requires_grad_()``, ``nx.requires_grad = True``): the gradient of an input it perturbs
    (an adversarial attack, a saliency map), read back each step - no parameters' gradients."""
    base = call.func.value
    base = base.value if base.attr == "data" else base  # type: ignore[attr-defined]
    owner = base.value  # type: ignore[attr-defined]
    scope = ctx.scope_of(call)
    if scope.__class__ is ast.Module:
        return False
    if _self_attr(owner):
        return _returned_input_gradient(ctx, scope, ctx.text(owner))
    if owner.__class__ is not ast.Name:
        return False
    for node in ast.walk(scope):
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr == "requires_grad_":
            target = node.func.value
        elif node.__class__ is ast.Assign and len(node.targets) == 1 and node.targets[0].__class__ is ast.Attribute \
                and node.targets[0].attr == "requires_grad":
            target = node.targets[0].value
        else:
            continue
        if target.__class__ is ast.Name and target.id == owner.id:
            return True
    return False


def _self_attr(expr: ast.AST) -> bool:
    return expr.__class__ is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self"


def _returned_input_gradient(ctx: Context, func: ast.AST, owner: str) -> bool:
    """``self.adj.grad.zero_()`` in a method that turns on ``self.adj.requires_grad`` itself, updates
    ``self.adj`` nowhere and returns its gradient (``return self.adj.grad, self.x.grad``): a
    saliency map of an input the object holds, not a parameter trained by hand."""
    marked = returned = False
    for node in ast.walk(func):
        cls = node.__class__
        if cls is ast.Assign and len(node.targets) == 1 and node.targets[0].__class__ is ast.Attribute \
                and node.targets[0].attr == "requires_grad" and ctx.text(node.targets[0].value) == owner:
            marked = True
        elif cls is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr == "requires_grad_" \
                and ctx.text(node.func.value) == owner:
            marked = True
        elif cls is ast.Return and node.value is not None:
            returned = returned or any(n.__class__ is ast.Attribute and n.attr == "grad" and ctx.text(n.value) == owner
                                       for n in ast.walk(node.value))
        elif cls is ast.AugAssign and ctx.text(node.target).startswith(owner):
            return False  # self.adj -= lr * self.adj.grad: trained by hand
        elif cls is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr.endswith("_") \
                and node.func.attr not in ("zero_", "requires_grad_") and ctx.text(node.func.value) in (owner, owner + ".data"):
            return False  # self.w.data.sub_(lr * self.w.grad)
    return marked and returned


def _read_input_gradient(ctx: Context, call: ast.Call) -> bool:
    """``m.grad.data.zero_()`` where ``m`` was made a leaf with ``requires_grad=True`` by the call
    that built it (``Variable(x, requires_grad=True)``, ``torch.zeros(2, requires_grad=True)``) and
    is never updated (no ``m -= ...``, ``m.data = ...``, ``m.sub_(...)``, no optimizer given it):
    an input whose gradient is read as a result (a Jacobian built column by column, a saliency
    map), not a parameter trained by hand."""
    base = call.func.value
    base = base.value if base.attr == "data" else base  # type: ignore[attr-defined]
    owner = base.value  # type: ignore[attr-defined]
    if owner.__class__ is not ast.Name:
        return False
    bound = ctx.binding_at(owner.id, call)
    made = bound.value if bound is not None and bound.kind == "assign" else None
    flag = keyword(made, "requires_grad") if made.__class__ is ast.Call else None
    if flag is None or flag.value.__class__ is not ast.Constant or flag.value.value is not True:
        return False
    name = owner.id
    for node in ast.walk(ctx.scope_of(bound.node)):  # (a module-level tensor: every function too)
        cls = node.__class__
        if cls is ast.AugAssign and _root_is(node.target, name):
            return False  # m -= lr * m.grad
        if cls is ast.Assign and any(t.__class__ in (ast.Attribute, ast.Subscript) and _root_is(t, name)
                                     and not _grad_chain(t) for t in node.targets):
            return False  # m.data = m.data - lr * m.grad
        if cls is ast.Assign and any(t.__class__ is ast.Name and t.id == name for t in node.targets) and any(
                n.__class__ is ast.Attribute and n.attr == "grad" and _root_is(n, name) for n in ast.walk(node.value)):
            return False  # m = m - lr * m.grad
        if cls is ast.Call:
            func = node.func
            if func.__class__ is ast.Attribute and func.attr.endswith("_") and func.attr not in ("zero_", "requires_grad_") \
                    and _root_is(func.value, name) and not _grad_chain(func.value):
                return False  # m.data.sub_(lr * m.grad)
            if "optim" in (ctx.qualname(func) or "") and any(n.__class__ is ast.Name and n.id == name
                                                             for a in node.args for n in ast.walk(a)):
                return False  # torch.optim.SGD([m], lr=...)
    return True


def _root_is(expr: ast.AST, name: str) -> bool:
    while expr.__class__ in (ast.Attribute, ast.Subscript):
        expr = expr.value  # type: ignore[attr-defined]
    return expr.__class__ is ast.Name and expr.id == name


def _zero_fill(call: ast.Call) -> bool:
    """``p.grad.data.fill_(0)``: a memset written with ``fill_``."""
    return len(call.args) == 1 and call.args[0].__class__ is ast.Constant and call.args[0].value == 0 \
        and call.args[0].value is not False


class ZeroGradMemset(Rule):
    code = "TW208"
    per_call = True
    name = "zero-grad-memset"
    triggers = ("zero_grad", "zero_", "fill_(0")
    fixable = True
    doc = """\
What it flags
  `zero_grad(set_to_none=False)` (or `zero_grad(False)`) on an optimizer or module, and
  hand-written `p.grad.zero_()` / `p.grad.data.zero_()` / `p.grad.data.fill_(0)`, except inside a branch that tests
  `set_to_none` itself (an implementation of both behaviours). Not flagged: the gradient of a
  tensor the same function turned on itself (`x.requires_grad_()` or `x.requires_grad = True`,
  then `loss.backward()`, `x.grad.zero_()`): an input perturbed by an adversarial attack or
  read as a saliency map, not the model's parameters - also an input the object holds, when the
  method turns on `self.adj.requires_grad` itself, updates it nowhere and returns `self.adj.grad`; nor the gradient of a tensor made a leaf by
  the call that built it (`m = Variable(x, requires_grad=True)`, `torch.zeros(2,
  requires_grad=True)`) and never updated (no `m -= lr * m.grad`, `m.data = ...`, in-place
  method or optimizer): an input whose gradient is read as a result, such as a Jacobian built
  one column per backward pass.

Why it matters
  Zeroing writes every gradient tensor with zeros - a memory pass over as many bytes as the
  model has parameters - and the next backward then adds into those zeros. With the gradient
  set to None, backward simply writes the new gradient, the memset disappears and memory is
  freed between steps. It has been PyTorch's default since 2.0.

Example
  optimizer.zero_grad(set_to_none=False)            # TW208

Fix
  `optimizer.zero_grad()` (or `set_to_none=True` explicitly); instead of `p.grad.zero_()`
  write `p.grad = None`. `torchwise lint --fix` turns `set_to_none=False` into `True` when the
  file never reads `.grad`; where it does, the gradients of parameters without a gradient become
  None instead of zeros, so the edit is only an unsafe fix (`--unsafe-fixes`). Code that adds into
  `.grad` (`p.grad += g`) needs the zeros and is not flagged.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        if _grads_updated_in_place(ctx):
            return  # `p.grad += g` after zeroing needs a tensor there: zeros are deliberate
        reads_grad = _reads_grad(ctx)
        for call in ctx.calls_named("zero_grad"):
            if call.func.__class__ is not ast.Attribute:
                continue
            kw = keyword(call, "set_to_none")
            value = kw.value if kw is not None else (call.args[0] if call.args else None)
            if value is None or value.__class__ is not ast.Constant or value.value is not False:
                continue
            yield ctx.finding(
                self.code, call,
                "zero_grad(set_to_none=False) writes zeros into every gradient; setting them to None is cheaper",
                suggestion="use zero_grad() (set_to_none=True is the default)",
                fix=Fix("use set_to_none=True", (ctx.replace(value, "True"),), safe=not reads_grad,
                        why_unsafe="this file reads `.grad`; after zero_grad() it is None (also for parameters "
                        "that get no gradient), where that code expects a tensor" if reads_grad else ""),
            )
        for call in ctx.calls_named("zero_", "fill_"):
            func = call.func
            if func.__class__ is not ast.Attribute or not _grad_chain(func.value) or call.keywords or (
                    call.args if func.attr == "zero_" else not _zero_fill(call)):
                continue
            if self._implements_both(ctx, call) or _marked_requires_grad(ctx, call) or _read_input_gradient(ctx, call):
                continue
            yield ctx.finding(
                self.code, call,
                f"{ctx.text(func)}({ctx.text(call.args[0]) if call.args else ''}) writes zeros into the gradient; "
                "setting it to None is cheaper",
                suggestion="use optimizer.zero_grad() or set the gradient to None",
            )

    @staticmethod
    def _implements_both(ctx: Context, call: ast.AST) -> bool:
        for if_node, _ in ctx.enclosing_ifs(call):
            if any(n.__class__ is ast.Name and "none" in n.id.lower() for n in ast.walk(if_node.test)):
                return True
        return False


RULE = ZeroGradMemset()
