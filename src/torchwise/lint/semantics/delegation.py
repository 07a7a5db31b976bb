"""Training handed to a call: loops that run no backward pass or optimizer step of their own in
this file, but call - once per pass, outside any test - code that does:

* a function or method of this file that trains once per call (``self.train_step(batch)``, a
  full-batch ``train(epoch)``), or repeats updates on what the pass hands it
  (``batch = agent.collect_samples(n)`` ... ``update_params(batch)`` running PPO epochs over
  ``range()`` loops) - also where it trains through a function of another module of the
  project (``update_params`` calling ``ppo_step(...)``);
* a function another module of the project defines, imported by name, that runs a backward pass
  (``a2c_step(policy_net, value_net, optimizer, states, ...)``), handed the pass's data;
* a helper handed the loss first and the optimizer (``loss_scaler(loss, optimizer, clip_grad=...)``:
  a scaler helper that runs backward and step);
* a method of another object named for training (``model.train_a_batch(x_to_use)``,
  ``agent.learn(batch)``) every definition of which in the project runs a backward pass (or
  hands on to a method of that name), handed the pass's data.

A function that trains over a data loader of its own (``train_one_epoch(model, loader, ...)``)
is an epoch: the loop calling it runs once per epoch, not per step, and is not counted; nor is
a loop that steps an environment itself (an RL update loop around its rollout: the rollout's
host reads are the algorithm's, and its action reads wait every environment step anyway). Such a
loop runs training steps as surely as one that calls ``backward()`` itself (TW207, TW217, and
the backward helper for TW215)."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, LOOP_TYPES, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.actions import steps_environment
from torchwise.lint.semantics.losses import is_loss_value
from torchwise.lint.semantics.projectcode import def_bodies, module_texts
from torchwise.lint.semantics.steps import backward_calls, optimizer_steps, runs_periodically, step_functions, training_loops
from torchwise.lint.semantics.values import functions_by_name, local_function

# a function that trains once per call, or repeats its updates over range() loops on what it is handed
_ONCE, _REPEAT, _EPOCH = "once", "repeat", "epoch"
_COUNTERS = frozenset({"range", "trange"})
_TRAIN_WORDS = frozenset({"step", "train", "update", "optimize", "learn", "fit"})
_FOR_LINE = lazy_compile(r"^\s*(?:async\s+)?for\s.*?\sin\s(.*):", re.M)


def delegated_loops(ctx: Context) -> dict[int, AST]:
    """Loops with no training call of their own whose body hands a training step to a call once
    per pass (see the module doc)."""
    found = ctx._cache.get("sem:delegated")
    if found is None:
        found = ctx._cache["sem:delegated"] = {}
        if "(" not in ctx.source or not any(ctx.nodes.get(cls) for cls in LOOP_TYPES):
            return found
        training = training_loops(ctx)
        for call in _candidate_calls(ctx):
            loops = ctx.enclosing_loops(call)
            if not loops or id(loops[0]) in found or any(id(loop) in training for loop in loops):
                continue  # (a loop that trains itself, or one around such a loop, is the steps' own business)
            if not runs_periodically(ctx, call) and _hands_step(ctx, call, loops[0]) and not steps_environment(ctx, loops[0]):
                found[id(loops[0])] = loops[0]
    return found


def delegated_loop_of(ctx: Context, node: AST) -> AST | None:
    """The loop around ``node`` (within its function) that hands a training step to a call each pass."""
    loops = delegated_loops(ctx)
    if not loops:
        return None
    for loop in ctx.enclosing_loops(node):
        if id(loop) in loops:
            return loop
    return None


def delegating_function_of(ctx: Context, node: AST) -> AST | None:
    """The function around ``node`` (not in a loop of its own) that runs a training step per call by
    calling, outside any loop or test, a method of this file that trains once per call
    (``def update(self, replay_iter, step)`` calling ``self.update_critic(...)`` and
    ``self.update_actor(...)``): what it reads outside its loops, it reads every step."""
    func = ctx.function_of(node)
    if func is None or ctx.enclosing_loops(node) or not step_functions(ctx):
        return None
    key = ("sem:delegating", id(func))
    found = ctx._cache.get(key)
    if found is None:
        steps = step_functions(ctx)
        found = ctx._cache[key] = id(func) not in steps and any(
            c.func.__class__ is ast.Attribute and c.func.value.__class__ is ast.Name and c.func.value.id == "self"
            and ctx.function_of(c) is func and not ctx.enclosing_loops(c) and not ctx.enclosing_ifs(c)
            and id(local_function(ctx, c)) in steps for c in ctx.nodes.get(ast.Call, ()))  # (the cheap tests first)
    return func if found else None


def backward_helper(ctx: Context, call: ast.Call) -> bool:
    """``loss_scaler(loss, optimizer, clip_grad=..., update_grad=...)``: a call handed a loss as
    its first argument and an optimizer after it - a helper that runs the backward pass and the
    optimizer step (a gradient scaler's ``__call__``, ``backward_and_step(loss, opt)``)."""
    if not call.args or ctx.qualname(call.func) is not None:
        return False
    first = call.args[0]
    name = (last_name(first) or "").lower()
    if first.__class__ is not ast.Name or not ("loss" in name or is_loss_value(ctx, first, call)):
        return False
    return any(_optimizer_name(a) for a in [*call.args[1:], *(k.value for k in call.keywords)])


def _optimizer_name(expr: AST) -> bool:
    if expr.__class__ not in (ast.Name, ast.Attribute):
        return False
    low = (last_name(expr) or "").lower()
    return "optim" in low or low in ("opt", "optimizer") and "sched" not in low


def _candidate_calls(ctx: Context) -> list[ast.Call]:
    """Calls that may hand a training step on: of the file's training functions, of names
    imported from another module, or with a loss first (cheap tests by name only)."""
    local = _local_training(ctx)
    imported = _imported_names(ctx)
    out = []
    for name in local.keys() | imported.keys():
        out.extend(ctx.calls_by_name.get(name, ()))
    for name, calls in ctx.calls_by_name.items() if ctx.project.files else ():
        if name not in local and name not in imported and _TRAIN_WORDS.intersection(name.lower().split("_")):
            out.extend(c for c in calls if c.func.__class__ is ast.Attribute and (c.args or c.keywords))
    if "loss" in ctx.source:
        out.extend(c for c in ctx.nodes.get(ast.Call, ()) if c.args and c.args[0].__class__ is ast.Name
                   and "loss" in c.args[0].id.lower() and last_name(c.func) not in local and last_name(c.func) not in imported)
    return out


def _hands_step(ctx: Context, call: ast.Call, loop: AST) -> bool:
    target = local_function(ctx, call)
    if target is not None and target.__class__ is not ast.Lambda:
        kind = _local_training(ctx).get(target.name) if not ctx.contains(target, call) else None
        return kind == _ONCE or kind == _REPEAT and _handed_pass_data(ctx, call, loop)
    if backward_helper(ctx, call):
        return True
    func = call.func
    if func.__class__ is ast.Attribute and not (func.value.__class__ is ast.Name and func.value.id in ("self", "cls")):
        # model.train_a_batch(x, y), agent.learn(batch): a method every definition of which in the project trains
        return _TRAIN_WORDS.intersection(func.attr.lower().split("_")) and method_trains(ctx, func.attr) \
            and _handed_pass_data(ctx, call, loop)
    module = _imported_names(ctx).get(last_name(func) or "") if func.__class__ is ast.Name else None
    return module is not None and project_trains(ctx, module, func.id) and _handed_pass_data(ctx, call, loop)


def _handed_pass_data(ctx: Context, call: ast.Call, loop: AST) -> bool:
    """Is the call handed a value this pass made: a name bound in the loop's body
    (``batch, log = agent.collect_samples(n)``), or an item the loop takes from something other
    than a counter (``for x, y in loader``; not ``for epoch in range(n)`` nor ``enumerate``'s index)?"""
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        for sub in ast.walk(arg):
            if sub.__class__ is not ast.Name:
                continue
            b = ctx.binding_at(sub.id, call)
            if b is None:
                continue
            if b.kind == "for" and b.node is loop:
                it = loop.iter
                counter = it.__class__ is ast.Call and last_name(it.func) in _COUNTERS or it.__class__ in (ast.List, ast.Tuple)
                index = it.__class__ is ast.Call and last_name(it.func) == "enumerate" and b.index == 0
                if not counter and not index:
                    return True
            elif b.kind in ("assign", "unpack", "walrus") and ctx.contains(loop, b.node) \
                    and b.value.__class__ in (ast.Call, ast.Subscript):
                return True  # (x_to_use = x[y == class_id]: a part of the pass's batch)
    return False


def _local_training(ctx: Context) -> dict[str, str]:
    """Functions and methods of this file that train, by name -> how: once per call, repeating
    over ``range()`` loops, or over a loader (an epoch). Through one call of another training
    function of the file or of the project."""
    found = ctx._cache.get("sem:local-training")
    if found is None:
        found = ctx._cache["sem:local-training"] = {}
        names = functions_by_name(ctx)
        sites: list[tuple[ast.Call, str]] = [(c, _ONCE) for c in optimizer_steps(ctx)]
        sites += [(c, _ONCE) for c in backward_calls(ctx) if _training_name(ctx.function_of(c))]
        for name, module in _imported_names(ctx).items():
            for call in ctx.calls_by_name.get(name, ()):
                if call.func.__class__ is ast.Name and project_trains(ctx, module, name):
                    sites.append((call, _ONCE))
        for level in range(2):
            for call, kind in sites:
                for func in _enclosing_functions(ctx, call):
                    if len(names.get(func.name, ())) == 1:
                        found[func.name] = _worst(found.get(func.name), _worst(kind, _how(ctx, call, func)))
            if level == 0:  # a function calling one of those (update_params -> self._step(batch))
                sites = [(c, found[target.name]) for name in list(found) for c in ctx.calls_by_name.get(name, ())
                         if (target := local_function(ctx, c)) is not None and target.name in found
                         and not ctx.contains(target, c)]
    return found


def _training_name(func: AST | None) -> bool:
    name = getattr(func, "name", None)
    return name is not None and bool(_TRAIN_WORDS.intersection(name.lower().strip("_").split("_")))


def _enclosing_functions(ctx: Context, node: AST) -> list[AST]:
    return [a for a in ctx.ancestors(node) if a.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)]


