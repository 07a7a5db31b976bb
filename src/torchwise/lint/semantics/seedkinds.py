"""Seeds that are not a run's seeding (TW301): a DataLoader worker's or a worker process's own
reseeding, and a scoped seed whose global state is put back."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context


def worker_reseed(ctx: Context, call: ast.Call) -> bool:
    """``def worker_init_fn(worker_id): numpy.random.seed(numpy.random.get_state()[1][0] +
    worker_id)``: each DataLoader worker's stream made distinct, not the run's seeding."""
    func = ctx.function_of(call)
    if func is None or func.__class__ is ast.Lambda:
        return False
    if "worker" in func.name.lower() or any(a.arg == "worker_id" for a in func.args.args):
        return True
    # a process's target (Process(target=sample_function, args=(..., np.random.randint(2e9)))) seeded
    # with a value it is handed: each worker's own stream
    handed = bool(call.args) and call.args[0].__class__ is ast.Name and call.args[0].id in {a.arg for a in func.args.args}
    return any((k.arg == "worker_init_fn" or handed and k.arg in ("target", "initializer")) and ctx.text(k.value) == func.name
               for k in ctx.nodes.get(ast.keyword, ()))


def scoped_seed(ctx: Context, call: ast.Call) -> bool:
    """``state = np.random.get_state(); np.random.seed(2019); ...; np.random.set_state(state)``:
    a fixed seed for one split, with the global state put back - not the run's seeding."""
    scope = ctx.scope_of(call)
    restores = [c for c in ctx.calls_named("set_state", "setstate") if ctx.scope_of(c) is scope and c.lineno > call.lineno]
    saves = [c for c in ctx.calls_named("get_state", "getstate") if ctx.scope_of(c) is scope and c.lineno < call.lineno]
    return bool(restores and saves)
