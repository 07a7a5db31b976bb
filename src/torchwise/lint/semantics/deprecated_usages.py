"""Deprecated *usages* of current PyTorch functions: calls that warn when they run although the
function itself is not deprecated (for TW502).

* ``F.softmax(x)``/``F.log_softmax(x)``/``F.softmin(x)`` and ``nn.Softmax()``/``nn.LogSoftmax()``/
  ``nn.Softmin()`` without ``dim``: "Implicit dimension choice ... has been deprecated"; the
  dimension picked depends on the input's rank (0 for 0-, 1- and 3-D inputs, else 1);
* the ``size_average=``/``reduce=`` arguments of the losses, and ``reduction='elementwise_mean'``;
* the scalar-first overloads ``t.add_(alpha, other)``, ``t.sub_(alpha, other)``,
  ``t.addcmul_(value, a, b)``, ``t.addcdiv_(value, a, b)`` (and ``torch.add(x, alpha, y)``, and
  ``t.add(alpha, other)`` in a loop over an optimizer's parameters...):
  "This overload of add_ is deprecated". The current signatures take the scale as a keyword
  (``alpha=``, ``value=``), so the positional count alone tells the overload;
* the same for the matrix products that add to a tensor: ``t.addmm_(beta, alpha, m1, m2)`` and
  ``t.addmm_(beta, m1, m2)`` (also ``addbmm``, ``baddbmm``, ``addmv``, ``addr``, ``sspaddmm``,
  in place or not), ``torch.addmm(beta, t, alpha, m1, m2)`` and ``torch.addmm(beta, t, m1, m2)``:
  the current forms take the tensors positionally and ``beta``/``alpha`` by keyword only;
* the ``verbose=`` argument of torch's LR schedulers (``ReduceLROnPlateau(opt, verbose=True)``):
  deprecated in PyTorch 2.2, any value but the default warns at construction;
* ``Variable(x, volatile=True)`` (``volatile=`` on any call of ``torch.autograd.Variable``): the flag
  was removed in PyTorch 0.4, has no effect and warns ("volatile was removed and now has no effect").
"""

from __future__ import annotations

import ast
from typing import Callable, Iterator

from torchwise.lint.engine import AST, Context

_IMPLICIT_DIM = {"torch.nn.functional.softmax": "F.softmax", "torch.nn.functional.log_softmax": "F.log_softmax",
                 "torch.nn.functional.softmin": "F.softmin"}
_DIM_MODULES = {"torch.nn.Softmax": "nn.Softmax", "torch.nn.LogSoftmax": "nn.LogSoftmax", "torch.nn.Softmin": "nn.Softmin"}
_LOSS_FUNCTIONS = frozenset({
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
    "smooth_l1_loss", "kl_div", "poisson_nll_loss", "hinge_embedding_loss", "multilabel_margin_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "cosine_embedding_loss", "margin_ranking_loss", "multi_margin_loss",
    "triplet_margin_loss",
})
# method -> positional arguments of its deprecated scalar-first overload (the current one takes one fewer)
_SCALAR_FIRST_METHODS = {"add_": 2, "sub_": 2, "addcmul_": 3, "addcdiv_": 3, "addcmul": 3, "addcdiv": 3}
_SCALAR_FIRST_FUNCTIONS = {"torch.add": 3, "torch.sub": 3, "torch.addcmul": 4, "torch.addcdiv": 4}
# products whose current method takes two positional tensors (three for the torch.* function)
_PRODUCTS = frozenset({"addmm", "addbmm", "baddbmm", "addmv", "addr", "sspaddmm"})
_KEYWORD = {"add_": "alpha", "sub_": "alpha", "add": "alpha", "sub": "alpha"}

# torch.optim.lr_scheduler classes whose constructors took ``verbose=`` (deprecated in PyTorch 2.2)
_VERBOSE_SCHEDULERS = frozenset({
    "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
    "SequentialLR", "CosineAnnealingLR", "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts",
    "OneCycleLR", "PolynomialLR",
})

Usage = tuple[AST, str, str]  # (node, message, suggestion)


def deprecated_usages(ctx: Context, qualname: Callable[[AST], str | None]) -> Iterator[Usage]:
    """Every deprecated usage in the file; ``qualname`` resolves a called expression (the file's
    imports, and its star imports)."""
    src = ctx.source
    if "oftm" in src:  # softmax, Softmax, softmin...
        yield from _implicit_dims(ctx, qualname)
    if "reduc" in src or "size_average" in src:  # reduce=, reduction='elementwise_mean'
        yield from _loss_arguments(ctx, qualname)
    yield from _scalar_first(ctx, qualname)  # calls by name: no text scan needed
    if "add" in src:
        yield from _scaled_products(ctx, qualname)
    if "verbose" in src:
        yield from _scheduler_verbose(ctx, qualname)
    if "volatile" in src:
        yield from _volatile_variables(ctx, qualname)