def _how(ctx: Context, call: ast.Call, func: AST) -> str:
    """Once per call, repeated over counters, or over a loader: the loops between ``func`` and ``call``."""
    how = _ONCE
    for anc in ctx.ancestors(call):
        if anc is func:
            break
        if anc.__class__ in (ast.For, ast.AsyncFor):
            it = anc.iter
            if not (it.__class__ is ast.Call and (last_name(it.func) in _COUNTERS or last_name(it.func) == "enumerate"
                    and it.args and it.args[0].__class__ is ast.Call and last_name(it.args[0].func) in _COUNTERS)):
                return _EPOCH
            how = _REPEAT
        elif anc.__class__ is ast.While:
            how = _REPEAT
    return how


def _worst(old: str | None, new: str) -> str:
    order = (_ONCE, _REPEAT, _EPOCH)
    return new if old is None else order[max(order.index(old), order.index(new))]


def _imported_names(ctx: Context) -> dict[str, str]:
    """Names imported by ``from module import name`` (also relative) -> the module's last part;
    only modules that are not torch, NumPy or the standard library's usual suspects."""
    found = ctx._cache.get("sem:imported-from")
    if found is None:
        found = ctx._cache["sem:imported-from"] = {}
        if not ctx.project.files:
            return found
        for node in ctx.nodes.get(ast.ImportFrom, ()):
            module = node.module or ""
            if module.split(".", 1)[0] in _LIBRARIES or not (module or node.level):
                continue
            stem = module.rsplit(".", 1)[-1] if module else ""
            for alias in node.names:
                if alias.name != "*" and stem:
                    found[alias.asname or alias.name] = stem
    return found


