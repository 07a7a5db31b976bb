"""TW209: a convolution with a bias directly followed by BatchNorm."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, has_star_args
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule

_CONV_DIMS = {
    "torch.nn.Conv1d": 1, "torch.nn.Conv2d": 2, "torch.nn.Conv3d": 3,
    "torch.nn.ConvTranspose1d": 1, "torch.nn.ConvTranspose2d": 2, "torch.nn.ConvTranspose3d": 3,
}
_BN_DIMS = {"torch.nn.BatchNorm1d": 1, "torch.nn.BatchNorm2d": 2, "torch.nn.BatchNorm3d": 3, "torch.nn.SyncBatchNorm": 0}


def conv_with_bias(ctx: Context, call: ast.AST) -> int | None:
    """Dimensionality of an ``nn.ConvNd(...)`` call that keeps its bias, else None."""
    if call.__class__ is not ast.Call:
        return None
    q = ctx.qualname(call.func)
    dims = _CONV_DIMS.get(q or "")
    if dims is None or has_star_args(call):
        return None
    bias = argument(call, "bias", 7)  # 8th positional for Conv and ConvTranspose alike
    if bias is None:
        return dims
    if bias.__class__ is ast.Constant and bias.value is True:
        return dims
    return None


def bn_dims(ctx: Context, call: ast.AST) -> int | None:
    if call.__class__ is not ast.Call:
        return None
    return _BN_DIMS.get(ctx.qualname(call.func) or "")


def _matches(conv: int, bn: int) -> bool:
    return bn == 0 or conv == bn


class ConvBiasBeforeBatchNorm(Rule):
    code = "TW209"
    name = "conv-bias-before-batchnorm"
    triggers = ("BatchNorm",)
    doc = """\
What it flags
  An `nn.ConvNd`/`nn.ConvTransposeNd` that keeps its bias (no `bias=False`) immediately
  followed by a BatchNorm of the same dimensionality: adjacent in an `nn.Sequential(...)`, or
  `self.bn(self.conv(x))` / `x = self.conv(x); x = self.bn(x)` in a module whose `__init__`
  builds them.

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

    def check(self, ctx: Context) -> Iterator[Finding]:
        reported: set[int] = set()
        for seq in ctx.calls_to("torch.nn.Sequential"):
            items = seq.args
            for first, second in zip(items, items[1:]):
                d = conv_with_bias(ctx, first)
                b = bn_dims(ctx, second)
                if d is not None and b is not None and _matches(d, b) and id(first) not in reported:
                    reported.add(id(first))
                    yield self._finding(ctx, first)
        for cls in ctx.nodes.get(ast.ClassDef, ()):
            yield from self._check_class(ctx, cls, reported)

    def _finding(self, ctx: Context, conv: ast.AST) -> Finding:
        return ctx.finding(
            self.code, conv,
            "convolution bias right before BatchNorm is cancelled by the normalisation",
            suggestion="pass bias=False to the convolution",
        )

    def _check_class(self, ctx: Context, cls: ast.ClassDef, reported: set[int]) -> Iterator[Finding]:
        convs: dict[str, tuple[int, ast.AST]] = {}
        bns: dict[str, int] = {}
        for item in cls.body:
            if item.__class__ is not ast.FunctionDef or item.name != "__init__":
                continue
            for node in ctx.walk_body(item.body):
                if node.__class__ is not ast.Assign or len(node.targets) != 1:
                    continue
                t = node.targets[0]
                if t.__class__ is not ast.Attribute or t.value.__class__ is not ast.Name or t.value.id != "self":
                    continue
                d = conv_with_bias(ctx, node.value)
                if d is not None:
                    convs[t.attr] = (d, node.value)
                b = bn_dims(ctx, node.value)
                if b is not None:
                    bns[t.attr] = b
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
                arg = node.args[0]
                conv = _self_attr_call(arg) if arg.__class__ is ast.Call else None
                if conv is None and arg.__class__ is ast.Name:
                    b = ctx.binding_at(arg.id, node)
                    if b is not None and b.kind == "assign" and b.value.__class__ is ast.Call:
                        conv = _self_attr_call(b.value)
                if conv is None or conv not in convs:
                    continue
                d, conv_call = convs[conv]
                if _matches(d, bns[bn]) and id(conv_call) not in reported:
                    reported.add(id(conv_call))
                    yield self._finding(ctx, conv_call)


def _self_attr_call(call: ast.Call) -> str | None:
    func = call.func
    if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self":
        return func.attr
    return None


RULE = ConvBiasBeforeBatchNorm()