_VARIABLES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})


def _volatile_variables(ctx: Context, qualname: Callable[[AST], str | None]) -> Iterator[Usage]:
    """``Variable(images, volatile=True)``: torch's Variable given the flag PyTorch 0.4 removed (it
    warns and no longer turns autograd off). A project's own ``to_var(x, volatile=True)`` or
    ``make_variable(t, volatile=...)`` is no call of torch's Variable (the ``Variable(...)`` inside
    it is, and is reported there)."""
    for call in ctx.calls_named("Variable"):
        if any(k.arg == "volatile" for k in call.keywords) and qualname(call.func) in _VARIABLES:
            yield (call, "Variable(..., volatile=...): the volatile flag was removed in PyTorch 0.4; it warns and no "
                   "longer disables autograd", "drop volatile= and run the inference under `with torch.no_grad():`")


def _scheduler_verbose(ctx: Context, qualname: Callable[[AST], str | None]) -> Iterator[Usage]:
    """``ReduceLROnPlateau(opt, verbose=True)``: a torch scheduler built with ``verbose=`` (a project's
    own scheduler class of the same name resolves elsewhere and is left alone)."""
    for call in ctx.calls_named(*_VERBOSE_SCHEDULERS):
        if not any(k.arg == "verbose" for k in call.keywords):
            continue
        q = qualname(call.func)
        if q is not None and q.startswith("torch.optim.lr_scheduler.") and q.rsplit(".", 1)[1] in _VERBOSE_SCHEDULERS:
            name = q.rsplit(".", 1)[1]
            yield (call, f"{name}(verbose=...) is deprecated since PyTorch 2.2: the argument warns when the scheduler is built",
                   "drop verbose= and log scheduler.get_last_lr() yourself")


