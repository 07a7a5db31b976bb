"""Where a training function evaluates (TW104): the stretches from ``model.eval()`` to the next
``train()`` with no gradient use between, the keyword that runs a shared loop as evaluation, and the
``test*`` functions that evaluate a trained model rather than test code."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, children, last_name
from torchwise.lint.semantics.callers import project_calls, star_calls
from torchwise.lint.semantics.files import is_test_path
from torchwise.lint.semantics.frozen import is_eval_switch
from torchwise.lint.semantics.steps import backward_calls, is_optimizer_step
from torchwise.lint.semantics.values import local_function

_GRAD_WORDS = frozenset({"backward", "manual_backward", "grad", "requires_grad_", "enable_grad", "set_grad_enabled", "vjp", "jvp", "jacobian", "hessian", "perturb"})

_TRAIN_FLAGS = ("train", "training", "is_train", "is_training")
_EVAL_FLAGS = ("cross_valid", "validation", "validate", "valid", "is_valid", "eval", "is_eval", "evaluate", "val", "is_val")


def eval_flag(call: ast.Call) -> str | None:
    """``train=False`` or ``cross_valid=True``: the keyword that runs a shared loop as evaluation."""
    for k in call.keywords:
        if k.value.__class__ is ast.Constant and (k.arg in _TRAIN_FLAGS and k.value.value is False
                                                  or k.arg in _EVAL_FLAGS and k.value.value is True):
            return f"{k.arg}={k.value.value}"
    return None


_EVENT_CLASSES = frozenset({ast.Call, ast.keyword, ast.Assign, ast.With, ast.AsyncWith})


def event_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes :func:`grad_events` reads under ``scope`` (calls, keywords, assignments, ``with``
    blocks), in ``ast.walk``'s breadth-first order: its cached helpers (``_grad_helper`` follows
    calls two levels deep and remembers the answer) must meet the calls in the same order."""
    queue = [scope]
    for node in queue:  # a list extended while iterated: breadth-first, like ast.walk
        queue.extend(children(node))
    classes = _EVENT_CLASSES
    return [node for node in queue if node.__class__ in classes]


def grad_events(ctx: Context, nodes: list[ast.AST]) -> list[tuple[tuple[int, int], str]]:
    """Where the code needs gradients or goes back to training: ``(position, "train"|"grad")``."""
    out = []
    for node in nodes:
        if node.__class__ is ast.Call:
            n = last_name(node.func)
            if n == "train" and not is_eval_switch(node):
                out.append(((node.lineno, node.col_offset), "train"))
            elif n in _GRAD_WORDS or (n == "step" and is_optimizer_step(ctx, node)) or (
                    _grad_helper(ctx, node) and eval_flag(node) is None):  # (`backprop(..., training=False)` evaluates)
                out.append(((node.lineno, node.col_offset), "grad"))
        elif node.__class__ is ast.keyword and node.arg == "requires_grad" and not (
                node.value.__class__ is ast.Constant and node.value.value is False):
            # (`Variable(x, requires_grad=False)`, the 0.3-era input wrapper, asks for no gradient)
            out.append(((node.value.lineno, node.value.col_offset), "grad"))
        elif node.__class__ is ast.Assign and node.value.__class__ is ast.Constant and node.value.value is True and any(
                t.__class__ is ast.Attribute and t.attr == "requires_grad" for t in node.targets):
            out.append(((node.lineno, node.col_offset), "grad"))  # img.requires_grad = True: gradients w.r.t. the input
        elif node.__class__ in (ast.With, ast.AsyncWith):
            if any(last_name(item.context_expr) in ("set_grad_enabled", "enable_grad") for item in node.items):
                out.append(((node.lineno, node.col_offset), "grad"))
    out.sort()
    return out


