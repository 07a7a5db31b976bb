"""Evaluation passes that no evaluation function of the file shows itself (TW104): the test loop
of a model class that evaluates itself (``MetaTemplate.test_loop(self, test_loader)`` calling
``self.correct(x)``, which runs ``self.set_forward(x)``), and a runner's evaluation method that the
project wraps in ``no_grad`` in one place and calls bare in another."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.models import is_module_instance
from torchwise.lint.semantics.projectcode import def_bodies
from torchwise.lint.semantics.steps import is_eval_name

_GRAD_TEXT = ("no_grad", "set_grad_enabled", "inference_mode", "enable_grad", "backward", "autograd", "requires_grad")
_SELF_FORWARDS = frozenset({"forward", "set_forward"})


def _module_class(ctx: Context, klass: AST) -> bool:
    return klass.__class__ is ast.ClassDef and any(
        b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name))


def _methods(klass: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {m.name: m for m in klass.body if m.__class__ is ast.FunctionDef}


def _self_forward(ctx: Context, call: ast.Call) -> bool:
    """``self(x)``, ``self.forward(x)``, ``self.set_forward(x)``, ``self.feature.forward(x)``,
    ``self.encoder(x)`` (a submodule): the model class running itself."""
    func = call.func
    if func.__class__ is ast.Name:
        return func.id == "self"
    if func.__class__ is not ast.Attribute:
        return False
    owner = func.value
    if owner.__class__ is ast.Name and owner.id == "self":
        return func.attr in _SELF_FORWARDS or is_module_instance(ctx, func, call, by_name=False)
    return func.attr == "forward" and owner.__class__ is ast.Attribute and owner.value.__class__ is ast.Name \
        and owner.value.id == "self"


def _loops_over_parameter(func: ast.FunctionDef) -> bool:
    """``for i, (x, _) in enumerate(test_loader)``: a pass over data the method is handed."""
    params = {a.arg for a in func.args.args[1:]}
    return any(n.__class__ is ast.For and any(m.__class__ is ast.Name and m.id in params for m in ast.walk(n.iter))
               for n in ast.walk(func))


def _first_self_forward(ctx: Context, func: ast.FunctionDef, methods: dict[str, ast.FunctionDef], looped: bool,
                        depth: int, seen: set[str]) -> ast.Call | None:
    """The first forward pass of the model class in ``func`` or in a method of the class it calls
    (``depth`` levels), inside a pass over the data it is handed; none when a method on the way
    chooses grad mode or takes gradients."""
    if any(w in ctx.text(func) or any(w in ctx.text(d) for d in func.decorator_list) for w in _GRAD_TEXT):
        return None
    looped = looped or _loops_over_parameter(func)
    for node in ctx.walk_body(func.body):
        if node.__class__ is not ast.Call or under_no_grad(ctx, node):
            continue
        if looped and node.args and _self_forward(ctx, node):
            return node
        f = node.func
        if depth > 0 and f.__class__ is ast.Attribute and f.value.__class__ is ast.Name and f.value.id == "self" \
                and f.attr in methods and f.attr not in seen and f.attr not in _SELF_FORWARDS:
            inner = _first_self_forward(ctx, methods[f.attr], methods, looped, depth - 1, seen | {f.attr})
            if inner is not None:
                return inner
    return None


def module_test_loops(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """A model class (``nn.Module``) that evaluates itself: its ``test_loop(self, test_loader)`` (named
    for evaluation) loops over the data and runs the model - itself or through a method of the class,
    ``self.correct(x)`` running ``self.set_forward(x)`` - with no grad switch on the way, and no caller
    in the project wraps it in ``no_grad``. Reported at the forward pass."""
    for klass in ctx.nodes.get(ast.ClassDef, ()):
        if not _module_class(ctx, klass):
            continue
        methods = _methods(klass)
        for name, method in methods.items():
            if not is_eval_name(name) or name.startswith("_") or not method.args.args or _called_without_grad(ctx, name):
                continue
            node = _first_self_forward(ctx, method, methods, False, 2, {name})
            if node is not None:
                yield node, (f"{klass.name}.{name}() evaluates the model over its data, running {ctx.text(node.func)} "
                             "with autograd recording; evaluation needs no graph")


def _called_without_grad(ctx: Context, name: str) -> bool:
    """Some call ``.name(`` in the project's text sits under a ``with`` or decorator that turns
    autograd off (the author switches grad mode at the call sites)."""
    key = ("tw104:called-no-grad", name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = False
        needle = f".{name}("
        for _, text in ctx.project.files or ((ctx.path, ctx.source),):
            if needle in text and _under_grad_switch_text(text, needle):
                found = True
                break
        ctx.project.answers[key] = found
    return found


def _switch(line: str) -> bool:
    return "no_grad" in line or "inference_mode" in line or "set_grad_enabled(False" in line.replace(" ", "")


def _under_grad_switch_text(text: str, needle: str) -> bool:
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if needle not in line:
            continue
        indent = len(line) - len(line.lstrip())
        for j in range(i - 1, -1, -1):
            above = lines[j]
            if not above.strip():
                continue
            depth = len(above) - len(above.lstrip())
            if depth < indent:
                indent = depth
                if _switch(above) or above.lstrip().startswith("def ") and j and _switch(lines[j - 1]):
                    return True
            if depth == 0:
                break
    return False


def bare_project_evaluations(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``test_evaluator.evaluate(keep_all=True)`` outside no_grad, where every ``def evaluate(`` of the
    project puts its model in eval mode and runs it with no grad switch of its own, and another call
    of it in the project sits under ``with torch.no_grad():`` (the runner relies on its callers)."""
    if not ctx.project.files:
        return
    calls = [c for name, found in ctx.calls_by_name.items() if not name.startswith("_") and is_eval_name(name) for c in found]
    for call in calls:
        func = call.func
        if func.__class__ is not ast.Attribute or func.attr.startswith("_") \
                or func.value.__class__ is not ast.Name or is_module_instance(ctx, func.value, call):
            continue
        if under_no_grad(ctx, call) or not ctx.project.files or not _called_without_grad(ctx, func.attr):
            continue
        if _bodies_evaluate(ctx, func.attr):
            yield call, (f"{ctx.text(func)}() puts the model in eval mode and runs it with autograd recording "
                         "(the project calls it under no_grad elsewhere); evaluation needs no graph")


def _bodies_evaluate(ctx: Context, name: str) -> bool:
    key = ("tw104:bodies-evaluate", name)
    found = ctx.project.answers.get(key)
    if found is None:
        needle = f"def {name}("
        bodies = [b for _, text in ctx.project.files if needle in text for b in def_bodies(text, name, method=True)
                  if "NotImplementedError" not in b]  # (an abstract one of the base runner)
        found = bool(bodies) and all(".eval()" in b and not any(w in b for w in _GRAD_TEXT) for b in bodies)
        ctx.project.answers[key] = found
    return found
