"""TW218: a whole model converted with ``.half()`` for training."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, keyword, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.models import is_model_name, is_module_instance
from torchwise.lint.semantics.steps import training_calls
from torchwise.lint.semantics.values import local_function

_HALF_DTYPES = ("torch.float16", "torch.half")


_DTYPE_TEST = lazy_compile(r"dtype|float16|half")
_BACK_TO_FULL = frozenset({"float", "double", "bfloat16"})


def _converted_back(ctx: Context, call: ast.Call) -> bool:
    """``x.half().float()`` / ``x.half().to(torch.float32)``: converted on at once."""
    parent = ctx.parent(call)
    if parent.__class__ is not ast.Attribute or ctx.parent(parent).__class__ is not ast.Call:
        return False
    if parent.attr in _BACK_TO_FULL:
        return True
    if parent.attr == "to":
        outer = ctx.parent(parent)
        target = outer.args[0] if outer.args else (keyword(outer, "dtype").value if keyword(outer, "dtype") else None)
        q = ctx.qualname(target) if target is not None else None
        return q is not None and q.rsplit(".", 1)[-1] in ("float32", "float", "float64", "double", "bfloat16")
    return False


# a function that turns autograd off may put a model in train mode for inference (Monte Carlo dropout)
_GRAD_OFF = lazy_compile(r"no_grad|inference_mode|set_grad_enabled\(False")


def _training_modes(ctx: Context) -> set[tuple[int, str]]:
    """``(scope, receiver text)`` of every ``x.train()`` / ``x.train(True)`` in the file: the object
    the scope puts in training mode (a module: plain objects have no such method with no argument)."""
    found = set()
    if ".train(" in ctx.source:
        for call in ctx.calls_named("train"):
            func = call.func
            if func.__class__ is ast.Attribute and not call.keywords and (not call.args or len(call.args) == 1 and
                                                                          call.args[0].__class__ is ast.Constant and call.args[0].value is True):
                found.add((id(ctx.scope_of(call)), ctx.text(func.value)))
    return found


class HalfModelTraining(Rule):
    code = "TW218"
    per_call = True
    name = "half-model-training"
    triggers = ("half", "float16")
    doc = """\
What it flags
  `model.half()`, `model.to(torch.float16)` or `model.to(dtype=torch.half)` on something that
  evidently is a model (built from an `nn.Module` class, or named `model`/`net`/`*_model`), in
  a function (or script) that also trains - it calls `backward()` or an optimizer `step()` -
  or that calls a function of the same file that does (`net = Net().cuda().half()` in
  `main()`, then `train(net, ...)`), or in a builder that returns the converted model to a
  caller of the file that trains it (`def make_net(): ...; net.half(); return net`, then
  `net = make_net()` in a training `main()`); also the conversion of an object the same function
  puts in training mode, whatever its name (`G = G.half()` ... `G.train()` in a training script whose
  update runs in another module), unless that function also turns autograd off (`model.train()`
  for Monte Carlo dropout at inference).
  Inference code is not flagged, nor a round trip (`model.half().float()` rounds the weights
  and goes on in fp32) or a cast that matches an input's dtype (`if x.dtype == torch.float16`).

Why it matters
  Converting the whole model stores the weights, the optimizer's updates and the BatchNorm
  statistics in fp16. Small updates vanish when added to fp16 weights, BatchNorm's running
  variance loses precision, and without loss scaling small gradients underflow to zero.
  Accuracy drops or training diverges.

Example
  model = Net().cuda().half()                       # TW218
  for x, y in loader:
      loss_fn(model(x), y).backward()
      optimizer.step()

Fix
  Keep the weights in fp32 and run the forward pass under
  `torch.autocast("cuda", dtype=torch.float16)` with a `torch.amp.GradScaler("cuda")` (or use
  bf16 autocast without a scaler where supported).

