"""Training steps and loops: backward passes, optimizer steps, the loops that run them,
gradient clearing, and code that runs only once per interval (set-up code that runs once:
:mod:`torchwise.lint.semantics.once`)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, DEF_TYPES, Context, last_name
from torchwise.lint.semantics.accumulation import accumulation_loops_only
from torchwise.lint.semantics.hostcopies import handed_host_copies
from torchwise.lint.semantics.replays import replays_batch
from torchwise.lint.semantics.values import local_function

_BACKWARD_OWNERS = frozenset({"accelerator", "fabric", "engine", "model_engine", "trainer", "self"})


def is_backward_call(ctx: Context, call: ast.Call) -> bool:
    func = call.func
    if func.__class__ is ast.Attribute:
        return func.attr in ("backward", "manual_backward")
    elif func.__class__ is ast.Name and func.id == "backward":
        return ctx.qualname(func) == "torch.autograd.backward"
    return False


def backward_calls(ctx: Context) -> list[ast.Call]:
    found = ctx._cache.get("sem:backward")
    if found is None:
        found = [c for c in ctx.calls_named("backward", "manual_backward") if is_backward_call(ctx, c)]
        ctx._cache["sem:backward"] = found
    return found


def is_optimizer_step(ctx: Context, call: ast.Call) -> bool:
    """``opt.step()``, ``self.optimizer.step()``, ``scaler.step(opt)``; never a scheduler or env."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.attr != "step":
        return False
    recv = func.value
    built = ctx.constructed_from(recv, call)
    if built is not None:
        if built.startswith("torch.optim.lr_scheduler"):
            return False
        if built.startswith("torch.optim."):
            return True
        if built.endswith("GradScaler"):
            return bool(call.args)
    name = last_name(recv)
    if name is None:
        return False
    low = name.lower()
    if "sched" in low:
        return False
    if "scaler" in low:
        return bool(call.args)
    return "optim" in low or low in ("opt", "optimizer") or low.startswith("opt_") or low.endswith("_opt")


def optimizer_steps(ctx: Context) -> list[ast.Call]:
    found = ctx._cache.get("sem:steps")
    if found is None:
        found = [c for c in ctx.calls_named("step") if is_optimizer_step(ctx, c)]
        ctx._cache["sem:steps"] = found
    return found


def training_calls(ctx: Context) -> list[ast.Call]:
    return backward_calls(ctx) + optimizer_steps(ctx)


def hot_loops(ctx: Context) -> dict[int, AST]:
    """Loops that run a training step each pass: the innermost loop around a backward/step."""
    found = ctx._cache.get("sem:hot")
    if found is None:
        found = {}
        for call in training_calls(ctx):
            loops = ctx.enclosing_loops(call)
            if loops:
                found[id(loops[0])] = loops[0]
            if len(loops) > 1 and (_over_optimizers(ctx, loops[0]) or replays_batch(loops[0], loops[1]) and is_optimizer_step(ctx, call)):
                # for opt, sched in zip(optimizers, schedulers): opt.step(); for _ in range(replays) over a batch
                found[id(loops[1])] = loops[1]
        ctx._cache["sem:hot"] = found
    return found



def _over_optimizers(ctx: Context, loop: AST) -> bool:
    """``for opt in optimizers:``, ``for opt, sched in zip(optimizers, schedulers):``: a loop that
    steps each of several optimizers; the loop around it runs the training steps."""
    return loop.__class__ is ast.For and "optim" in ctx.text(loop.iter).lower()


def training_loops(ctx: Context) -> dict[int, AST]:
    """Every loop that contains a training step somewhere in its body (outer loops included)."""
    found = ctx._cache.get("sem:train")
    if found is None:
        found = {}
        for call in training_calls(ctx):
            for loop in ctx.enclosing_loops(call):
                found[id(loop)] = loop
        ctx._cache["sem:train"] = found
    return found


def hot_loop_of(ctx: Context, node: AST) -> AST | None:
    hot = hot_loops(ctx)
    for loop in ctx.enclosing_loops(node):
        if id(loop) in hot:
            return loop
    return None


