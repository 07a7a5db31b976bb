"""TW109: BatchNorm frozen with ``.eval()`` and unfrozen again by a later ``model.train()``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule

_BN_CLASSES = ("BatchNorm", "SyncBatchNorm", "_BatchNorm", "_NormBase")


def _mentions_bn(ctx: Context, test: ast.AST, var: str) -> bool:
    """Does an ``if`` test single out BatchNorm layers held in ``var``?"""
    names_var = any(n.__class__ is ast.Name and n.id == var for n in ast.walk(test))
    for node in ast.walk(test):
        if node.__class__ is ast.Constant and isinstance(node.value, str) and "BatchNorm" in node.value:
            return True  # classname.find('BatchNorm') != -1
        if node.__class__ in (ast.Name, ast.Attribute):
            q = ctx.qualname(node)
            if q is not None and q.rsplit(".", 1)[-1].startswith(_BN_CLASSES) and names_var:
                return True
    return False


def is_bn_eval(ctx: Context, call: ast.Call) -> bool:
    func = call.func
    if call.args or call.keywords or func.__class__ is not ast.Attribute or func.attr != "eval":
        return False
    recv = func.value
    built = ctx.constructed_from(recv, call)
    if built is not None and built.rsplit(".", 1)[-1].startswith(_BN_CLASSES):
        return True
    if recv.__class__ is not ast.Name:
        return False
    for if_node, in_body in ctx.enclosing_ifs(call):
        if in_body and if_node.__class__ is ast.If and _mentions_bn(ctx, if_node.test, recv.id):
            return True
    return False


def _is_train_call(call: ast.Call) -> bool:
    func = call.func
    if func.__class__ is not ast.Attribute or func.attr != "train" or call.keywords:
        return False
    if not call.args:
        return True
    return len(call.args) == 1 and call.args[0].__class__ is ast.Constant and call.args[0].value is True


class BatchNormFrozenByEval(Rule):
    code = "TW109"
    name = "batchnorm-freeze-undone"
    triggers = ("BatchNorm",)
    doc = """\
What it flags
  BatchNorm layers put in eval mode to freeze them (`m.eval()` on a layer picked out by
  `isinstance(m, nn.BatchNorm2d)`, a class-name test for "BatchNorm", or built as BatchNorm),
  directly or through a helper function (`freeze_bn(model)`, `model.apply(set_bn_eval)`),
  when a `model.train()` in the same function or script runs after that and no freeze
  follows it. A `train()` override that re-applies the freeze is the correct pattern and
  silences the rule for the file.
  Not flagged: the freeze re-applied after `model.train()` in the epoch loop
  (`model.train(); model.freeze_bn()`, a detector's `freeze_bn()` that only calls `.eval()` on
  its BatchNorm layers). The running statistics then stay frozen, which is the point; the
  affine weight and bias still train, and that is a deliberate recipe, not a pitfall: with
  the few images per GPU of detection and segmentation, batch statistics are too noisy to
  update, while the per-channel scale and shift are cheap to adapt (mmdetection's standard
  detector configs do exactly this: `norm_eval=True` with `requires_grad=True`). Freezing
  the affine parameters too (`requires_grad_(False)`, `FrozenBatchNorm2d`,
  `torchwise.freeze_batchnorm`) is a choice of the recipe that lint cannot judge.

Why it matters
  `model.train()` sets every submodule back to training mode, the frozen BatchNorm layers
  included. Their running mean and variance start updating again from the small fine-tuning
  batches and drift away from the pre-trained statistics, quietly hurting accuracy.

Example
  def freeze_bn(model):
      for m in model.modules():
          if isinstance(m, nn.BatchNorm2d):
              m.eval()

  freeze_bn(model)                    # TW109
  for epoch in range(epochs):
      model.train()                   # ...switches BatchNorm back to training

Fix
  Re-freeze after every `model.train()`, override `train()` in the model to re-apply eval
  to BatchNorm layers, or use `torchwise.freeze_batchnorm(model)`, which survives `train()`.

Lint and the doctor
  Lint finds BatchNorm layers put in eval mode (frozen) in a file whose training loop calls
  `model.train()` afterwards. The doctor sees the effect in real steps: running statistics
  that move although the layer looks frozen, or a model left in eval mode when training starts.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        sites = [c for c in ctx.calls_named("eval") if is_bn_eval(ctx, c)]
        if not sites:
            return
        # a train() override that re-freezes BatchNorm: the author already handles it
        for site in sites:
            func = ctx.function_of(site)
            if func is not None and func.name == "train":
                return
        freezers: dict[str, ast.AST] = {}
        actions: list[ast.AST] = []
        for site in sites:
            func = ctx.function_of(site)
            if func is None:
                actions.append(site)
            else:
                freezers[func.name] = func
                actions.append(site)
        for name in freezers:
            actions.extend(ctx.calls_named(name))
        for call in ctx.calls_named("apply"):
            if call.args and last_name(call.args[0]) in freezers:
                actions.append(call)
        by_scope: dict[int, list[ast.AST]] = {}
        for action in actions:
            by_scope.setdefault(id(ctx.scope_of(action)), []).append(action)
        reported: set[int] = set()
        for call in ctx.calls_named("train"):
            if not _is_train_call(call):
                continue
            scope = ctx.scope_of(call)
            mine = by_scope.get(id(scope))
            if not mine:
                continue
            pos = (call.lineno, call.col_offset)
            before = [a for a in mine if (a.lineno, a.col_offset) < pos and not ctx.contains(a, call)]
            after = [a for a in mine if (a.lineno, a.col_offset) > pos]
            if not before or after:
                continue
            freeze = max(before, key=lambda a: (a.lineno, a.col_offset))
            if id(freeze) in reported:
                continue
            reported.add(id(freeze))
            yield ctx.finding(
                self.code, freeze,
                f"BatchNorm frozen with .eval() here is switched back to training by {ctx.text(call.func)}() on line {call.lineno}",
                suggestion="re-freeze after every model.train(), override train() to keep BatchNorm in eval, or use torchwise.freeze_batchnorm",
            )


RULE = BatchNormFrozenByEval()
