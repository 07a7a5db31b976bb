"""TW209: a convolution with a bias directly followed by BatchNorm."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.addedlayers import added_pairs
from torchwise.lint.semantics.biaslayers import conv_with_bias, helper_conv_with_bias, wrapped_conv_with_bias
from torchwise.lint.semantics.handbias import hand_biases
from torchwise.lint.semantics.helperpairs import helper_pair_calls
from torchwise.lint.semantics.normlayers import bn_dims, held_bn_dims, optional_bn
from torchwise.lint.semantics.layerlists import bound_layer, copied_layer, named_layers, see_through, zipped_source

def _matches(conv: int, bn: int) -> bool:
    return bn == 0 or conv == bn


class ConvBiasBeforeBatchNorm(Rule):
    code = "TW209"
    name = "conv-bias-before-batchnorm"
    triggers = ("BatchNorm",)
    doc = """\
What it flags
  An `nn.ConvNd`/`nn.ConvTransposeNd` that keeps its bias (no `bias=False`; also `bias=bias`
  where that parameter of `__init__` defaults to True), or an `nn.Linear` that keeps its bias
  before a `BatchNorm1d`, immediately followed by a BatchNorm of the same dimensionality:
  adjacent in an `nn.Sequential(...)` (also a layer the function bound to a name just before,
  `conv = nn.Conv2d(c, k, 3, bias=bias)` then `nn.Sequential(conv, nn.BatchNorm2d(k))`; also `nn.Sequential(*layers)` over a list written out
  just before, `self.layers = [self.C, self.BN, self.relu]`, each `self.` layer as `__init__`
  assigns it in any branch, and `nn.Sequential(OrderedDict([("fc1", nn.Linear(a, b)), ("bn1",
  nn.SyncBatchNorm(b)), ...]))` over named pairs), or
  `self.bn(self.conv(x))` / `x = self.conv(x); x = self.bn(x)` in a module whose `__init__`
  builds them (also `h = self.fc(x); self.bn(h.view(-1, c))` for an `nn.Linear` whose output
  size is written as the BatchNorm1d's feature count; also through a join along the channels, `self.bn(torch.cat([self.conv(x),
  self.pool(x)], 1))`, as in ENet/ERFNet downsampling blocks; also through a slice of the time or space axes, `.contiguous()` or a method that
  only returns its input or a slice of it: `self.bn(self.conv(x)[:, :, :-pad])`; also when `self.conv` is an `nn.Sequential(...)` that ends with that
  convolution, in any branch of `__init__`: `if asymmetric: self.conv2 = nn.Sequential(...,
  nn.Conv2d(c, c, (5, 1)))`), or `bn(conv(x))` over pairs of `nn.ModuleList`s that `__init__` fills
  (`self.mlp_convs.append(nn.Conv2d(...))`, `self.mlp_bns.append(nn.BatchNorm2d(...))`, or
  lists of copies, `nn.ModuleList([nn.Conv1d(c, c, k) for k in ks])`, `clones(Conv(c, c, 5), 3)`;
  paired by position in `for conv, bn in zip(self.convs, self.bns)`; also `h = self.convs[i](h)`
  then `if self.is_bn: h = self.bns[i](h)`, and a list of copies assigned in each branch of an
  `if`, every branch reported), or
  added one after the other to one container, `cnn.add_module("conv1", nn.Conv2d(...))` then
  `cnn.add_module("bn1", nn.BatchNorm2d(...))` (also a name the builder binds to a biased
  convolution in each branch, `if index == 0: conv = nn.Conv2d(c_in, c, 3)` / `else: conv =
  nn.Conv2d(c, c, 3)`, then `stage.add_module(f"conv{index}", conv)`), or appended to one list of layers
  (`layers += [nn.Conv2d(...)]`, `layers.append(...)` or a list started `layers =
  [nn.Linear(in_dim, hidden)]`, then the BatchNorm; or one statement `layers += [conv2d,
  nn.BatchNorm2d(v), nn.ReLU()]` with `conv2d = nn.Conv2d(...)` bound before it or written in
  the list, `layers += [nn.Conv2d(c, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU()]`, also
  `layers.extend([...])`) - also under
  `if batch_norm:`, a flag of the building helper that some call turns on (`conv_relu(2, True)`,
  `make_layers(cfg, batch_norm=True)`, or for an `__init__` a construction of the class here
  or in another module, `Head(dim, n, use_bn=args.use_bn_in_head)`; never turned on: quiet).
  In an `nn.Sequential(...)` the BatchNorm may be chosen by a conditional expression,
  `nn.BatchNorm2d(c) if use_bn else nn.Sequential()` (not when `use_bn` is a parameter off by
  default). The convolution may sit inside a weight reparametrisation, which keeps its bias
  (`SpectralNorm(nn.ConvTranspose2d(...))`, the usual hand-written SAGAN class;
  `nn.utils.spectral_norm(nn.Conv2d(...))`, `weight_norm(...)`). The
  convolution may also be the project's own wrapper class (`ConvNorm(...)`, here or in another
  module: one biased `nn.ConvNd` whose bias parameter defaults to True, returned by `forward`)
  or a helper function of the file that only returns one (`conv3x3(in_planes, planes)`
  returning `nn.Conv2d(..., bias=True)`), or the project's own subclass of `nn.ConvNd` (or of
  `nn.Linear`) that hands a `bias` parameter (True by default) to its base, by keyword or in the
  base's own position, and still convolves (`class Conv2d_fw(nn.Conv2d)` with fast weights; a
  pruning library's masked `layers.Conv2d` whose `forward` calls `self._conv_forward`), in this
  file or imported from another module of the project (`from Layers import layers`,
  `from .layers import Conv2d`). The BatchNorm may be the project's own subclass of one, also
  imported (`layers.BatchNorm2d(c)`; `class _BatchNorm2d(nn.BatchNorm2d)` with other defaults, or a `forward` of its own that still
  calls `F.batch_norm`; one whose `forward` computes something else stays quiet), or a
  `self.norm3` put in the `nn.Sequential` by the method that assigns it a BatchNorm in some branch (`elif norm_fn == 'batch': self.norm3 = nn.BatchNorm2d(planes)`; a
  norm that is only ever GroupNorm, InstanceNorm or an identity stays quiet).
  Also a bias a module adds by hand right before its BatchNorm: a hand-written linear or graph
  layer whose `forward` does `output = torch.mm(x, self.weight)`, `output = output + self.bias`
  and next `self.bn(output)`, with `self.bias = nn.Parameter(...)` and `self.bn =
  nn.BatchNorm1d(...)` made in `__init__` (reported at the bias `Parameter`; not when either is
  made under a flag of `__init__` that is off by default).
  Also a call of the project's layer-building helper function whose bias and BatchNorm are both
  parameters, `def conv(cin, cout, bn=True, bias=True)` starting a list of layers with
  `nn.Conv2d(..., bias=bias)` and appending `nn.BatchNorm2d(cout)` under `if bn:`: reported at
  each call that leaves both on, `conv(c, c)` (here or in a module that imports the helper); not
  `conv(c, c, bias=False)`, `conv(c, c, bn=False)`, nor a call passing a variable for either.

Why it matters
  BatchNorm subtracts the per-channel mean right after the convolution, which removes any
  constant per-channel offset - the convolution's bias included - and then adds its own
  learnable shift. The conv bias is dead weight: extra parameters, optimizer state and a
  memory pass per layer that change nothing.

Example
  nn.Sequential(nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU())   # TW209

Fix
  `nn.Conv2d(64, 128, 3, padding=1, bias=False)`. Not applied automatically: it changes the
  state dict, so old checkpoints would need `strict=False` or a key filter.

Lint and the doctor
  Lint sees a biased convolution followed by BatchNorm where both are written next to each
  other. The doctor follows the recorded forward pass: a BatchNorm that receives exactly the
  output of a biased convolution, however the model is built.
"""

    def applies_to(self, source: str) -> bool:
        return "BatchNorm" in source or "Module" in source or "Sequential" in source  # (calls of a helper elsewhere)

    def check(self, ctx: Context) -> Iterator[Finding]:
        yield from self._helper_calls(ctx)
        if "BatchNorm" not in ctx.source:
            return
        reported: set[int] = set()
        for seq in ctx.calls_to("torch.nn.Sequential"):
            func = ctx.function_of(seq)
            params = func.args if func is not None and func.__class__ is ast.FunctionDef else None
            items = _listed_layers(ctx, seq) or named_layers(ctx, seq) or [[bound_layer(ctx, a, seq)] for a in seq.args]
            for firsts, seconds in zip(items, items[1:]):
                for first in firsts:
                    b = next((b for b in (optional_bn(ctx, s, params) if s.__class__ is ast.IfExp else
                                          bn_dims(ctx, s) if s.__class__ is ast.Call else held_bn_dims(ctx, s)
                                          for s in seconds) if b is not None), None)
                    d = conv_with_bias(ctx, first, params) if b is not None else None
                    if d is None and first.__class__ is ast.Call and b is not None:
                        d = wrapped_conv_with_bias(ctx, first) or helper_conv_with_bias(ctx, first)
                    if d is not None and b is not None and _matches(d, b) and id(first) not in reported:
                        reported.add(id(first))
                        yield self._finding(ctx, first)
        for cls in ctx.nodes.get(ast.ClassDef, ()):
            yield from self._check_class(ctx, cls, reported)
            for bias in hand_biases(ctx, cls) if "Parameter" in ctx.source else ():
                if id(bias) not in reported:  # output = output + self.bias; output = self.bn(output)
                    reported.add(id(bias))
                    yield ctx.finding(self.code, bias, "bias added by hand right before BatchNorm is cancelled by the "
                                      "normalisation", suggestion="drop the bias parameter where the BatchNorm follows")
        if "add_module" in ctx.source or "BatchNorm" in ctx.source:
            for conv in added_pairs(ctx):
                if id(conv) not in reported:
                    reported.add(id(conv))
                    yield self._finding(ctx, conv)

    def _helper_calls(self, ctx: Context) -> Iterator[Finding]:
        for call in helper_pair_calls(ctx):  # conv(c, c) of `def conv(..., bn=True, bias=True)`: both left on
            yield ctx.finding(self.code, call, f"{ctx.text(call.func)}() builds a convolution with its bias on right before "
                              "BatchNorm, which cancels it", suggestion="pass bias=False (or make it the helper's default)")

    def _finding(self, ctx: Context, conv: ast.AST) -> Finding:
        layer = "linear layer" if conv.__class__ is ast.Call and ctx.qualname(conv.func) == "torch.nn.Linear" else "convolution"
        return ctx.finding(
            self.code, conv,
            f"{layer} bias right before BatchNorm is cancelled by the normalisation",
            suggestion=f"pass bias=False to the {layer}",
        )

    def _check_class(self, ctx: Context, cls: ast.ClassDef, reported: set[int]) -> Iterator[Finding]:
        convs: dict[str, list[tuple[int, ast.AST]]] = {}
        bns: dict[str, int] = {}
        bn_nodes: dict[str, ast.AST] = {}
        for item in cls.body:
            if item.__class__ is not ast.FunctionDef or item.name != "__init__":
                continue
            for node in ctx.walk_body(item.body):
                if node.__class__ is not ast.Assign or len(node.targets) != 1:
                    continue
                t = node.targets[0]
                if t.__class__ is not ast.Attribute or t.value.__class__ is not ast.Name or t.value.id != "self":
                    continue
                value = node.value
                if ctx.qualname(getattr(value, "func", None)) == "torch.nn.Sequential" and value.args and not value.keywords:
                    value = value.args[-1]  # nn.Sequential(..., nn.Conv2d(...)): its last layer meets what follows
                d = conv_with_bias(ctx, value, item.args)
                if d is None:
                    d = helper_conv_with_bias(ctx, value)
                if d is None and value.__class__ is ast.Call:
                    d = wrapped_conv_with_bias(ctx, value)  # self.conv1 = Conv(c, c, 5): the project's biased wrapper
                if d is not None:
                    convs.setdefault(t.attr, []).append((d, value))  # one per branch (if asymmetric: ... else: ...)
                b = bn_dims(ctx, node.value)
                if b is not None:
                    bns[t.attr] = b
                    bn_nodes[t.attr] = node.value
        yield from self._module_list_pairs(ctx, cls, reported)
        if not convs or not bns:
            return
        for item in cls.body:
            if item.__class__ is not ast.FunctionDef or item.name == "__init__":
                continue
            for node in ctx.walk_body(item.body):
                if node.__class__ is not ast.Call:
                    continue
                bn = _self_attr_call(node)
                if bn is None or bn not in bns or len(node.args) != 1:
                    continue
                arg = _through(ctx, cls, node.args[0])
                flat = _flattened(arg)  # self.bn1(h.view(-1, c)) after h = self.fc(x): the Linear's features stay last
                if flat is not None:
                    arg = flat
                if arg.__class__ is ast.Name:
                    b = ctx.binding_at(arg.id, node)
                    value = _through(ctx, cls, b.value) if b is not None and b.kind == "assign" else None
                    arg = value if value.__class__ is ast.Call else arg
                parts = _channel_cat_parts(ctx, arg) if arg.__class__ is ast.Call else None
                for part in parts if parts is not None else [arg]:
                    if parts is not None and part.__class__ is ast.Name:  # x2 = self.conv(x); torch.cat([x2, x1], 1)
                        b = ctx.binding_at(part.id, arg)
                        part = b.value if b is not None and b.kind == "assign" and b.value is not None else part
                    part = _through(ctx, cls, part)
                    conv = _self_attr_call(part) if part.__class__ is ast.Call else None
                    for d, conv_call in convs.get(conv or "", ()):
                        if flat is not None and not _same_features(ctx, conv_call, bn_nodes.get(bn)):
                            continue
                        if _matches(d, bns[bn]) and id(conv_call) not in reported:
                            reported.add(id(conv_call))
                            yield self._finding(ctx, conv_call)


    def _module_list_pairs(self, ctx: Context, cls: ast.ClassDef, reported: set[int]) -> Iterator[Finding]:
        """``self.mlp_convs.append(nn.Conv2d(...))`` and ``self.mlp_bns.append(nn.BatchNorm2d(...))``
        in ``__init__`` (also through a local ``nn.ModuleList`` appended to ``self.conv_blocks``),
        then ``bn(conv(x))`` in a method where ``conv`` comes from one list and ``bn`` from the other."""
        text = ctx.text(cls)
        if "BatchNorm" not in text or "append(" not in text and "ModuleList" not in text and "clones(" not in text:
            return
        convs, bns = _appended_layers(ctx, cls)
        if not convs or not bns:
            return
        for item in cls.body:
            if item.__class__ is not ast.FunctionDef or item.name == "__init__":
                continue
            text = ctx.text(item)
            if not any(f"self.{b}" in text for b in bns):
                continue
            for node in ctx.walk_body(item.body):
                if node.__class__ is not ast.Call or len(node.args) != 1:
                    continue
                inner = _through(ctx, cls, node.args[0])
                if inner.__class__ is ast.Name:  # h = self.convs[i](h); if self.is_bn: h = self.bns[i](h)
                    b = ctx.binding_at(inner.id, node)
                    inner = _through(ctx, cls, b.value) if b is not None and b.kind == "assign" else inner
                if inner.__class__ is not ast.Call:
                    continue
                bn = _list_of(ctx, node.func, node, bns)
                conv = _list_of(ctx, inner.func, inner, convs) if bn is not None else None
                if conv is None:
                    continue
                for d, conv_call in convs[conv]:
                    if _matches(d, bns[bn]) and id(conv_call) not in reported:
                        reported.add(id(conv_call))
                        yield self._finding(ctx, conv_call)


def _appended_layers(ctx: Context, cls: ast.ClassDef) -> tuple[dict[str, list[tuple[int, ast.AST]]], dict[str, int]]:
    """The ``self.`` lists of ``__init__`` that biased convolutions / BatchNorms are appended to
    (a list of copies assigned in each branch, ``if dilated: self.convs = nn.ModuleList([...])``
    / ``else: ...``, gives one per branch)."""
    convs: dict[str, list[tuple[int, ast.AST]]] = {}
    bns: dict[str, int] = {}
    local: dict[str, tuple[str, tuple[int, ast.AST] | int]] = {}
    init = next((i for i in cls.body if i.__class__ is ast.FunctionDef and i.name == "__init__"), None)
    if init is None:
        return convs, bns
    appends = [n for n in ast.walk(init) if n.__class__ is ast.Call and n.func.__class__ is ast.Attribute
               and n.func.attr == "append" and len(n.args) == 1]
    for node in ctx.walk_body(init.body):
        if node.__class__ is ast.Assign and len(node.targets) == 1 and node.targets[0].__class__ is ast.Attribute \
                and ctx.text(node.targets[0].value) == "self":
            layer = copied_layer(ctx, node.value)
            if layer is not None:
                d = conv_with_bias(ctx, layer) or wrapped_conv_with_bias(ctx, layer)
                b = bn_dims(ctx, layer)
                if d is not None:
                    convs.setdefault(node.targets[0].attr, []).append((d, layer))
                elif b is not None:
                    bns[node.targets[0].attr] = b
    for call in sorted(appends, key=lambda c: (c.lineno, c.col_offset)):
        owner, arg = call.func.value, call.args[0]
        d, b = conv_with_bias(ctx, arg), bn_dims(ctx, arg)
        if owner.__class__ is ast.Name:
            if d is not None:
                local[owner.id] = ("conv", (d, arg))
            elif b is not None:
                local[owner.id] = ("bn", b)
            continue
        if owner.__class__ is not ast.Attribute or owner.value.__class__ is not ast.Name or owner.value.id != "self":
            continue
        if arg.__class__ is ast.Name and arg.id in local:
            kind, value = local[arg.id]
            d, b = (value, None) if kind == "conv" else (None, value)  # type: ignore[assignment]
            d = d[0] if d is not None else None  # type: ignore[index]
            arg = local[arg.id][1][1] if kind == "conv" else arg  # type: ignore[index]
        if d is not None and owner.attr not in convs:
            convs[owner.attr] = [(d, arg)]  # the first: an MLP's last Linear (its output) often has no norm after it
        elif b is not None:
            bns[owner.attr] = b
    return convs, bns


def _list_of(ctx: Context, func: ast.AST, use: ast.AST, lists: dict) -> str | None:
    """Which ``self.`` list of ``lists`` the called layer comes from: ``conv`` bound by
    ``for conv in self.mlp_convs`` / ``enumerate(...)``, ``bn = self.mlp_bns[i]``, or
    ``self.mlp_bns[i](...)`` itself."""
    expr = func
    if func.__class__ is ast.Name:
        b = ctx.binding_at(func.id, use)
        if b is None or b.node is None:
            return None
        expr = b.node.iter if b.kind == "for" and b.node.__class__ is ast.For else b.value
        if expr is None:
            return None
        if b.kind == "for" and b.node.__class__ is ast.For:
            expr = zipped_source(b.node, func.id) or expr  # for conv, bn in zip(self.convs, self.bns): conv's list
    for n in ast.walk(expr):
        if n.__class__ is ast.Attribute and n.value.__class__ is ast.Name and n.value.id == "self" and n.attr in lists:
            return n.attr
    return None


def _listed_layers(ctx: Context, seq: ast.Call) -> list[list[ast.AST]]:
    """``nn.Sequential(*layers)`` over a list written out just before, in the same function
    (``self.layers = [self.C, self.BN, self.relu]``): its items in order, each ``self.`` layer as
    the values ``__init__`` assigns it (one per branch: ``if maml: self.C = Conv2d_fw(...)
    else: self.C = nn.Conv2d(...)``)."""
    if len(seq.args) != 1 or seq.args[0].__class__ is not ast.Starred or seq.keywords:
        return []
    held = seq.args[0].value
    value = None
    if held.__class__ is ast.Name:
        value = ctx.resolve(held, seq)
    elif held.__class__ is ast.Attribute and held.value.__class__ is ast.Name and held.value.id == "self":
        value = ctx.single_self_value(held, seq)
    if value is None or value.__class__ is not ast.List or ctx.function_of(value) is not ctx.function_of(seq):
        return []
    cls = ctx.class_of(seq)
    items = []
    for elt in value.elts:
        if elt.__class__ is ast.Attribute and elt.value.__class__ is ast.Name and elt.value.id == "self" and cls is not None:
            items.append(ctx.self_attr_values(cls, elt.attr) or [elt])
        else:
            items.append([elt])
    return items


_CATS = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})


def _channel_cat_parts(ctx: Context, call: ast.Call) -> list[ast.AST] | None:
    """The tensors ``torch.cat([self.conv(x), self.pool(x)], 1)`` joins along the channels: the
    BatchNorm after it still normalises each of the conv's channels on its own."""
    if ctx.qualname(call.func) not in _CATS or not call.args or call.args[0].__class__ not in (ast.List, ast.Tuple):
        return None
    dim = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg in ("dim", "axis")), None)
    if dim is None or dim.__class__ is not ast.Constant or dim.value != 1 or dim.value is True:
        return None
    return list(call.args[0].elts)


def _flattened(expr: ast.AST | None) -> ast.AST | None:
    """``h.view(-1, c)`` / ``h.reshape(-1, c)``: ``h``, its leading axes folded into one."""
    if expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in ("view", "reshape") \
            and len(expr.args) == 2 and not expr.keywords and ast.dump(expr.args[0]) == _MINUS_ONE:
        return expr.func.value
    return None


_MINUS_ONE = ast.dump(ast.parse("-1", mode="eval").body)


def _same_features(ctx: Context, linear: ast.AST, bn: ast.AST | None) -> bool:
    """An ``nn.Linear`` whose output size is written as the BatchNorm1d's feature count
    (``nn.Linear(n, 2 * c)``, ``nn.BatchNorm1d(2 * c)``): folding the leading axes keeps its
    features as the BatchNorm's channels, each bias entry a constant of one channel."""
    if linear.__class__ is not ast.Call or ctx.qualname(linear.func) != "torch.nn.Linear" or bn.__class__ is not ast.Call:
        return False
    out = linear.args[1] if len(linear.args) > 1 else next((k.value for k in linear.keywords if k.arg == "out_features"), None)
    feats = bn.args[0] if bn.args else next((k.value for k in bn.keywords if k.arg == "num_features"), None)
    return out is not None and feats is not None and ast.dump(out) == ast.dump(feats)


def _through(ctx: Context, cls: ast.ClassDef, expr: ast.AST | None) -> ast.AST | None:
    return see_through(ctx, cls, expr) if expr is not None else None


def _self_attr_call(call: ast.Call) -> str | None:
    func = call.func
    if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self":
        return func.attr
    return None


RULE = ConvBiasBeforeBatchNorm()