def step_functions(ctx: Context) -> dict[int, AST]:
    """Functions that run one training step per call: a backward pass and an optimizer step in
    their own body, neither inside a loop of theirs (``def train_step(batch)``, a model class's
    ``optimize_parameters()``) - the backward may be in gradient-accumulation loops
    (:mod:`~torchwise.lint.semantics.accumulation`). Their caller's loop is elsewhere; every call is a step."""
    found = ctx._cache.get("sem:stepfuncs")
    if found is None:
        found = {}
        steps = [s for s in optimizer_steps(ctx) if not ctx.enclosing_loops(s)]
        for call in backward_calls(ctx) if steps else ():
            func = ctx.function_of(call)
            if func is None or ctx.scope_of(call) is not func or ctx.enclosing_loops(call) and not accumulation_loops_only(ctx, call, func):
                continue
            if any(ctx.scope_of(s) is func for s in steps):
                found[id(func)] = func
        ctx._cache["sem:stepfuncs"] = found
    return found


def hot_region_of(ctx: Context, node: AST) -> AST | None:
    """What runs ``node`` every training step: the hot loop around it (:func:`hot_loop_of`), or
    the step function it is in (:func:`step_functions`); None otherwise."""
    loop = hot_loop_of(ctx, node)
    if loop is not None:
        return loop
    functions = step_functions(ctx)
    if not functions:
        return None
    func = ctx.function_of(node)
    return func if func is not None and id(func) in functions else None


def evaluated_every_call(ctx: Context, func: AST) -> bool:
    """Does every loop of this file that calls the step function ``func`` also run an evaluation
    (``test(...)``, ``evaluate(...)``) on every pass, outside any condition - or does ``func``
    evaluate itself after its step? A full-batch script
    that trains one step and tests once per epoch waits for the GPU in the test anyway."""
    key = ("sem:evalcalls", id(func))
    found = ctx._cache.get(key)
    if found is None:
        callers = [c for c in ctx.calls_named(func.name) if local_function(ctx, c) is func]
        found = bool(callers)
        itself = _evaluates_after_step(ctx, func)
        for call in callers:
            loops = ctx.enclosing_loops(call)
            if not loops or not (itself or any(_evaluates(ctx, stmt) for stmt in getattr(loops[0], "body", ()))):
                found = False
                break
        ctx._cache[key] = found
    return found


def _evaluates_after_step(ctx: Context, func: AST) -> bool:
    """The step function evaluates itself after its step, at its own level or under an ``if``
    (``if not args.fastmode: model.eval(); output = model(features, adj)``): pyGAT's ``train(epoch)``
    of a full-batch graph network, whose validation loss drives early stopping."""
    body = list(func.body)
    for stmt in func.body:
        if stmt.__class__ is ast.If:
            body += [*stmt.body, *stmt.orelse]
    return any(_evaluates(ctx, stmt) for stmt in body)


def _evaluates(ctx: Context, stmt: AST) -> bool:
    """A statement of a loop body that evaluates: it calls an evaluation function
    (``result = test(...)``) or puts the model in evaluation mode (``model.eval()``)."""
    value = stmt.value if stmt.__class__ in (ast.Assign, ast.Expr, ast.AugAssign) else None
    if value is None or value.__class__ is not ast.Call:
        return False
    name = last_name(value.func) or ""  # (evaluate_node(ypred.cpu(), y): scores host copies, runs no pass of its own)
    return is_eval_name(name) and not handed_host_copies(value) or (name == "eval" and value.func.__class__ is ast.Attribute and not value.args)


def full_batch_epochs(ctx: Context, loop: AST) -> bool:
    """A loop over epochs (``for epoch in range(n)``) that trains on the whole data set once per
    pass and evaluates on every pass, outside any condition: the evaluation waits for the GPU
    each pass anyway, so a read in the training part adds no wait of its own."""
    it = getattr(loop, "iter", None)
    if it is None or it.__class__ is not ast.Call or last_name(it.func) not in ("range", "trange") or len(it.args) > 2:
        return False
    return any(_evaluates(ctx, stmt) for stmt in loop.body)