def _grad_helper(ctx: Context, call: ast.Call, depth: int = 2) -> bool:
    """``self.cac_grad(loss, outputs)``, ``self.cac_jacobian(preds, lc)``: a function of this file that
    takes gradients itself (``torch.autograd.grad``, ``backward()``): an optimizer's Fisher or kernel
    estimate, not an evaluation."""
    func = local_function(ctx, call)
    if func is None or func.__class__ is ast.Lambda:
        return False
    key = ("tw104:grad-helper", id(func))
    if key not in ctx._cache:
        ctx._cache[key] = False  # (a helper that calls itself)
        text = ctx.text(func)
        if "grad" not in text and "backward" not in text and "autograd" not in text:
            return False
        ctx._cache[key] = "autograd.grad(" in text or ".backward(" in text or "autograd.functional" in text or depth > 0 and any(
            n.__class__ is ast.Call and n is not call and _grad_helper(ctx, n, depth - 1) for n in ast.walk(func))
    return ctx._cache[key]  # (also through one it calls: cac_jacobian() taking cac_grad() per output)


def eval_regions(evals: list[ast.Call], events: list[tuple[tuple[int, int], str]]) -> list[tuple[tuple[int, int], tuple[int, int] | None]]:
    """The stretches of a training function that evaluate: from each ``model.eval()`` to the next
    ``train()`` (or the end), when no backward, optimizer step or gradient use comes first (an
    ``eval()`` followed by a backward freezes BatchNorm for training; it does not evaluate)."""
    out = []
    for call in sorted(evals, key=lambda c: (c.lineno, c.col_offset)):
        pos = (call.lineno, call.col_offset)
        nxt = next((e for e in events if e[0] > pos), None)
        if nxt is None or nxt[1] == "train":
            out.append((pos, nxt[0] if nxt is not None else None))
    return out


def _global_eval(ctx: Context, func: ast.AST, call: ast.Call) -> bool:
    """``model.eval()`` in ``func`` on a model the function does not build itself (a global)."""
    if ctx.function_of(call) is not func or call.args or call.func.__class__ is not ast.Attribute \
            or call.func.value.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(call.func.value.id, call)
    return b is None or ctx.function_of(b.node) is not func


_HOLDERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def evaluation_method(ctx: Context, func: ast.AST) -> bool:
    """A ``test*`` function that evaluates a trained model, in a file that is not a test file:
    ``test(self, setting)`` of an experiment class (not a ``unittest.TestCase``), or a module-level
    ``test_net(net, dataset, ...)`` that takes what it runs (or ``def test():`` that puts a global
    model in eval mode), loops over it and asserts nothing (a smoke ``def test():
    print(Net()(x).shape)`` takes nothing and stays a test). One that the project's own code calls
    (``ret = test(model, users)`` in ``main.py``, ``test(path)`` in the ``__main__`` block) is no unit
    test whatever it asserts - a test runner calls those - and a parameterless one that runs a global
    model the script put in eval mode before calling it (``net.eval(); test_practical()``) evaluates."""
    klass = next((a for a in ctx.ancestors(func) if a.__class__ in _HOLDERS), ctx.tree)  # (through `if __name__ ...:`)
    if klass is ctx.tree:
        called = None
        if "assert" in ctx.text(func):
            called = project_called(ctx, func)
            if not called:
                return False  # a unit test that asserts
        if not func.args.args and not any(_global_eval(ctx, func, c) for c in ctx.calls_named("eval")) and not (
                global_eval_runs(ctx, func) and (project_called(ctx, func) if called is None else called)):
            return False  # a smoke test that takes nothing (a course's `def test(): model.eval(); for x in loader:` evaluates)
        key = ("tw104:evaluates", id(func))
        if key not in ctx._cache:
            ctx._cache[key] = not is_test_path(ctx.path, ctx.source) and (any(
                n.__class__ in (ast.For, ast.While) for n in ast.walk(func)) or (  # (or a single pass on a model it
                any(_global_eval(ctx, func, c) or _handed_eval(ctx, func, c) for c in ctx.calls_named("eval"))
                and project_called(ctx, func)))  # put in eval mode, or was handed and puts in eval mode: `test_regression(model, x, y)`)
        return ctx._cache[key]
    if is_test_path(ctx.path, ctx.source):
        return False
    if klass.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef):
        # `def test():` nested in `main()` over main's `net` (pytest collects no nested function): it
        # evaluates when it puts a model of the enclosing function (or a global) in eval mode itself
        return not klass.name.lstrip("_").startswith("test") and any(_global_eval(ctx, func, c) for c in ctx.calls_named("eval"))
    if klass.__class__ is not ast.ClassDef:
        return False
    if func.name.startswith("_") or "test" in klass.name.lower():
        return False  # a test class (E2ETest), or a test helper of one
    return not any("TestCase" in (last_name(b) or "") for b in klass.bases)


