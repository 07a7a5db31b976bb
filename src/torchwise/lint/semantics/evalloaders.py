"""Evaluation passes known by the data they iterate (TW104): a loop over a validation or test loader
(``for X, y, *rest in enumerate(valloader):``, ``for x, y in self.test_loader:``) that runs the model,
with no ``model.eval()`` before it in its function or script and no no_grad around it. A training
script that scores its validation images every few epochs this way records a graph for every
batch of them.

Quiet: a loop whose body needs gradients (``backward()``, an optimizer step, ``autograd.grad``,
``requires_grad``: an adversarial attack, test-time adaptation), a loop in a function that already
puts a model in eval mode or is named for evaluation (the rule's own evaluation check decides
there), in a function only called under no_grad or whose result the file backpropagates, in a
``nn.Module`` method, in test files and unit tests, and a loop over any other data (a training
loader, a list of files), and a run of a model the function is handed (``def metrics(model,
test_loader)``: the caller that hands it over after ``model.eval()`` is where it is reported)."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.evalcallers import reached_only_under_no_grad
from torchwise.lint.semantics.evalregions import called_for_training, grad_events
from torchwise.lint.semantics.evalruns import eval_runs
from torchwise.lint.semantics.files import is_test_path
from torchwise.lint.semantics.frozen import eval_calls
from torchwise.lint.semantics.steps import is_eval_name

# valloader, val_loader, test_dataloader, valid_loader, eval_loader, dev_loader, val_data_loader
_EVAL_LOADER = lazy_compile(r"^_?(?:val|valid|validation|test|eval|dev)_?(?:data_?)?loader$", re.I)


def _loader_name(node: AST) -> str | None:
    """The name a loop iterates: ``valloader``, ``enumerate(valloader)``, ``tqdm(self.val_loader)``."""
    while node.__class__ is ast.Call and node.args and last_name(node.func) in ("enumerate", "tqdm", "iter", "zip"):
        node = node.args[0]
    return last_name(node) if node.__class__ in (ast.Name, ast.Attribute) else None


def loader_eval_runs(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(forward pass, message)`` for each model run in a loop over an evaluation loader (module doc)."""
    if "loader" not in ctx.source or is_test_path(ctx.path):
        return
    for loop in ctx.nodes.get(ast.For, ()):
        name = _loader_name(loop.iter)
        if name is None or _EVAL_LOADER.match(name) is None or under_no_grad(ctx, loop):
            continue
        scope = ctx.scope_of(loop)
        if scope.__class__ is ast.Lambda or _checked_elsewhere(ctx, scope, loop):
            continue
        body = list(ast.walk(loop))
        if grad_events(ctx, body):
            continue  # the loop takes gradients (an attack, test-time training): it needs the graph
        params = {a.arg for a in scope.args.args} - {"self", "cls"} if scope.__class__ is not ast.Module else set()
        for node, inner in eval_runs(ctx, scope, body, set(), None, None):
            root = (inner or node).func
            while root.__class__ is ast.Attribute:
                root = root.value
            if root.__class__ is ast.Name and root.id in params:
                continue  # a model handed in: whoever hands it after `.eval()` is reported (evalpaths)
            yield inner or node, (f"the pass over {name} runs {ctx.text((inner or node).func)} with autograd recording "
                                  "(no no_grad, no eval()); evaluation needs no graph")


def _checked_elsewhere(ctx: Context, scope: AST, loop: ast.For) -> bool:
    """The function is an evaluation the rule checks itself, or never evaluates with a graph."""
    if scope.__class__ is ast.Module:
        return bool(eval_calls(ctx, [n for n in ctx.walk_body(scope.body) if (getattr(n, "lineno", 0), 0) < (loop.lineno, 0)]))
    name = scope.name.lstrip("_")
    if is_eval_name(scope.name) or name.startswith("test") or eval_calls(ctx, list(ctx.walk_body(scope.body))):
        return True
    klass = ctx.parent(scope)
    if klass.__class__ is ast.ClassDef and any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)):
        return True  # part of a module's forward pass: the caller sets grad mode
    if any(under_no_grad(ctx, c) for c in ctx.calls_named(scope.name)):
        return True
    return reached_only_under_no_grad(ctx, scope) or called_for_training(ctx, scope)


__all__ = ["loader_eval_runs"]
