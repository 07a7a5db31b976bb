"""Layers that add a bias BatchNorm would cancel (TW209): ``nn.ConvNd``/``nn.ConvTransposeNd``
and ``nn.Linear`` that keep their bias, the file's own subclass of one (``class Conv2d_fw(nn.Conv2d)``
with ``bias=True`` by default), a module-level helper that only returns one, and the project's
own wrapper class around one (``ConvNorm(...)``); also inside a weight reparametrisation, which
keeps the bias (``SpectralNorm(nn.ConvTranspose2d(...))``, ``nn.utils.weight_norm(nn.Conv1d(...))``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, argument, has_star_args, last_name, param_default
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.normlayers import BN_DIMS
from torchwise.lint.semantics.projectlayers import project_class
from torchwise.lint.semantics.values import local_function

CONV_DIMS = {
    "torch.nn.Conv1d": 1, "torch.nn.Conv2d": 2, "torch.nn.Conv3d": 3,
    "torch.nn.ConvTranspose1d": 1, "torch.nn.ConvTranspose2d": 2, "torch.nn.ConvTranspose3d": 3,
}
# nn.Linear before BatchNorm1d: the features are BatchNorm1d's channels (Linear(in, out, bias=True))
LAYER_DIMS = {**CONV_DIMS, "torch.nn.Linear": 1}


# wrappers that reparametrise a layer's weight and keep its bias (torch's and the usual hand-written SAGAN class)
_REPARAMETRIZE = frozenset({"torch.nn.utils.spectral_norm", "torch.nn.utils.weight_norm", "torch.nn.utils.parametrizations.spectral_norm",
                            "torch.nn.utils.parametrizations.weight_norm", "torch.nn.utils.spectral_norm.spectral_norm",
                            "torch.nn.utils.weight_norm.weight_norm"})
_REPARAMETRIZE_NAMES = frozenset({"SpectralNorm", "spectral_norm", "weight_norm", "WeightNorm"})


def _bias_position(q: str) -> int:
    return 2 if q == "torch.nn.Linear" else 7  # 8th positional for Conv and ConvTranspose alike


def _true(node: ast.AST | None) -> bool:
    return node is None or node.__class__ is ast.Constant and node.value is True


def conv_with_bias(ctx: Context, call: ast.AST, params: ast.arguments | None = None) -> int | None:
    """Dimensionality of an ``nn.ConvNd(...)``/``nn.Linear(...)`` call (or of the file's own
    subclass of one) that keeps its bias, else None. With ``params`` (the arguments of the
    ``__init__`` around the call), ``bias=bias`` counts when that parameter defaults to True."""
    if call.__class__ is not ast.Call or has_star_args(call):
        return None
    q = ctx.qualname(call.func) or ""
    if call.args and call.args[0].__class__ is ast.Call and (q in _REPARAMETRIZE or not q.startswith("torch.") and (
            last_name(call.func) or "") in _REPARAMETRIZE_NAMES):
        return conv_with_bias(ctx, call.args[0], params)  # SpectralNorm(nn.ConvTranspose2d(...)): the wrapper keeps the bias
    dims = LAYER_DIMS.get(q)
    if dims is None:
        sub = conv_subclass(ctx, call.func)
        if sub is None:
            return None
        dims, position, default = sub
        bias = argument(call, "bias", position)
        return dims if _true(bias if bias is not None else default) else None
    bias = argument(call, "bias", _bias_position(q))
    if bias is not None and bias.__class__ is ast.Name and params is not None:
        bias = param_default(params, bias.id) or bias
    return dims if _true(bias) else None


def conv_subclass(ctx: Context, func: AST) -> tuple[int, int, ast.AST | None] | None:
    """``class Conv2d_fw(nn.Conv2d)`` of this file (a fast-weight variant), or of another module of
    the project (``layers.Conv2d`` of a pruning library, :mod:`.projectlayers`), whose ``__init__``
    takes a ``bias`` parameter and hands it to the base unchanged (``bias=bias``, or in the base's
    own position: ``super().__init__(cin, cout, k, stride, padding, dilation, groups, bias)``), and
    whose ``forward``, if it has one, still convolves (``super().forward(x)``,
    ``F.conv2d(x, w, self.bias...)`` or ``self._conv_forward(x, w, b)``): its dimensionality, the
    position of ``bias`` among the call's arguments, and its default."""
    found = project_class(ctx, func) if func.__class__ in (ast.Name, ast.Attribute) else None
    if found is None:
        return None
    where, klass = found
    q = next((q for q in (where.qualname(b) for b in klass.bases) if q in LAYER_DIMS), None)
    init = next((i for i in klass.body if i.__class__ is ast.FunctionDef and i.name == "__init__"), None)
    if q is None or init is None:
        return None
    names = [a.arg for a in init.args.args]
    if "bias" not in names:
        return None
    supers = [n for n in ast.walk(init) if n.__class__ is ast.Call and n.func.__class__ is ast.Attribute
              and n.func.attr == "__init__" and n.func.value.__class__ is ast.Call and where.text(n.func.value.func) == "super"]
    passed = [argument(s, "bias", _bias_position(q)) for s in supers]
    if len(supers) != 1 or len(passed) != 1 or passed[0].__class__ is not ast.Name or passed[0].id != "bias":
        return None
    forward = next((i for i in klass.body if i.__class__ is ast.FunctionDef and i.name == "forward"), None)
    if forward is not None and not any(
            n.__class__ is ast.Call and (where.qualname(n.func) or "").startswith(("torch.nn.functional.conv", "torch.conv", "torch.nn.functional.linear"))
            or n.__class__ is ast.Attribute and n.attr == "forward" and n.value.__class__ is ast.Call
            and where.text(n.value.func) == "super"
            or n.__class__ is ast.Attribute and n.attr == "_conv_forward" and where.text(n.value) in ("self", "super()")
            for n in ast.walk(forward)):
        return None
    return LAYER_DIMS[q], names.index("bias") - 1, param_default(init.args, "bias")


