"""Forward passes with autograd on that no evaluation function of the file shows: the model
run by an agent to pick an action (in a training loop, or in its ``select_action()`` method),
and a helper of another module of the project that runs the model it is handed after
``model.eval()``."""

from __future__ import annotations

import ast
import os
from typing import Iterator

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.actions import environment_step, host_helper, only_acts
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.models import is_module_instance, runs_forward
from torchwise.lint.semantics.steps import hot_loops, is_eval_name

_GRAD_TEXT = ("no_grad", "set_grad_enabled", "inference_mode", "enable_grad", "backward", ".eval()")


def _plain_callee(func: AST) -> bool:
    """``model``, ``self.model``: not an arbitrary attribute chain like ``solver.model``."""
    if func.__class__ is ast.Name:
        return True
    return func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self"


def _runs_module(ctx: Context, node: ast.Call) -> bool:
    func = node.func
    return (_plain_callee(func) and is_module_instance(ctx, func, node)) or (
        func.__class__ is ast.Attribute and is_module_instance(ctx, func.value, node) and runs_forward(ctx, func, node))


def acting_calls(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(call, message)`` for model runs that only pick an environment's action with autograd on:
    in an RL training loop, or in an agent's action-selection method that returns a detached action."""
    if "step(" in ctx.source:
        steps = [c for c in ctx.calls_named("step") if environment_step(ctx, c) and not _own_module_step(ctx, c)]
        loops = list(hot_loops(ctx).values())
        # and every loop that steps an environment: a rollout that trains nothing (expert trajectories, evaluation
        # episodes), an online loop handing its batches to a trainer (`trainer.train(batch)`), an agent's `run()`
        # whose evaluation branch acts greedily while its other branch collects transitions for `self.train_model()`
        loops += [lp for lp in {id(lp): lp for c in steps for lp in ctx.enclosing_loops(c)[:1]}.values()
                  if all(lp is not h for h in loops)]
        for loop in loops:
            if not any(ctx.contains(loop, c) for c in steps):
                continue  # no environment steps in this loop: nothing it computes is only an action
            for node in ctx.walk_body(loop.body):
                stmt = _chained_assign(ctx, node) if node.__class__ is ast.Call and node.args else None
                if stmt is None:
                    continue
                if _runs_module(ctx, node) and not under_no_grad(ctx, node) and (
                        only_acts(ctx, stmt, loop) or _host_value(ctx, stmt.value) and _steps_with(ctx, stmt, loop)):
                    yield node, f"{ctx.text(node.func)} picks the action with autograd recording; the environment only needs its value"
        yield from _stepping_methods(ctx, steps)
    yield from _action_methods(ctx)


def _own_module_step(ctx: Context, call: ast.Call) -> bool:
    """``self.step(x, h)`` in a method of a module class that defines ``step`` itself: a decoder's
    step of a beam search, no environment."""
    func = call.func
    cls = ctx.class_of(call)
    if func.value.__class__ is not ast.Name or func.value.id != "self" or cls is None:
        return False
    return any(n.__class__ is ast.FunctionDef and n.name == "step" for n in cls.body) and any(
        b.startswith("torch.nn.") for b in ctx.local_class_bases(cls.name))


def _chained_assign(ctx: Context, call: ast.Call) -> ast.Assign | None:
    """The assignment whose value is ``call`` or a chain on it (``policy_net(s)[0][0].detach().numpy()``)."""
    node: AST = call
    parent = ctx.parent(node)
    while parent.__class__ in (ast.Subscript, ast.Attribute, ast.Call) and getattr(parent, "value", None) is node \
            or parent.__class__ is ast.Call and parent.func is node:
        node, parent = parent, ctx.parent(parent)
    return parent if parent.__class__ is ast.Assign and parent.value is node else None


def _steps_with(ctx: Context, stmt: ast.Assign, loop: AST) -> bool:
    """Does a later environment ``step()`` of ``loop`` take what ``stmt`` binds (directly or through
    names assigned from it: ``action = int(action)``)? For a value made host data on the spot
    (``policy_net(s)[0][0].detach().numpy()``): whatever else keeps it, no graph is left to use."""
    names = {n.id for t in stmt.targets for n in ast.walk(t) if n.__class__ is ast.Name}
    end = stmt.end_lineno or stmt.lineno
    for node in ctx.walk_body(loop.body):
        if not isinstance(node, ast.stmt) or node.lineno <= end or node.__class__ in (ast.For, ast.While, ast.If, ast.With):
            continue
        reads = {n.id for n in ast.walk(node) if n.__class__ is ast.Name and n.ctx.__class__ is ast.Load}
        if not reads & names:
            continue
        if any(c.__class__ is ast.Call and environment_step(ctx, c) for c in ast.walk(node)):
            return True
        if node.__class__ is ast.Assign:
            names |= {n.id for t in node.targets for n in ast.walk(t) if n.__class__ is ast.Name}
    return False


def _rl_step(call: ast.Call, ctx: Context) -> bool:
    """``next_state, reward, done, info = self.task.step(action)``: an environment's step, by what it returns."""
    parent = ctx.parent(call)
    return parent.__class__ is ast.Assign and len(parent.targets) == 1 and parent.targets[0].__class__ is ast.Tuple \
        and len(parent.targets[0].elts) >= 3


def _stepping_methods(ctx: Context, steps: list[ast.Call]) -> Iterator[tuple[ast.Call, str]]:
    """An agent's ``step()``/``_transition()`` that steps its environment once per call (``next_state,
    reward, done, info = self.task.step(action)``) - no loop around it - after running its network
    for the action, whose output only becomes that action (``action = to_np(self.network(state))``)."""
    loops = hot_loops(ctx).values()
    for step in steps:
        func = ctx.function_of(step)
        if func is None or not _rl_step(step, ctx) or ctx.enclosing_loops(step):
            continue
        for node in ctx.walk_body(func.body):
            if node.__class__ is not ast.Call or not node.args or ctx.parent(node).__class__ is not ast.Assign \
                    or node.lineno > step.lineno or ctx.enclosing_loops(node) or any(ctx.contains(lp, node) for lp in loops):
                continue
            if _runs_module(ctx, node) and not under_no_grad(ctx, node) and only_acts(ctx, ctx.parent(node), func, by_binding=True):
                yield node, f"{ctx.text(node.func)} picks the action with autograd recording; the environment only needs its value"
                break


_STATES = frozenset({"state", "states", "obs", "observation", "observations"})


def _action_method(func: AST) -> bool:
    name = func.name.lower().lstrip("_")
    params = [a.arg for a in func.args.args]
    return name in ("act", "choose_action", "select_action", "get_action", "pick_action", "take_action") or (
        name.startswith(("select_", "choose_")) and name.endswith("action")) or (
        name == "eval_step" and len(params) == 2 and params[1] in _STATES) or (  # an RL agent's evaluation action
        name in ("policy", "policy_with_noise", "noisy_policy") and len(params) >= 2 and params[1] in _STATES)


action_method = _action_method  # (read by hostresults)

_RESHAPES = frozenset({"squeeze", "reshape", "flatten", "ravel", "astype", "copy", "clip"})


def _host_value(ctx: Context, expr: AST | None, depth: int = 2) -> bool:
    """``action.detach().cpu().numpy()[0]``, ``a.item()``, ``to_np(action)``, ``np.argmax(to_np(q))``,
    ``[action]``, or a name bound to one: data for the environment, no graph."""
    while expr is not None and expr.__class__ is ast.Subscript:
        expr = expr.value
    if expr is None or depth < 0:
        return False
    if expr.__class__ in (ast.List, ast.Tuple):
        return bool(expr.elts) and all(_host_value(ctx, e, depth) for e in expr.elts)
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, expr)
        return b is not None and b.kind == "assign" and b.value is not None and _host_value(ctx, b.value, depth - 1)
    if expr.__class__ is not ast.Call:
        return False
    name = last_name(expr.func)
    if name in _RESHAPES and expr.func.__class__ is ast.Attribute and expr.func.value.__class__ is ast.Call:
        return _host_value(ctx, expr.func.value, depth)  # action.cpu().data.numpy().squeeze()
    return name in ("numpy", "item", "tolist", "detach") or host_helper(name) or (
        (ctx.qualname(expr.func) or ctx.text(expr.func)).startswith(("numpy.", "np.")))  # NumPy returns host arrays


