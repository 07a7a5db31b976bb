"""Who runs an evaluation-named function, and under which grad mode (TW104).

A model run through a bound method: ``encode = trainer.gen_a.encode if a2b else trainer.gen_b.encode``
after ``trainer.eval()``, then ``content = encode(images)`` in the evaluation loop.

Two shapes where a function named for evaluation is not an evaluation that records a graph:

- a nested helper of another function (``def render_rays(...): def inference(model, x): ...``):
  it runs wherever, and as, its enclosing function does - in a NeRF renderer that is the
  training step as well. It is evaluation only when the function around it is;
- a function of a library module that the project only ever reaches under ``no_grad``: an
  ``eval.py`` wraps ``eval_ood_detection(...)`` in ``with torch.no_grad():``, and that function
  reaches ``compute_ood_score`` through a closure (``score_func``) handed to a scoring loop.
  Followed through the file's own functions (up to a few levels) to the functions other
  modules call; every such call of the project must sit under no_grad.
- a method of an evaluator class that only the class's own methods (or, under no_grad, other modules) call (``self.eval_chip(net,
  crop)`` in ``crop_eval``, itself called by ``scale_crop_eval``, called by a ``__call__``
  decorated ``@torch.no_grad()``): followed up the ``self.<name>(...)`` calls, every one of
  which must sit under no_grad or in a method reached that way (or in a Lightning
  ``validation_step``/``test_step``/``predict_step``, which Lightning runs under no_grad); another module of the project may call a
  method of that name only under no_grad, or from a module-level function every way in to which
  passes under no_grad (an inference script's per-example helper in a ``with torch.no_grad():`` loop).
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.callers import parsed_file, project_calls
from torchwise.lint.semantics.deadcode import dead_at
from torchwise.lint.semantics.models import runs_forward

_DEPTH = 3
_NO_GRAD_HOOKS = frozenset({"validation_step", "test_step", "predict_step"})  # Lightning runs them under no_grad


def nested_in_plain_function(ctx: Context, func: AST, is_evaluation) -> bool:
    """``func`` is defined inside another function that is not evaluation itself (by
    ``is_evaluation(outer)``: named for it, or it puts a model in eval mode), and calls no
    ``.eval()`` of its own."""
    outer = ctx.function_of(func)
    if outer is None or outer.__class__ is ast.Lambda:
        return False
    if any(n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr == "eval" and not n.args
           for n in ctx.walk_body(func.body)):
        return False
    while True:
        above = ctx.function_of(outer)
        if above is None or above.__class__ is ast.Lambda:
            break
        outer = above
    return not is_evaluation(outer)


def reached_only_under_no_grad(ctx: Context, func: AST) -> bool:
    """Every way the project runs ``func`` (a module-level function of this file) passes under
    ``no_grad``/``inference_mode``: through the file's own functions that name it, up to the
    calls other modules make (see the module doc). False when any way is unknown."""
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    parent = ctx.parent(func)
    if parent is not ctx.tree and parent.__class__ is not ast.ClassDef:
        return False
    key = ("evalcallers:no-grad", id(func))
    found = ctx._cache.get(key)
    if found is None:
        only = _only_under_no_grad if parent is ctx.tree else _method_only_under_no_grad
        found = ctx._cache[key] = only(ctx, func, _DEPTH, {})
    return found


def _method_only_under_no_grad(ctx: Context, func: AST, depth: int, seen: dict[int, bool]) -> bool:
    """Every call of the method ``func`` is ``self.<name>(...)`` in a method of its own class,
    under no_grad or in a method reached only that way; nothing else in the project names it.
    ``seen``: answers so far (False while one is being worked out: a cycle proves nothing)."""
    if id(func) in seen or depth < 0:
        return seen.get(id(func), False)
    seen[id(func)] = False
    seen[id(func)] = found = _method_calls_under_no_grad(ctx, func, depth, seen)
    return found


def _method_calls_under_no_grad(ctx: Context, func: AST, depth: int, seen: dict[int, bool]) -> bool:
    cls, name = ctx.parent(func), func.name
    others = [(p, t) for p, t in ctx.project.files if p != ctx.path and t.count(f".{name}") > t.count(f"self.{name}")]
    if name.startswith("__") or not all(_other_module_calls_under_no_grad(ctx, p, t, name) for p, t in others):
        return False  # dunder methods run implicitly; another module calls it (not on `self`) with autograd on
    uses = [n for n in ctx.nodes.get(ast.Attribute, ()) if n.attr == name]
    if not uses:  # called only by other modules (under no_grad), or a Lightning evaluation hook (run under no_grad)
        return bool(others) or depth < _DEPTH and name in _NO_GRAD_HOOKS and not func.decorator_list
    for use in uses:
        holder = ctx.function_of(use)
        if use.value.__class__ is not ast.Name or use.value.id != "self" or holder is None or ctx.parent(holder) is not cls:
            return False  # called on another object, or from outside the class
        if ctx.parent(use).__class__ is not ast.Call or ctx.parent(use).func is not use:
            return False  # handed on as a value
        if under_no_grad(ctx, use):
            continue
        if holder is func or not _method_only_under_no_grad(ctx, holder, depth - 1, seen):
            return False
    return True


def _other_module_calls_under_no_grad(ctx: Context, path: str, text: str, name: str) -> bool:
    """Every use of ``.<name>`` in the module at ``path`` is a call under no_grad there, or in a
    module-level function of it that every way the project reaches passes under no_grad (``with
    torch.no_grad(): run_one(args, model, i)``, which calls ``model.fast_search(ids, k)``)."""
    other = parsed_file(ctx.project, path, text)
    uses = [n for n in other.nodes.get(ast.Attribute, ()) if n.attr == name] if other is not None else []
    for use in uses:
        call = other.parent(use)
        if call.__class__ is not ast.Call or call.func is not use:
            return False  # handed on as a value
        if under_no_grad(other, call):
            continue
        holder = other.function_of(use)
        if holder is None or other.parent(holder) is not other.tree or not _only_under_no_grad(other, holder, _DEPTH - 1, {}):
            return False  # module-level code, a method (its own callers are not followed), or a bare way in
    return bool(uses)


def _only_under_no_grad(ctx: Context, func: AST, depth: int, seen: dict[int, bool]) -> bool:
    if id(func) in seen or depth < 0:
        return seen.get(id(func), False)
    seen[id(func)] = False
    seen[id(func)] = found = _calls_under_no_grad(ctx, func, depth, seen)
    return found


def _calls_under_no_grad(ctx: Context, func: AST, depth: int, seen: dict[int, bool]) -> bool:
    uses = [n for n in ctx.nodes.get(ast.Name, ()) if n.id == func.name and n.ctx.__class__ is ast.Load]
    outside = list(project_calls(ctx, func.name)) if ctx.project.files else []
    if not uses and not outside:
        return False  # nothing runs it that this file or the project shows
    for other, call in outside:
        if not under_no_grad(other, call):
            return False
    for use in uses:
        if under_no_grad(ctx, use):
            continue
        holder = ctx.function_of(use)
        while holder is not None and ctx.parent(holder) is not ctx.tree:
            holder = ctx.function_of(holder)  # the module-level function around a closure
        if holder is None or holder is func or not _only_under_no_grad(ctx, holder, depth - 1, seen):
            return False
    return True


def bare_live_call(ctx: Context, func: AST, call: ast.Call) -> bool:
    """``validate(val_loader, model)`` on the ``--evaluate`` path of ``main()``, beside the training
    loop's ``with torch.no_grad(): validate(...)``: a call of ``func`` outside no_grad (checked by the
    caller), not inside ``func`` itself, in code that runs (not dead) and in no module-level function
    that every way the project reaches passes under no_grad."""
    if call.func.__class__ is not ast.Name or ctx.contains(func, call) or dead_at(ctx, call.lineno):
        return False
    holder = ctx.function_of(call)
    while holder is not None and ctx.parent(holder) is not ctx.tree:
        holder = ctx.function_of(holder)
    return holder is None or not reached_only_under_no_grad(ctx, holder)


def bound_method_run(ctx: Context, call: ast.Call, receivers: set[str]) -> bool:
    """``encode(images)`` where ``encode`` is bound to a running method (``generate``, ``encode``,
    ``predict``... of :func:`~torchwise.lint.semantics.models.runs_forward`) of a model put in
    eval mode (one of ``receivers``) or of a submodule of it (``trainer.gen_a.encode`` after
    ``trainer.eval()``), also one of two such methods chosen by a condition."""
    func = call.func
    if func.__class__ is not ast.Name or not receivers or func.id not in _method_aliases(ctx):
        return False
    b = ctx.binding_at(func.id, call)
    if b is None or b.kind != "assign" or b.value is None:
        return False
    value = b.value
    options = [value.body, value.orelse] if value.__class__ is ast.IfExp else [value]
    return all(o.__class__ is ast.Attribute and _of_receiver(ctx.text(o.value), receivers) and runs_forward(ctx, o, call)
               for o in options)


def _method_aliases(ctx: Context) -> frozenset[str]:
    """Names the file assigns an attribute (or a choice of two) to: ``encode = net.encode``."""
    found = ctx._cache.get("evalcallers:aliases")
    if found is None:
        found = ctx._cache["evalcallers:aliases"] = frozenset(
            t.id for a in ctx.nodes.get(ast.Assign, ()) if a.value.__class__ in (ast.Attribute, ast.IfExp)
            for t in a.targets if t.__class__ is ast.Name)
    return found


def _of_receiver(owner: str, receivers: set[str]) -> bool:
    return owner in receivers or any(owner.startswith(r + ".") for r in receivers)


__all__ = ["bare_live_call", "bound_method_run", "nested_in_plain_function", "reached_only_under_no_grad"]