def backwarded_names(ctx: Context, scope: AST) -> dict[str, list[tuple[int, int]]]:
    """Names a backward pass was started from in ``scope`` -> positions of those calls.

    Understands ``loss.backward()``, ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``,
    ``self.manual_backward(loss)``, ``torch.autograd.backward(loss)``, a scaled loss
    (``(loss / accum_steps).backward()``) and a weighted sum of loss terms
    (``(value_loss * c + action_loss - entropy * c).backward()``: each term).
    """
    key = ("sem:bwnames", id(scope))
    found = ctx._cache.get(key)
    if found is None:
        found = {}
        for call in backward_calls(ctx):
            if ctx.scope_of(call) is not scope:
                continue
            for name in _loss_terms(_backward_target(ctx, call)):
                found.setdefault(name, []).append((call.lineno, call.col_offset))
        for positions in found.values():
            positions.sort()
        ctx._cache[key] = found
    return found


def _backward_target(ctx: Context, call: ast.Call) -> AST | None:
    """The expression a backward call starts from."""
    func = call.func
    if (
        func.__class__ is ast.Attribute
        and func.attr == "backward"
        and ctx.qualname(func) is None
        and (last_name(func.value) or "").lower() not in _BACKWARD_OWNERS
    ):
        target = func.value  # loss.backward(), scaler.scale(loss).backward()
        if target.__class__ is ast.Call and last_name(target.func) == "scale" and target.args:
            target = target.args[0]
        return target
    return call.args[0] if call.args else None  # torch.autograd.backward(loss), accelerator.backward(loss)


def _loss_terms(expr: AST | None, depth: int = 6) -> list[str]:
    """The names summed (and scaled) into ``expr``: ``a * 0.5 + b - c * w`` -> a, b, c."""
    if expr is None or depth <= 0:
        return []
    cls = expr.__class__
    if cls is ast.Name:
        return [expr.id]
    if cls is ast.UnaryOp and expr.op.__class__ is ast.USub:
        return _loss_terms(expr.operand, depth - 1)
    if cls is not ast.BinOp:
        return []
    op = expr.op.__class__
    if op in (ast.Add, ast.Sub):
        return _loss_terms(expr.left, depth - 1) + _loss_terms(expr.right, depth - 1)
    if op in (ast.Div, ast.Mult):  # (loss / accum).backward(), 0.5 * loss: the scaled side only
        if expr.left.__class__ in (ast.Name, ast.BinOp, ast.UnaryOp):
            return _loss_terms(expr.left, depth - 1)
        if expr.left.__class__ is ast.Constant:
            return _loss_terms(expr.right, depth - 1)
    return []


def summed_loss_terms(ctx: Context, scope: AST) -> set[str]:
    """Names summed into the loss a backward pass starts from in ``scope``, through the
    assignments that build it (``loss = (pos + neg) / 2; loss = loss + regularization``)."""
    key = ("sem:terms", id(scope))
    found = ctx._cache.get(key)
    if found is None:
        found = set(backwarded_names(ctx, scope))
        todo = list(found)
        while todo:
            name = todo.pop()
            for b in ctx.bindings(scope).get(name, ()):
                if b.kind in ("assign", "aug") and b.value is not None:
                    for term in _loss_terms(b.value):
                        if term not in found:
                            found.add(term)
                            todo.append(term)
        ctx._cache[key] = found
    return found


def names_feeding_backward(ctx: Context, scope: ast.AST) -> set[str]:
    """Names whose value reaches a backward pass in ``scope`` (one or two assignments back)."""
    key = ("sem:feeding", id(scope))
    cached = ctx._cache.get(key)
    if cached is not None:
        return cached
    out: set[str] = set()
    ctx._cache[key] = out
    todo: list[tuple[ast.AST, ast.AST, int]] = []
    for call in backward_calls(ctx):
        if ctx.scope_of(call) is scope:
            todo.append((call, call, 3))
    while todo:
        expr, use, depth = todo.pop()
        for sub in ast.walk(expr):
            if sub.__class__ is ast.Name and sub.id not in out:
                out.add(sub.id)
                if depth > 0:
                    for b in ctx.bindings(scope).get(sub.id, ()):
                        if b.value is not None and b.kind in ("assign", "aug", "walrus"):
                            todo.append((b.value, b.node, depth - 1))
    return out


