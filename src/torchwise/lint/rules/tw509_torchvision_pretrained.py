"""TW509: torchvision model builders called with the removed ``pretrained=`` arguments."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.files import in_compat_fallback

_OLD_TO_NEW = {"pretrained": "weights", "pretrained_backbone": "weights_backbone"}


class TorchvisionPretrained(Rule):
    code = "TW509"
    name = "torchvision-pretrained-arg"
    triggers = ("torchvision",)
    fixable = True
    doc = """\
What it flags
  A call of a `torchvision.models` builder (`resnet50(...)`, `models.detection.fasterrcnn_resnet50_fpn(...)`)
  with `pretrained=` or `pretrained_backbone=`, or with `True`/`False` (or a value named for
  the flag: `pretrained`, `args.pretrained`, or a boolean expression: `not opt.load_path`) as its
  first argument; also a builder chosen by
  name, `getattr(torchvision.models, backbone)(pretrained=False)`, or looked up in the module's
  namespace, `models.__dict__[args.arch](pretrained=True)` / `vars(models)[arch](...)`, also in one of
  the zoo's modules, `from torchvision.models import resnet` then `resnet.__dict__[name](pretrained=p)`.
  Also a builder taken from a dict of torchvision builders the code builds itself
  (`resnets = {18: models.resnet18, 50: models.resnet50}` then `resnets[num_layers](pretrained)`).
  Also a builder called by a name the file never binds although it imports torchvision
  (`inception_v3(pretrained=False)` whose import was lost), and a thin wrapper of the file that
  hands its `**kwargs`/`*args` on to a builder unchanged (`def _inception_v3(*args, **kwargs):
  return torchvision.models.inception_v3(*args, **kwargs)` called as `_inception_v3(pretrained=True)`;
  not a wrapper whose code names `pretrained` itself, which may translate it). Not flagged: the same lookups in a dict or module of your own (`my_models.__dict__[arch](...)`,
  `BUILDERS[arch](pretrained=True)` over the project's builders): their builders may still take
  `pretrained=`.
  The old-torchvision branch of version-compatible code is left alone: the fallback in
  `except TypeError:` after a call with `weights=`, or under a version test.

Why it matters
  Since torchvision 0.13 the builders take `weights=`/`weights_backbone=` (an enum naming the
  exact checkpoint); the boolean arguments warn and are being removed. `pretrained=True` also
  hides which of several published checkpoints you get.

Example
  import torchvision
  model = torchvision.models.resnet50(pretrained=True)        # TW509

Fix
  `weights=ResNet50_Weights.IMAGENET1K_V1` (what `pretrained=True` loaded) or
  `weights="DEFAULT"` (the best available, which may differ). `torchwise lint --fix` rewrites
  `pretrained=False` to `weights=None` (the same); `pretrained=True` -> `weights="DEFAULT"` is
  only an unsafe fix, since DEFAULT may be a newer checkpoint than the one loaded before.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.nodes.get(ast.Call, ()):
            if not call.keywords and not call.args:
                continue
            q = ctx.qualname(call.func) or _dynamic_builder(ctx, call.func) or _unbound_builder(ctx, call) \
                or _forwarding_builder(ctx, call)
            if q is None or not q.startswith("torchvision.models."):
                continue
            if in_compat_fallback(ctx, call):
                continue  # the branch for torchvision < 0.13, next to the weights= call
            first = call.args[0] if call.args else None
            if first is not None and _pretrained_flag(first) and q.rsplit(".", 1)[-1][:1].islower():
                yield ctx.finding(self.code, first, "a positional pretrained flag is deprecated in torchvision; pass weights=",
                                  suggestion="pass weights=<Model>_Weights.<NAME> (or \"DEFAULT\", or None)")
            for kw in call.keywords:
                new = _OLD_TO_NEW.get(kw.arg or "")
                if new is None:
                    continue
                fix = None
                value = kw.value
                if value.__class__ is ast.Constant and value.value is False:
                    fix = Fix(f"use {new}=None", (ctx.replace(kw, f"{new}=None"),))
                elif value.__class__ is ast.Constant and value.value is True:
                    fix = Fix(f'use {new}="DEFAULT"', (ctx.replace(kw, f'{new}="DEFAULT"'),), safe=False,
                              why_unsafe="DEFAULT may name a newer checkpoint than the one pretrained=True loaded")
                yield ctx.finding(self.code, kw, f"{kw.arg}= is deprecated in torchvision; use {new}=",
                                  suggestion=f"pass {new}=<Model>_Weights.<NAME> (or \"DEFAULT\", or None)", fix=fix)


_BUILDER_MODULES = ("torchvision.models", "torchvision.models.detection", "torchvision.models.segmentation",
                    "torchvision.models.video", "torchvision.models.quantization")


def _dynamic_builder(ctx: Context, func: ast.AST) -> str | None:
    """A builder chosen by name (an architecture option): ``getattr(torchvision.models, name)``,
    ``models.__dict__[name]`` or ``vars(models)[name]``."""
    if func.__class__ is ast.Subscript:
        space = func.value
        if space.__class__ is ast.Name:
            return _builder_table(ctx, space, func)
        if space.__class__ is ast.Attribute and space.attr == "__dict__":
            owner = ctx.qualname(space.value)
        elif space.__class__ is ast.Call and getattr(space.func, "id", None) == "vars" and len(space.args) == 1:
            owner = ctx.qualname(space.args[0])
        else:
            return None
    elif func.__class__ is ast.Call and getattr(func.func, "id", None) == "getattr" and len(func.args) >= 2:
        owner = ctx.qualname(func.args[0])
    else:
        return None
    return f"{owner}.builder" if owner in _BUILDER_MODULES or _builder_submodule(owner) else None


def _builder_submodule(owner: str | None) -> bool:
    """A module of torchvision's model zoo that defines builders (``torchvision.models.resnet``,
    ``torchvision.models.segmentation.deeplabv3``): its namespace holds them too, and its classes
    take no ``pretrained``; not a private helper module (``torchvision.models._utils``)."""
    if owner is None or not owner.startswith("torchvision.models.") or owner in _BUILDER_MODULES:
        return False
    tail = owner.rsplit(".", 1)[-1]
    return not tail.startswith("_") and tail not in ("utils", "feature_extraction")


def _builder_table(ctx: Context, table: ast.Name, use: ast.AST) -> str | None:
    """``resnets[num_layers](pretrained)`` where this function (or the module) bound ``resnets`` to
    a dict literal whose every value is a torchvision builder (``{18: models.resnet18, ...}``)."""
    b = ctx.binding_at(table.id, use)
    value = b.value if b is not None and b.kind == "assign" else None
    if value.__class__ is not ast.Dict or not value.values:
        return None
    for v in value.values:
        q = ctx.qualname(v) if v.__class__ in (ast.Attribute, ast.Name) else None
        if q is None or q.rsplit(".", 1)[0] not in _BUILDER_MODULES or not q.rsplit(".", 1)[1][:1].islower():
            return None
    return "torchvision.models.builder"


# the names of torchvision's model builders (classification, detection, segmentation, video)
_BUILDER_NAME = lazy_compile(
    r"(resnet|resnext|wide_resnet|vgg|densenet|inception_v3|googlenet|alexnet|squeezenet|mobilenet_v[23]|"
    r"shufflenet_v2|mnasnet|efficientnet|regnet|convnext|fcn_resnet|deeplabv3|lraspp|fasterrcnn|maskrcnn|"
    r"keypointrcnn|retinanet|r3d_18|mc3_18|r2plus1d_18)[\w]*$")


def _unbound_builder(ctx: Context, call: ast.Call) -> str | None:
    """``inception_v3(pretrained=False, ...)`` in a file that imports torchvision but never binds the
    name (no import, definition, assignment or star import): a torchvision builder whose import was
    lost when the code was copied."""
    func = call.func
    if func.__class__ is not ast.Name or not _BUILDER_NAME.match(func.id) or ctx.binding_at(func.id, call) is not None \
            or not any(k.arg in _OLD_TO_NEW for k in call.keywords) or not ctx.imports_module("torchvision"):
        return None
    if any(a.name == "*" for n in ctx.nodes.get(ast.ImportFrom, ()) for a in n.names):
        return None
    if any(f.name == func.id for kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) for f in ctx.nodes.get(kind, ())):
        return None
    return f"torchvision.models.{func.id}"


