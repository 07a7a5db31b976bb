"""A learning-rate scheduler handed into a function (``def load_checkpoint(..., scheduler, ...)``,
``self.scheduler = scheduler``) in a project whose every scheduler is one of torch's epoch-counting
classes: then ``scheduler.step(n)`` passes the deprecated epoch argument, whoever built it.

Worked out from the text of the project's files, once per process: the project builds at least one
of torch's schedulers (``lr_scheduler.LambdaLR(...)``, ``from torch.optim.lr_scheduler import
StepLR``) and nothing that takes ``step(metric)`` or ``step(epoch)`` by design: no
``ReduceLROnPlateau``, no scheduler library (timm, fairseq, mmcv, a ``warmup_scheduler``
package, a module of the project named for schedulers), no scheduler class of its own.
"""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile

_TORCH_SCHEDULERS = ("StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "MultiplicativeLR",
                     "CyclicLR", "OneCycleLR", "CosineAnnealingWarmRestarts", "LinearLR", "ConstantLR", "PolynomialLR",
                     "SequentialLR", "ChainedScheduler")
_BUILT = lazy_compile(r"lr_scheduler\.(?:" + "|".join(_TORCH_SCHEDULERS) + r")\(|from[ \t]+torch\.optim\.lr_scheduler[ \t]+import")
# anything whose step() takes a metric or an epoch by design
_OTHER = lazy_compile(r"Plateau|\btimm\b|fairseq|mmcv|^[ \t]*(?:from|import)[ \t]+(?!torch\.optim\.lr_scheduler\b)[\w.]*sched",
                    re.M | re.I)
_OWN_CLASS = lazy_compile(r"^[ \t]*class[ \t]+\w*(?:Sched|LR\b|LR\(|Warmup)", re.M)
# an argument that reads as a metric, which a plateau-like step would take
_METRIC = lazy_compile(r"loss|acc|metric|score|val|err|perf|dice|iou|map\b|bleu|f1|psnr|reward", re.I)


def _torch_schedulers_only(ctx: Context) -> bool:
    found = ctx.project.answers.get("schedulerparams:only")
    if found is None:
        texts = [t for _, t in ctx.project.files if "sched" in t.lower()]
        found = any(_BUILT.search(t) for t in texts) and not any(
            _OTHER.search(t) or _OWN_CLASS.search(t) for t in texts)
        ctx.project.answers["schedulerparams:only"] = found
    return found


def handed_scheduler(ctx: Context, recv: AST, use: AST) -> bool:
    """``recv`` (the receiver of ``.step(n)``) is a scheduler handed in - a parameter, or a ``self.``
    attribute, named for a scheduler - in a project whose schedulers are all torch's epoch-counting ones."""
    if recv.__class__ is ast.Name:
        b = ctx.binding_at(recv.id, use)
        if b is None or b.kind != "param":
            return False
        name = recv.id
    elif recv.__class__ is ast.Attribute and recv.value.__class__ is ast.Name and recv.value.id == "self":
        name = recv.attr
    else:
        return False
    if "sched" not in name.lower() or not ctx.project.files:
        return False
    return _torch_schedulers_only(ctx)


def epoch_like(ctx: Context, arg: AST) -> bool:
    """The one argument of ``step`` reads as an epoch or step count, not a metric."""
    if arg.__class__ is ast.Constant:
        return type(arg.value) is int
    return _METRIC.search(ctx.text(arg)) is None