_LIBRARIES = frozenset({
    "torch", "numpy", "os", "sys", "math", "time", "random", "typing", "collections", "functools", "itertools",
    "transformers", "torchvision", "tqdm", "scipy", "sklearn", "pandas", "PIL", "__future__", "dataclasses",
    "accelerate", "lightning", "pytorch_lightning", "timm", "apex", "deepspeed", "tensorboardX", "wandb",
})


def project_trains(ctx: Context, module: str, name: str) -> bool:
    """Does the function ``name`` of the project's module ``module`` (every definition there)
    run a backward pass - with an optimizer step, or under a training name (``trpo_step``) - and
    no loop over a data loader (an epoch function)? Read by text, once per process."""
    facts = ctx.project
    key = ("delegation:trains", module, name)
    if key not in facts.answers:
        answer = False
        for text in module_texts(facts).get(module, ()):
            if f"def {name}(" in text:
                bodies = def_bodies(text, name)
                answer = bool(bodies) and all(_body_trains(name, body) for body in bodies)
                break
        facts.answers[key] = answer
    return facts.answers[key]


def method_trains(ctx: Context, name: str) -> bool:
    """Does every method ``name`` of the project (``def name(self, ...)``, at least one) run a
    backward pass (:func:`_body_trains`) or hand on to a method of that name (a wrapper
    dispatching to its sub-models), and at least one train? An ``nn.Module.train(mode)``
    override or a meter's ``update(val)`` settles it the other way. Read by text, once per process."""
    facts = ctx.project
    key = ("delegation:method", name)
    if key not in facts.answers:
        bodies = [b for texts in module_texts(facts).values() for t in texts if f"def {name}(self" in t
                  for b in def_bodies(t, name, method=True)]
        trains = [_body_trains(name, b) for b in bodies]
        facts.answers[key] = any(trains) and all(t or f".{name}(" in b for t, b in zip(trains, bodies))
    return facts.answers[key]


def _body_trains(name: str, body: str) -> bool:
    if ".backward(" not in body:
        return False
    if ".step(" not in body and not _TRAIN_WORDS.intersection(name.lower().split("_")):
        return False
    return not any("loader" in it.lower() or "dataset" in it.lower() for it in _FOR_LINE.findall(body))


__all__ = ["backward_helper", "delegated_loop_of", "delegated_loops", "project_trains"]