Lint and the doctor
  Lint sees a whole model converted to fp16 in code that trains it. The doctor finds BatchNorm
  parameters and statistics stored in half precision at run time, however they got there.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        training_scopes = {id(ctx.scope_of(c)) for c in training_calls(ctx)}
        modes = _training_modes(ctx)
        if not training_scopes and not modes:
            return
        for call in ctx.calls_named("half", "to"):
            func = call.func
            if func.__class__ is not ast.Attribute:
                continue
            if func.attr == "half":
                if call.args or call.keywords:
                    continue
            else:
                kw = keyword(call, "dtype")
                target = kw.value if kw is not None else (call.args[0] if len(call.args) == 1 else None)
                if target is None or ctx.qualname(target) not in _HALF_DTYPES:
                    continue
            if any(_DTYPE_TEST.search(ctx.text(if_node.test)) for if_node, _ in ctx.enclosing_ifs(call)):
                continue  # m.half() if x.dtype is torch.float16 else m: matching the input's dtype
            if _converted_back(ctx, call):
                continue  # model.half().float(): a round trip that rounds the weights, not fp16 training
            recv = func.value
            # model.cuda().half(): look through device moves to the model itself
            while recv.__class__ is ast.Call and recv.func.__class__ is ast.Attribute and recv.func.attr in ("cuda", "to", "train"):
                recv = recv.func.value
            scope = ctx.scope_of(call)
            if (id(scope), ctx.text(recv)) in modes and not _GRAD_OFF.search(ctx.source if scope is ctx.tree else ctx.text(scope)):
                yield self._finding(ctx, call)  # G = G.half() ... G.train(): the script trains what it converted
                continue
            if not self._trains_here(ctx, scope, training_scopes) and not self._built_for_training(ctx, scope, recv, training_scopes):
                continue
            if not is_module_instance(ctx, recv, call) and not self._assigned_to_model(ctx, call):
                continue
            yield self._finding(ctx, call)

    def _finding(self, ctx: Context, call: ast.Call) -> Finding:
        return ctx.finding(
            self.code, call,
            "the whole model is converted to fp16 for training: BatchNorm statistics and small updates lose precision",
            suggestion='keep fp32 weights and use torch.autocast("cuda", dtype=torch.float16) with torch.amp.GradScaler',
        )


    @staticmethod
    def _trains_here(ctx: Context, scope: ast.AST, training_scopes: set[int]) -> bool:
        """``scope`` trains, or calls a function of this file that does (``net = Net().half()``
        in ``main()``, then ``train(net, loader, opt)``)."""
        if id(scope) in training_scopes:
            return True
        body = scope.body if isinstance(scope.body, list) else [scope.body]
        for node in ctx.walk_body(body):
            if node.__class__ is ast.Call:
                target = local_function(ctx, node)
                if target is not None and id(target) in training_scopes:
                    return True
        return False

    @classmethod
    def _built_for_training(cls, ctx: Context, scope: ast.AST, recv: ast.AST, training_scopes: set[int]) -> bool:
        """A builder (``def make_net(): ...; net.half(); return net``) that returns the converted
        model to a caller of this file that trains it (``net = make_net()`` in ``main()``)."""
        if scope.__class__ is not ast.FunctionDef or recv.__class__ is not ast.Name:
            return False
        if not any(n.__class__ is ast.Return and n.value.__class__ is ast.Name and n.value.id == recv.id
                   for n in ctx.walk_body(scope.body)):
            return False
        callers = [c for c in ctx.calls_named(scope.name) if local_function(ctx, c) is scope]
        return any(cls._trains_here(ctx, ctx.scope_of(c), training_scopes) for c in callers if ctx.scope_of(c) is not scope)

    @staticmethod
    def _assigned_to_model(ctx: Context, call: ast.Call) -> bool:
        """``model = Net().cuda().half()``: the name it is stored under says what it is."""
        node: ast.AST = call
        parent = ctx.parent(node)
        while parent is not None and parent.__class__ is ast.Attribute:  # ...half().eval() chains
            grand = ctx.parent(parent)
            if grand.__class__ is not ast.Call:
                return False
            node, parent = grand, ctx.parent(grand)
        if parent.__class__ is ast.Assign and len(parent.targets) == 1:
            return is_model_name(last_name(parent.targets[0]))
        return False


RULE = HalfModelTraining()