def _handed_eval(ctx: Context, func: ast.AST, call: ast.Call) -> bool:
    """``model.eval()`` in ``func`` on a model ``func`` is handed (one of its parameters)."""
    return (not call.args and call.func.__class__ is ast.Attribute and call.func.value.__class__ is ast.Name
            and ctx.function_of(call) is func and call.func.value.id in {a.arg for a in func.args.args})


def project_called(ctx: Context, func: ast.AST) -> bool:
    """The module-level function ``func`` is called by the project's code: by this file outside
    ``test*`` functions, or by a module of the project that imports it (also with ``import *``)
    and is no test file."""
    key = ("tw104:project-called", id(func))
    if key not in ctx._cache:
        ctx._cache[key] = any(c.func.__class__ is ast.Name and not ctx.contains(func, c) and not _in_test(ctx, c)
                              for c in ctx.calls_named(func.name)) or bool(ctx.project.files) and any(
            not is_test_path(other.path, other.source) and not _in_test(other, c)
            for other, c in [*project_calls(ctx, func.name), *star_calls(ctx, func.name)])
    return ctx._cache[key]


def _in_test(ctx: Context, node: ast.AST) -> bool:
    holder = ctx.function_of(node)
    return holder is not None and holder.__class__ is not ast.Lambda and holder.name.lstrip("_").startswith("test")


def global_eval_runs(ctx: Context, func: ast.AST) -> set[str]:
    """The global models ``func`` runs (``y = net(x)``, binding no ``net`` of its own) that the
    module-level code puts in eval mode (``net.eval()``)."""
    evaluated = ctx._cache.get("tw104:global-evals")
    if evaluated is None:
        evaluated = ctx._cache["tw104:global-evals"] = {
            c.func.value.id for c in ctx.calls_named("eval") if not c.args and not c.keywords and ctx.function_of(c) is None
            and c.func.__class__ is ast.Attribute and c.func.value.__class__ is ast.Name}
    if not evaluated:
        return set()
    own = ctx.bindings(func)
    return {n.func.id for n in ctx.walk_body(func.body) if n.__class__ is ast.Call and n.func.__class__ is ast.Name
            and n.func.id in evaluated and n.func.id not in own and (n.args or n.keywords)}


def called_for_training(ctx: Context, func: ast.AST) -> bool:
    """Called by this file in computing a value that is backpropagated
    (``loss = F.cross_entropy(self.predict(x), y); loss.backward()``; also through an unpacking,
    ``d_real, _ = self.infer_D(x, y)`` then ``criterion(d_real, lab).backward()``): part of training."""
    calls = ctx.calls_named(func.name)
    if not calls:
        return False
    for backward in backward_calls(ctx):
        receiver = backward.func.value if backward.func.__class__ is ast.Attribute else None
        if receiver is None:
            continue
        if any(_inside(c, receiver) for c in calls):
            return True
        scope = ctx.scope_of(backward)
        feeding = {n.id for n in ast.walk(receiver) if n.__class__ is ast.Name}
        assigns = [a for a in ctx.walk_body(getattr(scope, "body", [])) if a.__class__ in (ast.Assign, ast.AugAssign)]
        values: list[ast.AST] = []
        for _ in range(4):  # a few hops: loss = a + b; a = ce(self.predict(x), y)
            grown = False
            for a in assigns:
                targets = a.targets if a.__class__ is ast.Assign else [a.target]
                names = {n.id for t in targets for n in ([t] if t.__class__ is ast.Name else t.elts if t.__class__ in (
                    ast.Tuple, ast.List) else ()) if n.__class__ is ast.Name}  # (also d_real, _ = self.infer_D(x, y))
                if names & feeding and a.value not in values:
                    values.append(a.value)
                    feeding |= {n.id for n in ast.walk(a.value) if n.__class__ is ast.Name}
                    grown = True
            if not grown:
                break
        if any(_inside(c, v) for c in calls for v in values):
            return True
    return False


def _inside(node: ast.AST, tree: ast.AST) -> bool:
    return any(n is node for n in ast.walk(tree))
