"""The model runs of an evaluation pass (TW104): every call between two positions of an evaluation
scope that runs a network with autograd on - a module (``model(x)``, ``self.model(x)``), the receiver
of ``.eval()`` (``net_g(data)``, ``embedding_net(query)`` after ``[x.eval() for x in (embedding_net,
cls_head)]``), a running method of it (``model.predict(x)``, ``encode(images)`` bound to one), or a
helper of the file that runs it (reported at the helper's forward pass). Each run is reported: an
evaluation with several passes (support and query embeddings, one branch per model kind) records
a graph in each of them."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.evalcallers import bound_method_run
from torchwise.lint.semantics.evalpaths import project_helper_runs
from torchwise.lint.semantics.evalregions import called_for_training
from torchwise.lint.semantics.evalsingle import shape_probe
from torchwise.lint.semantics.frozen import local_helper_runs, params_frozen
from torchwise.lint.semantics.modelmethods import project_method_runs
from torchwise.lint.semantics.models import helper_runs, is_module_instance, runs_forward
from torchwise.lint.semantics.steps import is_eval_name

Position = tuple[int, int]


def _plain_callee(func: ast.AST) -> bool:
    """``model``, ``self.model``: not an arbitrary attribute chain like ``solver.model``."""
    if func.__class__ is ast.Name:
        return True
    return func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self"


def _handed_in(scope: ast.AST, value: ast.AST) -> bool:
    """``model`` of ``def evaluate(model, dataset, args)``: a parameter of the (function) scope."""
    return value.__class__ is ast.Name and scope.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and any(
        a.arg == value.id for a in [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs])


def _forward_without_grad(ctx: Context, func: ast.AST, use: ast.AST) -> bool:
    """The called module is an instance of a class of this file whose ``forward`` already runs
    under no_grad/inference_mode (a frozen feature extractor wrapper)."""
    built = ctx.constructed_from(func, use)
    if built is None or not built.startswith("local:"):
        return False
    klass = ctx.local_classes.get(built[6:])
    if klass is None:
        return False
    for item in klass.body:
        if item.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and item.name == "forward":
            returns = [n for n in ast.walk(item) if n.__class__ is ast.Return and n.value is not None]
            return bool(returns) and all(under_no_grad(ctx, r) for r in returns)
    return False


_BUILTINS = frozenset({"print", "len", "range", "enumerate", "zip", "list", "dict", "tuple", "set", "float", "int", "str",
                       "bool", "isinstance", "getattr", "hasattr", "setattr", "min", "max", "sum", "sorted", "open", "super",
                       "round", "abs", "any", "all", "map", "iter", "next", "format", "repr", "type"})
_LIBRARIES = ("torch.", "numpy.", "math.", "os.", "time.", "random.", "json.", "cv2.", "PIL.", "scipy.", "sklearn.",
              "pandas.", "logging.", "tqdm.", "matplotlib.")


def _library_call(ctx: Context, func: ast.AST) -> bool:
    """``print(...)``, ``torch.cat(...)``, ``F.softmax(...)``, ``np.mean(...)``: no model of the project."""
    if func.__class__ is ast.Name:
        return func.id in _BUILTINS and ctx.binding_at(func.id, func) is None
    name = ctx.qualname(func)
    return name is not None and name.startswith(_LIBRARIES) and not name.startswith("torch.nn.parallel")


def _loss_module(ctx: Context, func: ast.AST, use: ast.AST) -> bool:
    """``criterion(model.decoder.weight, ..., output, targets)``: a loss module on the outputs of
    the pass, which is no pass of its own."""
    built = ctx.constructed_from(func, use) or ""
    name = (func.attr if func.__class__ is ast.Attribute else func.id).lower()
    return built.endswith("Loss") or "loss" in name or "criterion" in name


def _is_run(ctx: Context, scope: ast.AST, node: ast.Call, receivers: set[str]) -> tuple[bool, ast.Call | None]:
    """(a run of the model in ``node`` itself, the forward pass of a helper of the file it calls)."""
    func = node.func
    explicit = func.__class__ is ast.Attribute and func.attr == "forward" and ctx.text(func.value) in receivers
    if ctx.text(func) in receivers or explicit or (_plain_callee(func) and is_module_instance(ctx, func, node) and not _loss_module(ctx, func, node)):
        return True, None
    if func.__class__ is ast.Attribute and ctx.text(func.value) in receivers and (_handed_in(scope, func.value) and func.value.id != "self" or (
            func.value.__class__ is ast.Attribute and _plain_callee(func.value))) and project_method_runs(ctx, func.attr):
        return True, None  # model.calculate_loss(x) on a model handed in (or self.edge_model): every project model's method of that name runs the network
    if func.__class__ is ast.Attribute and runs_forward(ctx, func, node) and (ctx.text(func.value) in receivers or (
            _handed_in(scope, func.value) and is_module_instance(ctx, func.value, node))):  # model.predict(...) of a model handed in
        return True, None
    if helper_runs(ctx, scope, node, receivers) or project_helper_runs(ctx, node, receivers) or bound_method_run(ctx, node, receivers) \
            or _training_helper_run(ctx, scope, node, receivers):
        return True, None
    return False, local_helper_runs(ctx, node, receivers)  # reported at the helper's forward pass


def _training_helper_run(ctx: Context, scope: ast.AST, call: ast.Call, receivers: set[str]) -> bool:
    """``self.infer_G(x)`` after ``self.G.eval()``: a method of the same class named for evaluation
    (so not one of :func:`helper_runs`) that is no evaluation of its own - the training step
    backpropagates what it returns - and only runs one of ``receivers``, with no grad switch: its own
    check stays quiet, so the evaluation that calls it is where the graph is recorded for nothing."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.value.__class__ is not ast.Name or func.value.id != "self" \
            or not is_eval_name(func.attr) or not any(r.startswith("self.") for r in receivers):
        return False
    klass = ctx.parent(scope)
    method = next((m for m in getattr(klass, "body", ()) if m.__class__ is ast.FunctionDef and m.name == func.attr
                   and m is not scope), None) if klass.__class__ is ast.ClassDef else None
    if method is None or not called_for_training(ctx, method):
        return False
    text = ctx.text(method)
    if any(w in text for w in ("no_grad", "set_grad_enabled", "inference_mode", "enable_grad", "backward", ".eval()")):
        return False
    return any(n.__class__ is ast.Call and ctx.text(n.func) in receivers for n in ast.walk(method))