def _no_dim(call: ast.Call, positional: int) -> bool:
    """``dim`` is neither passed (positionally or by keyword) nor anything but ``None``."""
    if any(a.__class__ is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    dim = next((k.value for k in call.keywords if k.arg == "dim"), None)
    if dim is None and len(call.args) > positional:
        dim = call.args[positional]
    return dim is None or (dim.__class__ is ast.Constant and dim.value is None)


def _implicit_dims(ctx: Context, qualname: Callable[[AST], str | None]) -> Iterator[Usage]:
    for call in ctx.calls_named("softmax", "log_softmax", "softmin", "Softmax", "LogSoftmax", "Softmin"):
        q = qualname(call.func)
        if q in _IMPLICIT_DIM and call.args and _no_dim(call, 1):
            name = _IMPLICIT_DIM[q]
            yield (call, f"{name} without dim= is deprecated: the dimension is guessed from the input's rank",
                   f"pass dim= explicitly: {name}(x, dim=-1)")
        elif q in _DIM_MODULES and _no_dim(call, 0):
            name = _DIM_MODULES[q]
            yield (call, f"{name}() without dim= is deprecated: each call guesses the dimension from the input's rank",
                   f"pass dim= explicitly: {name}(dim=-1)")


def _is_loss(q: str | None) -> bool:
    if q is None or not q.startswith("torch.nn."):
        return False
    last = q.rsplit(".", 1)[1]
    return (q.count(".") == 2 and last.endswith("Loss")) or (q.startswith("torch.nn.functional.") and last in _LOSS_FUNCTIONS)


def _loss_arguments(ctx: Context, qualname: Callable[[AST], str | None]) -> Iterator[Usage]:
    for call in ctx.nodes.get(ast.Call, ()):
        if not call.keywords:
            continue
        old = [k for k in call.keywords if k.arg in ("size_average", "reduce") and not _none(ctx, k.value)]
        mean = [k for k in call.keywords if k.arg == "reduction" and k.value.__class__ is ast.Constant
                and k.value.value == "elementwise_mean"]
        if not (old or mean) or not _is_loss(qualname(call.func)):
            continue
        if old:
            listed = "/".join(f"{k.arg}=" for k in old)
            yield (call, f"the {listed} argument of the loss is deprecated", "pass reduction='mean', 'sum' or 'none' instead")
        if mean:
            yield (call, "reduction='elementwise_mean' is deprecated", "use reduction='mean'")


def _none(ctx: Context, value: AST) -> bool:
    """``size_average=None``, or a parameter defaulting to None handed through (a wrapper with
    torch's own signature): nothing is passed, nothing warns."""
    if value.__class__ is ast.Constant:
        return value.value is None
    if value.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(value.id, value)
    func = ctx.parent(ctx.parent(b.node)) if b is not None and b.kind == "param" else None
    if func is None or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
        return False
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
    default = next((d for a, d in pairs if a is b.node), None)
    return default is not None and default.__class__ is ast.Constant and default.value is None


def _numeric(node: AST) -> bool:
    return node.__class__ is ast.Constant and type(node.value) in (int, float)


def _in_param_loop(ctx: Context, call: ast.Call) -> bool:
    """Inside ``for p in group['params']:`` (or a loop over ``optimizer.param_groups``): an
    optimizer's update, where ``x.add(a, b)`` is a tensor's (meters and sets do not live there), and
    the current ``Tensor.add``/``sub`` take one positional argument: two are the old overload."""
    for loop in ctx.enclosing_loops(call):
        it = getattr(loop, "iter", None)
        if it.__class__ is ast.Subscript and it.slice.__class__ is ast.Constant and it.slice.value == "params":
            return True
        if it.__class__ is ast.Attribute and it.attr == "param_groups":
            return True
    return False


def _scalar_first(ctx: Context, qualname: Callable[[AST], str | None]) -> Iterator[Usage]:
    for call in ctx.calls_named(*_SCALAR_FIRST_METHODS, "add", "sub"):
        func = call.func
        if func.__class__ is not ast.Attribute or call.keywords or any(a.__class__ is ast.Starred for a in call.args):
            continue
        q = qualname(func)
        if q is not None:
            wanted = _SCALAR_FIRST_FUNCTIONS.get(q)
            scale = call.args[1] if wanted is not None and len(call.args) == wanted else None
        else:
            wanted = _SCALAR_FIRST_METHODS.get(func.attr)
            if wanted is None and len(call.args) == 2 and _in_param_loop(ctx, call):
                wanted = 2  # grad = grad.add(group['weight_decay'], p.data) in an optimizer's step
            scale = call.args[0] if wanted is not None and len(call.args) == wanted else None
        # the tensors that follow the scale are never plain numbers (x.add_(y, 2) is an error, not this)
        if scale is None or any(_numeric(a) for a in call.args[call.args.index(scale) + 1:]):
            continue
        name = func.attr
        keyword = _KEYWORD.get(name, "value")
        rest = ", ".join(ctx.text(a) for a in call.args if a is not scale)
        yield (call, f"the overload {name}(Number, Tensor{', Tensor' if keyword == 'value' else ''}) with the scale first "
               "is deprecated", f"pass the scale by keyword: {name}({rest}, {keyword}={ctx.text(scale)})")


def _scaled_products(ctx: Context, qualname: Callable[[AST], str | None]) -> Iterator[Usage]:
    """``dist.addmm_(1, -2, x, y.t())``: beta (and alpha) first, the old overload of the products
    that add to a tensor. The method takes two tensors now, ``torch.addmm`` three; one or two
    more positional arguments, a plain number first and no number among the tensors, are the
    deprecated form."""
    names = [n for n in _PRODUCTS for n in (n, n + "_")]
    for call in ctx.calls_named(*names):
        func = call.func
        if func.__class__ is not ast.Attribute or any(a.__class__ is ast.Starred for a in call.args) \
                or any(k.arg in ("beta", "alpha") or k.arg is None for k in call.keywords):
            continue
        name = func.attr
        q = qualname(func)
        if q is not None:
            if q != f"torch.{name}" or len(call.args) not in (4, 5):
                continue
            scales = [call.args[0], call.args[2]] if len(call.args) == 5 else [call.args[0]]
            tensors = [call.args[1], *call.args[-2:]]
        else:
            if len(call.args) not in (3, 4):
                continue
            scales, tensors = call.args[:-2], call.args[-2:]
        if not _numeric_scale(scales[0]) or any(_numeric(t) for t in tensors):
            continue
        words = ["beta", "alpha"][:len(scales)]
        given = ", ".join(f"{w}={ctx.text(v)}" for w, v in zip(words, scales))
        old = ", ".join(["beta", "alpha"][:len(scales)] if q is None else ["beta", "input", "alpha"][:len(scales) + 1])
        yield (call, f"the overload {name}({old}, ...) with the scales first is deprecated",
               f"pass them by keyword: {name}({', '.join(ctx.text(t) for t in tensors)}, {given})")


def _numeric_scale(node: AST) -> bool:
    """A number written out (``1``, ``-2``, ``0.5``)."""
    if node.__class__ is ast.UnaryOp and node.op.__class__ in (ast.USub, ast.UAdd):
        node = node.operand
    return _numeric(node)