def _forwarding_builder(ctx: Context, call: ast.Call) -> str | None:
    """``_inception_v3(pretrained=True)`` where ``_inception_v3`` is a module-level function of this
    file that hands its ``**kwargs`` (or ``*args``) on to a torchvision builder unchanged (its text
    never names the flag, so nothing strips or translates it): the builder gets the flag."""
    func = call.func
    if func.__class__ is not ast.Name or not (any(k.arg in _OLD_TO_NEW for k in call.keywords)
                                              or call.args and call.args[0].__class__ is ast.Constant):
        return None
    defs = [d for d in ctx.nodes.get(ast.FunctionDef, ()) if d.name == func.id]
    if len(defs) != 1 or ctx.parent(defs[0]) is not ctx.tree or ctx.binding_at(func.id, call) is None:
        return None
    d = defs[0]
    keep = {a.arg for a in (d.args.kwarg, d.args.vararg) if a is not None}
    if not keep or "pretrain" in ctx.text(d):
        return None
    for inner in ctx.walk_body(d.body):
        if inner.__class__ is not ast.Call:
            continue
        q = ctx.qualname(inner.func)
        if q is None or q.rsplit(".", 1)[0] not in _BUILDER_MODULES or not q.rsplit(".", 1)[1][:1].islower():
            continue
        handed = {k.value.id for k in inner.keywords if k.arg is None and k.value.__class__ is ast.Name}
        handed |= {a.value.id for a in inner.args if a.__class__ is ast.Starred and a.value.__class__ is ast.Name}
        if handed & keep:
            return q
    return None


def _pretrained_flag(arg: ast.AST) -> bool:
    """A positional first argument that is the old flag: ``True``/``False``, a boolean expression
    (``not opt.load_path``, ``a == b``), or a value named for it (``pretrained``, ``args.pretrained``,
    ``self.use_pretrained``)."""
    if arg.__class__ is ast.Constant:
        return type(arg.value) is bool
    if arg.__class__ is ast.UnaryOp and arg.op.__class__ is ast.Not or arg.__class__ is ast.Compare:
        return True  # vgg16(not opt.load_path), resnet18(args.init == "imagenet"): a boolean, so the flag
    name = arg.id if arg.__class__ is ast.Name else arg.attr if arg.__class__ is ast.Attribute else ""
    return "pretrain" in name.lower()


RULE = TorchvisionPretrained()
