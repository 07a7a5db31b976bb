"""Values an environment needs on the host: the action a reinforcement-learning loop steps its
environment with (``env.step(action)``). Reading it on the host is required, and the model call
that produced it needs no autograd graph when nothing else keeps it. An index array a model
method makes with NumPy from sizes, converted and moved every call."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.hostarrays import numpy_made
from torchwise.lint.semantics.steps import backward_calls, is_optimizer_step, names_feeding_backward
from torchwise.lint.semantics.values import local_function


def environment_step(ctx: Context, call: ast.Call) -> bool:
    """``env.step(action)``, ``envs.step(...)``: a step that is not an optimizer's, scheduler's or scaler's."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.attr != "step" or not (call.args or call.keywords):
        return False
    owner = (last_name(func.value) or "").lower()
    if any(w in owner for w in ("optim", "sched", "scaler", "opt")) or is_optimizer_step(ctx, call):
        return False
    return True


def feeds_environment(ctx: Context, node: AST, loop: AST) -> bool:
    """Does the value read at ``node`` go to an environment's ``step()`` in this loop (directly,
    or through names assigned from it)? The environment runs on the host: the read is needed."""
    for anc in ctx.ancestors(node):
        if anc.__class__ is ast.Call and environment_step(ctx, anc):
            return True
        if isinstance(anc, ast.stmt):
            stmt = anc
            break
    else:
        return False
    if stmt.__class__ is not ast.Assign or not steps_environment(ctx, loop):
        return False
    names = {n.id for t in stmt.targets for n in ast.walk(t) if n.__class__ is ast.Name}
    later = [n for n in ctx.walk_body(loop.body) if getattr(n, "lineno", 0) > (stmt.end_lineno or stmt.lineno)]
    for n in later:
        if n.__class__ is ast.Assign and any(m.__class__ is ast.Name and m.id in names for m in ast.walk(n.value)):
            names |= {m.id for t in n.targets for m in ast.walk(t) if m.__class__ is ast.Name}
        elif n.__class__ is ast.Call and environment_step(ctx, n):
            if any(m.__class__ is ast.Name and m.id in names for a in n.args for m in ast.walk(a)):
                return True
    return False


_HOST_HELPERS = frozenset({"to_np", "tonp", "to_numpy", "tonumpy", "tensor_to_np", "tensortonp", "tensor2np", "tensor_to_numpy"})


def steps_environment(ctx: Context, loop: AST) -> bool:
    """Does the loop step an environment anywhere in its body (asked once per loop)?"""
    key = ("sem:steps-env", id(loop))
    found = ctx._cache.get(key)
    if found is None:
        end = getattr(loop, "end_lineno", None) or loop.lineno
        found = ctx._cache[key] = any(loop.lineno <= c.lineno <= end and environment_step(ctx, c) for c in ctx.calls_named("step"))
    return found


def host_helper(name: str | None) -> bool:
    """``to_np(t)``, ``to_numpy(t)``: a project helper named for returning ``t.cpu().detach().numpy()``."""
    return name is not None and name.lower() in _HOST_HELPERS


def _leaves_graph(ctx: Context, expr: AST) -> bool:
    """``q.argmax(1).cpu().numpy()``, ``a.detach()``, ``a.item()``, ``to_np(q)``, ``self.compute_q(p)``
    (a method of this file that returns such host data): the value no longer carries a graph."""
    for n in ast.walk(expr):
        if n.__class__ is not ast.Call:
            continue
        name = last_name(n.func)
        if name in ("cpu", "numpy", "item", "tolist", "detach") or host_helper(name):
            return True
        func = local_function(ctx, n)
        if func is not None and func.__class__ is ast.FunctionDef and ctx.parent(func).__class__ is ast.ClassDef:
            returns = [r.value for r in ast.walk(func) if r.__class__ is ast.Return and r.value is not None]
            if returns and all(_returns_host(ctx, r) for r in returns):
                return True
    return False


def _returns_host(ctx: Context, expr: AST) -> bool:
    """``return q_values`` where ``q_values = to_np(prediction["q"])`` (one assignment back)."""
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, expr)
        expr = b.value if b is not None and b.kind == "assign" and b.value is not None else expr
    return expr.__class__ is ast.Call and (last_name(expr.func) in ("numpy", "item", "tolist") or host_helper(last_name(expr.func)))