def helper_conv_with_bias(ctx: Context, call: ast.AST) -> int | None:
    """Dimensionality of a call of a module-level helper of this file that only returns a biased
    ``nn.ConvNd`` (``conv3x3(in_planes, out_planes, stride)`` returning ``nn.Conv2d(..., bias=True)``
    - or a ``bias`` parameter that is True here or by default), else None."""
    if call.__class__ is not ast.Call or call.func.__class__ is not ast.Name or has_star_args(call):
        return None
    func = local_function(ctx, call)
    if func is None or func.__class__ is not ast.FunctionDef or ctx.parent(func).__class__ is not ast.Module:
        return None
    body = [b for b in func.body if not (b.__class__ is ast.Expr and b.value.__class__ is ast.Constant)]
    if len(body) != 1 or body[0].__class__ is not ast.Return or body[0].value is None:
        return None
    conv = body[0].value
    dims = CONV_DIMS.get(ctx.qualname(conv.func) or "") if conv.__class__ is ast.Call else None
    if dims is None or has_star_args(conv):
        return None
    bias = argument(conv, "bias", 7)
    if bias is not None and bias.__class__ is ast.Name:
        params = [a.arg for a in func.args.args]
        if bias.id not in params:
            return None
        defaults = {a.arg: d for a, d in zip(func.args.args[::-1], func.args.defaults[::-1])}
        i = params.index(bias.id)
        bias = argument(call, bias.id, i) or defaults.get(bias.id)
    return dims if _true(bias) else None


def wrapped_conv_with_bias(ctx: Context, call: ast.Call) -> int | None:
    """Dimensionality of a call of the project's own convolution wrapper (``ConvNorm(...)``: a
    module whose ``__init__`` builds one biased ``nn.ConvNd`` - the bias a parameter that
    defaults to True - and whose ``forward`` returns its output), defined in this file or in
    another module of the project; None otherwise or when the call passes ``bias=False``."""
    bias = next((k.value for k in call.keywords if k.arg == "bias"), None)
    if bias is not None and not _true(bias):
        return None
    name = call.func.id if call.func.__class__ is ast.Name else (call.func.attr if call.func.__class__ is ast.Attribute else None)
    if name is None or name[:1].islower():
        return None
    key = ("tw209:wrapper", name)
    facts = ctx.project
    cache = facts.answers if facts.files else ctx._cache
    if key not in cache:
        cache[key] = _wrapper_dims(ctx, name)
    return cache[key]


def _wrapper_dims(ctx: Context, name: str) -> int | None:
    klass = ctx.local_classes.get(name)
    where = ctx
    if klass is None:
        needle = f"class {name}("
        for path, text in ctx.project.files:
            if needle in text and path != ctx.path:
                other = parsed_file(ctx.project, path, text)
                klass = other.local_classes.get(name) if other is not None else None
                where = other  # type: ignore[assignment]
                if klass is not None:
                    break
    if klass is None:
        return None
    init = next((i for i in klass.body if i.__class__ is ast.FunctionDef and i.name == "__init__"), None)
    forward = next((i for i in klass.body if i.__class__ is ast.FunctionDef and i.name == "forward"), None)
    if init is None or forward is None:
        return None
    defaults = {a.arg: d for a, d in zip(init.args.args[::-1], init.args.defaults[::-1])}
    convs = [n for n in ast.walk(init) if n.__class__ is ast.Call and where.qualname(n.func) in CONV_DIMS]
    if len(convs) != 1 or has_star_args(convs[0]):
        return None
    conv = convs[0]
    bias = argument(conv, "bias", 7)
    if bias is not None and bias.__class__ is ast.Name:
        default = defaults.get(bias.id)
        bias = default if default is not None else bias
    if not _true(bias):
        return None
    if any(n.__class__ is ast.Call and where.qualname(n.func) in BN_DIMS for n in ast.walk(klass)):
        return None  # the wrapper normalises itself
    return CONV_DIMS[where.qualname(conv.func)]