def was_backwarded(ctx: Context, expr: AST, use: AST) -> bool:
    """Was a backward pass started from the name ``expr`` after its last binding before ``use``?"""
    if expr.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(expr.id, use)
    start = b.pos if b is not None else (0, 0)
    positions = backwarded_names(ctx, ctx.scope_of(use)).get(expr.id)
    return bool(positions) and positions[-1] >= start


def is_zero_grad_like(ctx: Context, node: AST) -> bool:
    """``*.zero_grad(...)``, ``p.grad = None``, ``p.grad.zero_()``, ``del p.grad`` and the like."""
    cls = node.__class__
    if cls is ast.Call:
        name = last_name(node.func)
        if name and "zero_grad" in name:
            return True
        func = node.func
        if func.__class__ is ast.Attribute and func.attr in ("zero_", "fill_", "detach_", "requires_grad_"):
            inner = func.value
            while inner.__class__ is ast.Attribute or inner.__class__ is ast.Call:
                if inner.__class__ is ast.Attribute and inner.attr == "grad":
                    return True
                inner = inner.value if inner.__class__ is ast.Attribute else inner.func
        return False
    if cls in (ast.Assign, ast.AnnAssign, ast.Delete):
        targets = node.targets if cls is not ast.AnnAssign else [node.target]
        for t in targets:
            if t.__class__ is ast.Attribute and t.attr == "grad":
                return True
    return False


def _is_modulo_test(ctx: Context, test: AST, depth: int = 1) -> bool:
    """A test with a modulo (``step % 100 == 0``), a name bound to one just before
    (``early_phase = batch_idx % log_frequency == 0 and step < 2000``; ``if early_phase or
    late_phase:``) or a call to a helper of this file that returns one (``divisible_by(step,
    100)``, ``def divisible_by(n, d): return n % d == 0``)."""
    for n in ast.walk(test):
        if n.__class__ is ast.BinOp and n.op.__class__ is ast.Mod:
            return True
        if n.__class__ is ast.Name and depth > 0:
            b = ctx.binding_at(n.id, test)
            if b is not None and b.kind == "assign" and b.value is not None and _is_modulo_test(ctx, b.value, depth - 1):
                return True
        if n.__class__ is ast.Call:
            target = local_function(ctx, n)
            if target is not None and target.__class__ is not ast.Lambda:
                for r in ast.walk(target):
                    if r.__class__ is ast.Return and r.value is not None and any(
                        m.__class__ is ast.BinOp and m.op.__class__ is ast.Mod for m in ast.walk(r.value)
                    ):
                        return True
    return False


def modulo_test(ctx: Context, test: AST) -> bool:
    """A modulo test (``(i + 1) % accum == 0``), a name bound to one, or a local helper returning one."""
    return _is_modulo_test(ctx, test)


def runs_periodically(ctx: Context, node: AST) -> bool:
    """Inside ``if step % N == 0`` (or a test calling a local modulo helper): once per interval."""
    return any(_is_modulo_test(ctx, if_node.test) for if_node, _ in ctx.enclosing_ifs(node))


def in_except_handler(ctx: Context, node: AST) -> bool:
    """In the body of an ``except`` clause within its own function: a recovery path, not every step."""
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, DEF_TYPES):
            return False
        if anc.__class__ is ast.ExceptHandler and getattr(child, "_tw_field", "") == "body":
            return True
        child = anc
    return False


_EVAL_WORDS = frozenset({
    "evaluate", "evaluation", "eval", "validate", "validation", "val", "valid", "inference", "infer",
    "predict", "prediction",
})
_TEST_NAMES = frozenset({"test", "test_epoch", "test_loop", "test_one_epoch", "run_test", "do_test", "run_testing"})


def is_eval_name(name: str) -> bool:
    """``evaluate``, ``validate_epoch``, ``run_inference``... but not pytest tests or framework hooks."""
    low = name.lower().strip("_")
    if low in _TEST_NAMES:
        return True
    words = low.split("_")
    if not _EVAL_WORDS.intersection(words):
        return False
    if "step" in words or "train" in words or "training" in words:
        return False  # Lightning-style *_step hooks run under no_grad already; train+eval mixes
    if "test" in words:
        return False  # test_inference(), _test_eval_mode(): tests, whatever they evaluate
    return True