def _binding_feeds_backward(ctx: Context, stmt: ast.stmt) -> bool:
    """A name bound by ``stmt`` (this binding, not a later one of the same name) reaches a
    backward pass of its scope, a few assignments on."""
    scope = ctx.scope_of(stmt)
    todo = [(c, 3) for c in backward_calls(ctx) if ctx.scope_of(c) is scope]
    seen: set[int] = set()
    while todo:
        expr, depth = todo.pop()
        for sub in ast.walk(expr):
            if sub.__class__ is not ast.Name or id(sub) in seen:
                continue
            seen.add(id(sub))
            b = ctx.binding_at(sub.id, sub)
            if b is None:
                continue
            if b.node is stmt:
                return True
            if depth > 0 and b.value is not None and b.kind in ("assign", "aug", "walrus"):
                todo.append((b.value, depth - 1))
    return False


def only_acts(ctx: Context, stmt: ast.stmt, loop: AST, by_binding: bool = False) -> bool:
    """Does what ``stmt`` binds only become an action for an environment in ``loop``: it reaches
    an environment's ``step()`` (through ``argmax``, ``.cpu().numpy()``...) and is not collected
    (``.append``, ``+=``), returned, or summed into a backward pass while it still carries its
    graph? Then the model call that made it needed no autograd graph."""
    if stmt.__class__ is not ast.Assign:
        return False
    names = {n.id for t in stmt.targets for n in ast.walk(t) if n.__class__ is ast.Name and n.id != "_"}
    if not names or (_binding_feeds_backward(ctx, stmt) if by_binding else names & names_feeding_backward(ctx, ctx.scope_of(stmt))):
        return False  # (by_binding: a later `action = actor(states)` of the update is another value)
    end = stmt.end_lineno or stmt.lineno
    stepped = False
    released: set[str] = set()  # host data made from it (.cpu().numpy()): used anywhere, it needs no graph
    for node in ctx.walk_body(loop.body):
        if not isinstance(node, ast.stmt) or node.lineno <= end or node.__class__ in (ast.For, ast.While, ast.If, ast.With):
            continue  # compound statements: their inner statements are looked at one by one
        reads = {n.id for n in ast.walk(node) if n.__class__ is ast.Name and n.ctx.__class__ is ast.Load}
        if not reads & (names | released):
            continue
        value = node.value if node.__class__ in (ast.Assign, ast.Expr) else None
        if value is not None and any(c.__class__ is ast.Call and environment_step(ctx, c) for c in ast.walk(value)):
            stepped = True  # the environment takes it; what it returns is new data
        elif not reads & names:
            if node.__class__ is ast.Assign:  # action = epsilon_greedy(eps, q_values): made from host data
                released |= {n.id for t in node.targets for n in ast.walk(t) if n.__class__ is ast.Name}
            continue
        elif node.__class__ is ast.Assign and _leaves_graph(ctx, node.value):
            bound = {n.id for t in node.targets for n in ast.walk(t) if n.__class__ is ast.Name}
            released |= bound
            names -= bound  # actions = actions.detach().cpu().numpy(): the name now holds host data
        elif node.__class__ is ast.Assign:
            names |= {n.id for t in node.targets for n in ast.walk(t) if n.__class__ is ast.Name}
        elif node.__class__ is ast.AugAssign and node.target.__class__ is ast.Name and node.target.id in names:
            continue  # action += noise: the action itself changed (exploration noise), nothing collected
        else:
            return False  # collected, returned, logged as a tensor...: it may need its graph
    return stepped


def model_input_copy(ctx: Context, call: ast.Call) -> bool:
    """``torch.LongTensor(positions).to(self.dev)`` in a method of an ``nn.Module`` other than
    ``__init__`` (``forward``, ``predict``, a helper they call) where ``positions`` is an array NumPy
    makes there from sizes (``np.tile(np.arange(n), [b, 1])``, then masked in place): made on the
    host and copied every call, where torch would make it on the device. Not the model's input
    data handed in as a parameter (``torch.LongTensor(log_seqs)``): that has to cross anyway.
    Only a move in the same expression."""
    parent = ctx.parent(call)
    if len(call.args) != 1 or parent.__class__ is not ast.Attribute or parent.attr not in ("to", "cuda"):
        return False
    func = ctx.function_of(call)
    owner = ctx.parent(func) if func is not None else None
    if owner.__class__ is not ast.ClassDef or func.name == "__init__" \
            or not any(ctx.qualname(b) == "torch.nn.Module" for b in owner.bases):
        return False
    arg = call.args[0]
    if arg.__class__ is not ast.Name:
        return False
    if arg.id in {a.arg for a in func.args.args[1:]}:
        return False  # the caller's data
    if numpy_made(ctx, arg, call):
        return True
    made = [n.value for n in ast.walk(func) if n.__class__ is ast.Assign and any(
        t.__class__ is ast.Name and t.id == arg.id for t in n.targets)]  # poss = np.tile(...); poss *= mask
    return bool(made) and all(v.__class__ is ast.Call and numpy_made(ctx, v, v) for v in made)


