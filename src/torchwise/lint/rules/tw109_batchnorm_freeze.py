"""TW109: BatchNorm frozen only with ``.eval()``: unfrozen again by a later ``model.train()``, or
its affine weight and bias left training."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.callers import project_calls

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


def _off_flags(node: ast.AST) -> frozenset[str]:
    """The parameters of a freezing function that default to False (``def freeze_bn(self,
    enable=False)``): ``requires_grad = enable`` turns the gradients off whenever it freezes."""
    if node.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return frozenset()
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults), *zip(args.kwonlyargs, args.kw_defaults)]
    return frozenset(a.arg for a, d in pairs if d is not None and d.__class__ is ast.Constant and d.value is False)


def _grad_off(node: ast.AST) -> bool:
    """``p.requires_grad = False`` or ``.requires_grad_(False)`` somewhere in ``node`` (or the
    same with a parameter of the function that defaults to False)."""
    flags = _off_flags(node)

    def off(value: ast.AST | None) -> bool:
        return value is not None and (value.__class__ is ast.Constant and value.value is False
                                      or value.__class__ is ast.Name and value.id in flags)

    for n in ast.walk(node):
        if n.__class__ is ast.Assign and off(n.value) and any(
                t.__class__ is ast.Attribute and t.attr == "requires_grad" for t in n.targets):
            return True
        if n.__class__ is ast.Call and last_name(n.func) == "requires_grad_":
            if off(n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "requires_grad"), None)):
                return True
    return False


def _freeze_code(ctx: Context, node: ast.AST) -> ast.AST:
    """The code that freezes at ``node``: its function, else its top-level statement."""
    func = ctx.function_of(node)
    if func is not None:
        return func
    while ctx.parent(node) is not None and ctx.parent(node) is not ctx.tree:
        node = ctx.parent(node)
    return node


def _in_use(ctx: Context, site: ast.Call) -> bool:
    """Does the freeze run: module-level code, or a function called (or handed to ``apply``) in
    this file, a method called from another module of the project (or handed to ``apply`` there:
    ``model.apply(bn_init_as_tf)``), or a ``train()`` override."""
    func = ctx.function_of(site)
    if func is None or func.name == "train":
        return True
    if any(c.func.__class__ is ast.Attribute and c.func.attr == func.name or last_name(c.func) == func.name
           for c in ctx.calls_named(func.name)):
        return True
    if any(c.args and last_name(c.args[0]) == func.name for c in ctx.calls_named("apply")):
        return True
    text = f".{func.name}("
    if any(text in t and _uncommented(t, text) for p, t in ctx.project.files if p != ctx.path) \
            or any(True for _ in project_calls(ctx, func.name)):
        return True
    handed = re.compile(rf"\.apply\(\s*(?:[\w.]+\.)?{re.escape(func.name)}\s*\)")  # model.apply(bn_init_as_tf) in a script
    return any(func.name in t and handed.search(t) for p, t in ctx.project.files if p != ctx.path)


def _uncommented(text: str, needle: str) -> bool:
    """``needle`` occurs in ``text`` on a line before any ``#``: a call, not one left in a comment
    (``#     model.module.freeze_bn()``)."""
    start = text.find(needle)
    while start >= 0:
        line = text.rfind("\n", 0, start) + 1
        if "#" not in text[line:start]:
            return True
        start = text.find(needle, start + 1)
    return False


# torchvision builders whose models have no BatchNorm layer (their *_bn variants do)
_BN_FREE = frozenset({"vgg11", "vgg13", "vgg16", "vgg19", "alexnet"})


def _no_batchnorm(ctx: Context, site: ast.Call) -> bool:
    """A freeze method of a model class built on a backbone without BatchNorm (an FCN on
    ``models.vgg16(...)``) that constructs no BatchNorm layer itself: the freeze changes nothing."""
    klass = ctx.class_of(site)
    if klass is None:
        return False
    built = [last_name(n.func) or "" for n in ast.walk(klass) if n.__class__ is ast.Call]
    return any(b in _BN_FREE for b in built) and not any("BatchNorm" in b or b.startswith("vgg") and b.endswith("_bn") for b in built)


_STATS = "{train}() on line {line} switches it back to training (its running statistics update again)"
_AFFINE = "its affine weight and bias still train (requires_grad is on)"


class BatchNormFrozenByEval(Rule):
    code = "TW109"
    name = "batchnorm-freeze-undone"
    triggers = ("BatchNorm",)
    doc = """\
What it flags
  BatchNorm layers frozen only with `.eval()` (`m.eval()` on a layer picked out by
  `isinstance(m, nn.BatchNorm2d)`, a class-name test for "BatchNorm", or built as BatchNorm;
  directly or through a helper, `freeze_bn(model)`, `model.apply(set_bn_eval)`, a model's
  `freeze_bn()` method called here or by another module of the project, or a function another
  module hands to `apply`: `model.apply(bn_init_as_tf)`; a method whose only calls elsewhere are
  commented out, `# model.freeze_bn()`, freezes nothing and is not flagged). Eval mode freezes
  the running statistics only, and only until the next `model.train()`; the message says which
  half of the freeze is missing:
  - the statistics: a `model.train()` in the same function or script runs after the freeze and
    no freeze follows it (and, when the freeze leaves them trainable, the affine parameters);
  - the affine weight and bias: the freeze is re-applied after every `model.train()` (a
    detector's or segmenter's `freeze_bn()` called in the epoch loop, a `train()` override that
    re-applies eval) or never undone, but nothing turns `requires_grad` off, so the layers'
    scale and shift keep training on the fine-tuning batches (reported at the `.eval()`).
  Not flagged: a freeze that also turns `requires_grad` off (in the freezing function, in the
  code that calls it, or in a `train()` override that re-freezes; also with the freezing function's
  own flag, `def freeze_bn(self, enable=False)` setting `requires_grad = enable`), `FrozenBatchNorm2d`,
  `torchwise.freeze_batchnorm(model)`, and `.eval()` of other layers or of the whole model.
  Lint cannot see an optimizer that leaves the BatchNorm parameters out in another way (built
  from a head's parameters only): silence the line with `# noqa: TW109` there.

Why it matters
  `model.train()` sets every submodule back to training mode, the frozen BatchNorm layers
  included. Their running mean and variance start updating again from the small fine-tuning
  batches and drift away from the pre-trained statistics, quietly hurting accuracy. And a
  layer in eval mode still has trainable `weight` and `bias`: they go on adapting to
  statistics that no longer match the batches, which is rarely what "freeze" was meant to do.

Example
  def freeze_bn(model):
      for m in model.modules():
          if isinstance(m, nn.BatchNorm2d):
              m.eval()

  freeze_bn(model)                    # TW109
  for epoch in range(epochs):
      model.train()                   # ...switches BatchNorm back to training

Fix
  Use `torchwise.freeze_batchnorm(model)`, which survives `train()` and freezes the affine
  parameters; or re-freeze after every `model.train()` (or override `train()` to re-apply eval)
  and set `requires_grad_(False)` on the layers' parameters.

Lint and the doctor
  Lint finds BatchNorm layers put in eval mode (frozen) in a file whose training loop calls
  `model.train()` afterwards, or whose affine parameters stay trainable. The doctor sees the
  effect in real steps: running statistics that move although the layer looks frozen, or a
  model left in eval mode when training starts.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        sites = [c for c in ctx.calls_named("eval") if is_bn_eval(ctx, c)]
        if not sites:
            return
        overrides = [s for s in sites if ctx.function_of(s) is not None and ctx.function_of(s).name == "train"]
        if any(_grad_off(ctx.function_of(s)) for s in overrides):
            return  # a train() override that re-freezes both halves
        covered: set[int] = set()
        if not overrides:  # a train() override keeps the statistics frozen
            for freeze, call, frozen in self._undone(ctx, sites):
                message = "BatchNorm frozen with .eval() here: " + _STATS.format(train=ctx.text(call.func), line=call.lineno)
                covered |= {id(s) for s in frozen}
                yield ctx.finding(
                    self.code, freeze,
                    message + ("" if self._affine_off(ctx, freeze, frozen) else f", and {_AFFINE}"),
                    suggestion="re-freeze after every model.train(), override train() to keep BatchNorm in eval, or use torchwise.freeze_batchnorm",
                )
        for site in sites:
            if id(site) in covered or self._affine_off(ctx, site, [site]) or not _in_use(ctx, site) or _no_batchnorm(ctx, site):
                continue
            yield ctx.finding(
                self.code, site,
                f"BatchNorm frozen only with .eval(): its running statistics stay fixed, but {_AFFINE}",
                suggestion="also call requires_grad_(False) on the layer's parameters, or use torchwise.freeze_batchnorm",
            )

    @staticmethod
    def _affine_off(ctx: Context, freeze: ast.AST, frozen: list[ast.Call]) -> bool:
        """Does the freeze also turn ``requires_grad`` off: in the code around an ``.eval()`` it
        runs, or in the code that calls the freezing helper?"""
        if any(_grad_off(_freeze_code(ctx, s)) for s in frozen):
            return True
        if freeze not in frozen:
            return _grad_off(_freeze_code(ctx, freeze))
        func = ctx.function_of(freeze)  # an .eval() site: the code that calls its helper
        callers = list(ctx.calls_named(func.name)) if func is not None else []
        callers += [c for c in ctx.calls_named("apply") if func is not None and c.args and last_name(c.args[0]) == func.name]
        return any(ctx.function_of(c) is not func and _grad_off(_freeze_code(ctx, c)) for c in callers)

    @staticmethod
    def _undone(ctx: Context, sites: list[ast.Call]) -> Iterator[tuple[ast.AST, ast.Call, list[ast.Call]]]:
        """``(freeze, train call, the .eval() sites it runs)`` for each freeze that a later
        ``train()`` in the same scope undoes with no freeze after it."""
        freezers: dict[str, list[ast.Call]] = {}
        actions: list[tuple[ast.AST, list[ast.Call]]] = []
        for site in sites:
            func = ctx.function_of(site)
            if func is not None:
                freezers.setdefault(func.name, []).append(site)
            actions.append((site, [site]))
        for name, frozen in freezers.items():
            actions.extend((c, frozen) for c in ctx.calls_named(name))
        for call in ctx.calls_named("apply"):
            if call.args and last_name(call.args[0]) in freezers:
                actions.append((call, freezers[last_name(call.args[0])]))
        by_scope: dict[int, list[tuple[ast.AST, list[ast.Call]]]] = {}
        for action in actions:
            by_scope.setdefault(id(ctx.scope_of(action[0])), []).append(action)
        reported: set[int] = set()
        for call in ctx.calls_named("train"):
            mine = by_scope.get(id(ctx.scope_of(call))) if _is_train_call(call) else None
            if not mine:
                continue
            pos = (call.lineno, call.col_offset)
            before = [a for a in mine if (a[0].lineno, a[0].col_offset) < pos and not ctx.contains(a[0], call)]
            if not before or any((a[0].lineno, a[0].col_offset) > pos for a in mine):
                continue
            freeze, frozen = max(before, key=lambda a: (a[0].lineno, a[0].col_offset))
            if id(freeze) not in reported:
                reported.add(id(freeze))
                yield freeze, call, frozen


RULE = BatchNormFrozenByEval()