def _action_methods(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """An agent's ``select_action(self, state)`` that runs its policy network with autograd on and
    returns the action detached from the graph (``.detach()``, ``.cpu().numpy()``, ``.item()``): called every environment step,
    it records a graph nobody backpropagates."""
    if "action" not in ctx.source and "def act" not in ctx.source:
        return
    for func in ctx.nodes.get(ast.FunctionDef, ()):
        if ctx.parent(func).__class__ is not ast.ClassDef or not _action_method(func):
            continue
        returns = [n for n in ast.walk(func) if n.__class__ is ast.Return]
        if not returns or not all(_host_value(ctx, r.value) or _off_by_default(ctx, func, r) for r in returns) \
                or any(w in ctx.text(func) for w in _GRAD_TEXT) or every_call_without_grad(ctx, func.name) \
                or _keeps_run_values(ctx, func):
            continue
        for node in ctx.walk_body(func.body):
            if node.__class__ is ast.Call and node.args and node.func.__class__ is ast.Attribute and _self_network(ctx, node) \
                    and not under_no_grad(ctx, node):
                yield node, (f"{func.name}() runs {ctx.text(node.func)} with autograd recording on every environment step, "
                             "then returns the action detached from it; acting needs no graph")
                break


_CUT_NAMES = frozenset({"detach", "item", "numpy", "tolist", "cpu"})


def _keeps_run_values(ctx: Context, func: AST) -> bool:
    """The method keeps a value of its network run that still carries the graph: stores it on an
    attribute (``self.last_v = v``) or hands it to another object (``self.transition.extend([log_pi, v])``,
    ``self.buffer.push(log_prob)``) - an A2C that backpropagates the stored log-probability and value
    in its update. Then the graph is needed, whatever the method returns."""
    names: set[str] = set()
    for node in ctx.walk_body(func.body):
        if node.__class__ is ast.Assign and _graph_value(ctx, node.value, names):
            names |= {n.id for t in node.targets for n in ast.walk(t) if n.__class__ is ast.Name}
    if not names:
        return False
    for node in ctx.walk_body(func.body):
        if node.__class__ is ast.Assign and any(n.__class__ in (ast.Attribute, ast.Subscript) for t in node.targets
                                                for n in ast.walk(t)) and _graph_value(ctx, node.value, names, runs=False):
            return True  # self.saved = v, self.buf[i] = v
        call = node.value if node.__class__ is ast.Expr else None
        if call.__class__ is ast.Call and call.func.__class__ is ast.Attribute \
                and not (ctx.qualname(call.func) or "").startswith(("torch.", "numpy.")) \
                and any(_graph_value(ctx, a, names, runs=False) for a in [*call.args, *(k.value for k in call.keywords)]):
            return True  # self.transition.extend([log_pi, v]): a statement handing it to another object
    return False


def _graph_value(ctx: Context, expr: AST, names: set[str], runs: bool = True) -> bool:
    """``expr`` reads one of ``names`` (or, with ``runs``, calls a network of the agent) outside a cut
    (``v.detach()``, ``a.item()``)."""
    if expr.__class__ is ast.Name:
        return expr.id in names
    if expr.__class__ is ast.Call:
        if last_name(expr.func) in _CUT_NAMES or host_helper(last_name(expr.func)):
            return False
        if runs and expr.args and expr.func.__class__ is ast.Attribute and _self_network(ctx, expr):
            return True
    if expr.__class__ is ast.Attribute and expr.attr == "data":
        return False
    return any(_graph_value(ctx, c, names, runs) for c in ast.iter_child_nodes(expr) if isinstance(c, ast.expr))


def _off_by_default(ctx: Context, func: AST, ret: ast.Return) -> bool:
    """``return action.squeeze()`` after ``if to_numpy: return action.cpu().numpy()``, where
    ``to_numpy`` is a parameter that defaults to True and no call in the project passes: the
    tensor return never runs."""
    block = ctx.parent(ret)
    body = getattr(block, "body", None)
    if body is None or ret not in body:
        return False
    args = func.args
    defaults = dict(zip([a.arg for a in args.args][len(args.args) - len(args.defaults):], args.defaults))
    for stmt in body[:body.index(ret)]:
        if stmt.__class__ is ast.If and not stmt.orelse and stmt.test.__class__ is ast.Name \
                and stmt.body[-1].__class__ is ast.Return and _host_value(ctx, stmt.body[-1].value):
            flag = stmt.test.id
            default = defaults.get(flag)
            if default.__class__ is ast.Constant and default.value is True:
                index = [a.arg for a in args.args].index(flag) - 1  # (self)
                return not any(len(c.args) > index or any(k.arg in (flag, None) for k in c.keywords)
                               for _, c in method_calls(ctx, func.name))
    return False


def method_calls(ctx: Context, name: str) -> list[tuple[Context, ast.Call]]:
    """The calls ``x.name(...)`` of this file and of the project's other files that spell ``.name(``."""
    needle = f".{name}("
    calls: list[tuple[Context, ast.Call]] = [(ctx, c) for c in ctx.calls_named(name) if c.func.__class__ is ast.Attribute]
    for path, text in ctx.project.files:
        if path != ctx.path and needle in text:
            other = parsed_file(ctx.project, path, text)
            if other is not None:
                calls += [(other, c) for c in other.calls_named(name) if c.func.__class__ is ast.Attribute]
    return calls


def every_call_without_grad(ctx: Context, name: str) -> bool:
    """Every call of the method ``name`` (``agent.act(obs, step, eval_mode=True)``) in the project -
    this file and the others that call ``.name(`` - sits under ``torch.no_grad()``, and there is
    one: the training script chooses grad mode for the agent."""
    calls = method_calls(ctx, name)
    return bool(calls) and all(under_no_grad(where, c) for where, c in calls)


def _self_network(ctx: Context, call: ast.Call) -> bool:
    """``self.policy(state)``, ``self.policy.sample(state)``, ``self.actor(state)``: a network the agent holds."""
    func = call.func
    owner = func if func.value.__class__ is ast.Name else func.value
    if owner.__class__ is not ast.Attribute or owner.value.__class__ is not ast.Name or owner.value.id != "self":
        return False
    if owner is func:
        return is_module_instance(ctx, func, call)
    return is_module_instance(ctx, owner, call) and runs_forward(ctx, func, call)


def project_helper_runs(ctx: Context, call: ast.Call, receivers: set[str]) -> bool:
    """``evaluate.metrics(model, test_loader, k)`` after ``model.eval()``: a function of another
    module of the project that calls the model it is handed (``model(user, item)``, ``model.forward(e1, rel)``) and switches
    autograd neither off nor on (nor calls ``.eval()``: then it is checked in its own file), and
    is not named for evaluation (reported there)."""
    if not ctx.project.files:
        return False
    index = next((i for i, a in enumerate(call.args) if ctx.text(a) in receivers), None)
    if index is None:
        return False
    return any(_module_runs(ctx, q, index) for q in _helper_names(ctx, call.func))


def _helper_names(ctx: Context, func: AST) -> list[str]:
    """``evaluate.metrics`` for an imported helper; for a plain name that no import of the file names,
    each ``module.name`` of the file's star imports (``from test import *``)."""
    q = ctx.qualname(func)
    if q is not None:
        return [] if "." not in q or q.startswith("torch.") else [q]
    if func.__class__ is not ast.Name or ctx.binding_at(func.id, func) is not None:
        return []
    return [f"{n.module}.{func.id}" for n in ctx.tree.body
            if n.__class__ is ast.ImportFrom and n.module and not n.level and n.names[0].name == "*"]


def _module_runs(ctx: Context, q: str, index: int) -> bool:
    module, name = q.rsplit(".", 1)
    stem = module.rsplit(".", 1)[-1]
    key = ("tw104:helper-runs", q, index)
    found = ctx.project.answers.get(key)
    if found is None:
        found = any(_runs_param(ctx, path, text, name, index) for path, text in ctx.project.files
                    if path != ctx.path and os.path.splitext(os.path.basename(path))[0] == stem and f"def {name}(" in text)
        ctx.project.answers[key] = found
    return found


def _runs_param(ctx: Context, path: str, text: str, name: str, index: int, depth: int = 2) -> bool:
    """The function ``name`` of that file calls its parameter number ``index`` (the model), itself
    or through another function of its file it hands the model to (``lfw_test(model, ...)`` calling
    ``get_features(model, ...)``)."""
    other = parsed_file(ctx.project, path, text)
    if other is None or is_eval_name(name) or depth <= 0:
        return False
    func = next((f for f in other.tree.body if f.__class__ is ast.FunctionDef and f.name == name), None)
    params = [a.arg for a in func.args.args] if func is not None else []
    if func is None or index >= len(params) or any(w in other.text(func) for w in _GRAD_TEXT):
        return False
    param = params[index]
    for n in ast.walk(func):
        if n.__class__ is not ast.Call or under_no_grad(other, n):
            continue
        if _calls_param(n.func, param):
            return True
        handed = next((i for i, a in enumerate(n.args) if a.__class__ is ast.Name and a.id == param), None)
        if handed is not None and n.func.__class__ is ast.Name and n.func.id != name \
                and _runs_param(ctx, path, text, n.func.id, handed, depth - 1):
            return True
    return False


def _calls_param(func: ast.AST, param: str) -> bool:
    """``model(x)`` or ``model.forward(x)`` for the parameter ``model``."""
    if func.__class__ is ast.Attribute and func.attr == "forward":
        func = func.value
    return func.__class__ is ast.Name and func.id == param