def eval_runs(ctx: Context, scope: ast.AST, body: list[ast.AST], receivers: set[str],
              start: Position | None, end: Position | None) -> list[tuple[ast.Call, ast.Call | None]]:
    """``(call, helper's forward or None)`` for each model run in ``body`` between ``start`` and
    ``end`` with autograd on, in source order."""
    is_module = scope.__class__ is ast.Module
    out = []
    for node in body:
        if node.__class__ is not ast.Call or not (node.args or node.keywords):
            continue
        pos = (node.lineno, node.col_offset)
        if (start is not None and pos < start) or (end is not None and pos >= end):
            continue
        func = node.func
        if func.__class__ not in (ast.Name, ast.Attribute) or _library_call(ctx, func):
            continue
        direct, inner = _is_run(ctx, scope, node, receivers)
        if not direct and inner is None:
            continue
        if is_module and not ctx.enclosing_loops(node) and inner is None:
            continue  # module-level script: only evaluation loops (or the helper of the file it hands the model)
        if not is_module and start is not None and not is_eval_name(scope.name) and shape_probe(ctx, node):
            continue  # model.eval(); feat = model(torch.randn(2, 3, 32, 32)): a one-off probe of output shapes
        if under_no_grad(ctx, node) or _forward_without_grad(ctx, func, node) or params_frozen(ctx, scope, func, node) \
                or any(ctx.text(a) in receivers and params_frozen(ctx, scope, a, node) for a in node.args):
            continue  # (a helper handed a network whose parameters were all frozen records nothing)
        out.append((node, inner))
    return out


__all__ = ["eval_runs"]
