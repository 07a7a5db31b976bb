"""Module classes that only inference and evaluation call (TW207): a detector's post-processing
object (``self.detect = Detect(...)`` called as ``return self.detect(pred_outs, self)`` in the
``else`` arm of ``if self.training:``), a calibration metric written as a loss module
(``ece_criterion = _ECELoss()`` called only in ``test_classifier()``, which puts the model in
evaluation mode and runs no backward pass). What their methods read on the host, they read per
evaluated batch, not every training step (ruling R1)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.callers import MAX_CALLER_FILES, parsed_file
from torchwise.lint.semantics.deadcode import never_runs
from torchwise.lint.semantics.steps import backward_calls, is_eval_name, optimizer_steps

_MOVES = frozenset({"to", "cuda", "cpu", "eval", "float", "half"})  # Detect(...).to(device): the same object
_KEEPING = _MOVES | {"load_state_dict"}  # matrix.load_state_dict(...); matrix.cuda(): no training use
_TEST_PHASES = frozenset({"test", "eval", "inference", "infer", "predict", "val"})


def built_only_for_inference(ctx: Context, func: AST) -> bool:
    """Is ``func`` a method of a class of this file whose every object in the project (there is one
    at least) is bound to a name or ``self`` attribute that is only ever called off the training
    path: in the inference arm of a forward (``if not self.training:``, the ``else`` of ``if
    self.training:``, after ``if self.training: return losses``, ``if self.phase == "test":``), in
    an evaluation function (named so, or one that calls ``.eval()`` or runs under ``no_grad`` and
    runs no backward pass), or in code nothing runs (ruling R5)?"""
    klass = ctx.parent(func)
    if klass.__class__ is not ast.ClassDef:
        return False
    key = ("sem:inference-only-class", ctx.path, klass.name)
    found = ctx.project.answers.get(key)
    if found is None:
        ctx.project.answers[key] = False  # (a cycle of classes building each other: not proven)
        found = ctx.project.answers[key] = _inference_only(ctx, klass.name)
    return found


def _inference_only(ctx: Context, name: str) -> bool:
    needle = f"{name}("
    others = {p.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".py") for p, t in ctx.project.files
              if p != ctx.path and (f"class {name}(" in t or f"class {name}:" in t)}  # modules with a class of that name
    texts = [(p, t) for p, t in ctx.project.files if needle in t] or [(ctx.path, ctx.source)]
    if len(texts) > MAX_CALLER_FILES:
        return False
    built = False
    for path, text in texts:
        where = ctx if path == ctx.path else parsed_file(ctx.project, path, text)
        if where is None:
            return False
        for call in where.calls_named(name):
            if call.func.__class__ is not ast.Name:
                continue  # (module.Name(...) too rare to be worth resolving: then the class counts as used)
            q = where.qualname(call.func) if where is not ctx else None
            if others and (q is not None and "." in q and q.rsplit(".", 2)[-2] in others or where is not ctx and name in where.local_classes):
                continue  # a class of the same name from another module (libs.Matrix.MulLayer, not libs.MatrixTest's)
            target = _bound_target(where, call)
            if target is None:
                return False  # handed on, returned, built in place: assume training may use it
            uses = _calls_of(where, target, call)
            if not uses or not all(_off_training(where, use) for use in uses):
                return False
            built = True
    return built


def _bound_target(ctx: Context, call: ast.Call) -> str | None:
    """``"ece_criterion"`` / ``"self.detect"`` of ``x = Name(...)`` (also ``Name(...).to(device)``)."""
    node: AST = call
    parent = ctx.parent(node)
    while parent.__class__ is ast.Attribute and parent.attr in _MOVES and ctx.parent(parent).__class__ is ast.Call:
        node = ctx.parent(parent)
        parent = ctx.parent(node)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.value is not node:
        return None
    target = parent.targets[0]
    if target.__class__ is ast.Name:
        return target.id
    if target.__class__ is ast.Attribute and target.value.__class__ is ast.Name and target.value.id == "self":
        return f"self.{target.attr}"
    return None


def _calls_of(ctx: Context, target: str, built: ast.Call) -> list[ast.Call] | None:
    """Every call of the bound object in its file; None when it is used otherwise (handed to a
    function, stored elsewhere)."""
    attr = target[5:] if target.startswith("self.") else None
    klass = ctx.class_of(built) if attr else None
    calls, others = [], 0
    for node in ctx.nodes.get(ast.Attribute if attr else ast.Name, ()):
        if attr and not (node.attr == attr and node.value.__class__ is ast.Name and node.value.id == "self"
                         and ctx.class_of(node) is klass) or not attr and node.id != target:
            continue
        parent = ctx.parent(node)
        if parent.__class__ is ast.Call and parent.func is node:
            calls.append(parent)
        elif parent.__class__ is ast.Attribute and parent.attr in _KEEPING and ctx.parent(parent).__class__ is ast.Call:
            continue  # loaded, moved or put in evaluation mode: the same object, not handed on
        elif node.ctx.__class__ is ast.Load:
            others += 1
    return None if others else calls


def _off_training(ctx: Context, call: ast.Call) -> bool:
    if _inference_arm(ctx, call):
        return True
    func = ctx.function_of(call)
    if func is None:  # a script's top level: an inference script runs no backward pass nor step at all
        return not backward_calls(ctx) and not optimizer_steps(ctx) and _under_no_grad(ctx, call)
    if is_eval_name(func.name) or never_runs(ctx, func) or built_only_for_inference(ctx, func):
        return True  # (the last: a part, self.cnet = CNN(...), called by a module that only inference builds)
    trains = any(ctx.function_of(c) is func for c in [*backward_calls(ctx), *optimizer_steps(ctx)])
    return not trains and (_under_no_grad(ctx, call) or any(
        n.__class__ is ast.Call and last_name(n.func) == "eval" and not n.args and n.func.__class__ is ast.Attribute
        for n in ctx.walk_body(func.body)))


def _inference_arm(ctx: Context, call: ast.Call) -> bool:
    for if_node, in_body in ctx.enclosing_ifs(call):
        test = if_node.test
        if _training_flag(test) and not in_body or (
                test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not and _training_flag(test.operand) and in_body):
            return True
        if in_body and test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.Eq and any(
                side.__class__ is ast.Constant and side.value in _TEST_PHASES for side in (test.left, *test.comparators)):
            return True  # if self.phase == "test":
    stmt = ctx.statement_of(call)
    body = getattr(ctx.parent(stmt), "body", None)
    if not isinstance(body, list) or stmt not in body:
        return False
    return any(s.__class__ is ast.If and _training_flag(s.test) and not s.orelse and s.body and s.body[-1].__class__ is ast.Return
               for s in body[:body.index(stmt)])  # if self.training: return losses ... return self.detect(...)


def _training_flag(test: AST) -> bool:
    return test.__class__ is ast.Attribute and test.attr == "training" and test.value.__class__ is ast.Name and test.value.id == "self"


def _under_no_grad(ctx: Context, node: AST) -> bool:
    for anc in ctx.ancestors(node):
        if anc.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
            return any(last_name(d.func if d.__class__ is ast.Call else d) in ("no_grad", "inference_mode")
                       for d in getattr(anc, "decorator_list", ()))
        if anc.__class__ is ast.With and any(
                item.context_expr.__class__ is ast.Call and last_name(item.context_expr.func) in ("no_grad", "inference_mode")
                for item in anc.items):
            return True
    return False
