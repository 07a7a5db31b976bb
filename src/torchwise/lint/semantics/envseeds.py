"""Runs that seed only their environment (TW301).

A reinforcement-learning script that calls ``env.seed(SEED)`` (or ``env.reset(seed=SEED)``,
``env.action_space.seed(SEED)``) asks for a reproducible run, but a gym environment's seed
reaches the environment's own generator only: the agent's weight initialisation (torch), its
epsilon-greedy or noise draws (NumPy) and its replay sampling (``random``) stay on fresh
entropy. The run is the script and the project modules it imports for sure (its own folder
first, :func:`.runseeds.imported_for_sure`); it counts only when no file it may import seeds a
global generator or defines a seed helper (:func:`.runseeds.run_seeded`)."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import Context, keyword
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.runseeds import imported_for_sure, run_seeded


def _env_receiver(ctx: Context, node: ast.AST) -> bool:
    """``env``, ``env_eval``, ``self.env``, ``eval_env``, ``envs``: a name of an environment."""
    last = node.attr if node.__class__ is ast.Attribute else node.id if node.__class__ is ast.Name else ""
    return "env" in last.lower() and "environ" not in last.lower()


def _fixed_name(ctx: Context, call: ast.Call, name: str) -> bool:
    """Every assignment of ``name`` in the call's function (or the module) is a fixed value: a
    number, an option (``args.seed``), another name - no call (``seed = actor_index ^
    int.from_bytes(os.urandom(4))`` asks for fresh entropy)."""
    scope = ctx.function_of(call)
    for body in ([scope] if scope is not None else []) + [ctx.tree]:
        nodes = ast.walk(body) if body is not ctx.tree else iter(body.body)
        for node in nodes:
            if node.__class__ is ast.Assign and any(t.__class__ is ast.Name and t.id == name for t in node.targets) \
                    and any(n.__class__ is ast.Call for n in ast.walk(node.value)):
                return False
    return True


def env_seeds(ctx: Context) -> list[ast.Call]:
    """The calls that seed an environment with the run's seed: a literal number or a value named
    for a seed (``RANDOM_SEED``, ``args.seed``), not ``None`` or a worker's index."""
    if "env" not in ctx.source:
        return []
    found = []
    for call in ctx.calls_named("seed", "reset"):
        func = call.func
        if func.__class__ is not ast.Attribute:
            continue
        recv = func.value
        if recv.__class__ is ast.Attribute and recv.attr in ("action_space", "observation_space"):
            recv = recv.value
        if not _env_receiver(ctx, recv):
            continue
        arg = keyword(call, "seed")
        value = arg.value if arg is not None else call.args[0] if func.attr == "seed" and call.args else None
        if value is None or value.__class__ is ast.Constant and value.value is None:
            continue
        if not (value.__class__ is ast.Constant and value.value.__class__ is int or "seed" in ctx.text(value).lower()) \
                or value.__class__ is ast.Name and not _fixed_name(ctx, call, value.id):
            continue  # (`env.seed(worker_id)` in a worker process: environments made to differ, not a run made reproducible)
        found.append(call)
    return sorted(found, key=lambda c: (c.lineno, c.col_offset))


def env_only_draws(ctx: Context, uses: Callable[..., dict[str, ast.AST]]) -> tuple[ast.Call, dict[str, str]] | None:
    """An entry script (``__main__``) that seeds an environment and no global generator, whose run
    trains (a backward pass in it or a module it imports for sure) and draws from generators that
    nothing on the run seeds: the first environment seed and ``{family: file}`` of those draws."""
    if "__main__" not in ctx.source:
        return None
    seeds = env_seeds(ctx)
    if not seeds:
        return None
    project = ctx.project
    program: tuple[str, ...] = (ctx.path,)
    if project.files:
        if run_seeded(project, ctx.path) != set():
            return None  # something on the run seeds a generator, or a seed helper may
        program = (ctx.path, *imported_for_sure(project, ctx.path))
    texts = dict(project.files)
    parsed = [ctx] + [parsed_file(project, p, texts[p]) for p in program[1:] if p in texts]
    if not any(".backward(" in (o.source if o is not None else "") for o in parsed):
        return None  # no training on this run (an evaluation or a random-agent demo)
    draws: dict[str, str] = {}
    for other in parsed:
        if other is None:
            continue
        for family, node in uses(other).items():
            func = other.function_of(node)
            if func is not None and not func.name.startswith("__") and sum(
                    t.count(func.name + "(") for t in (o.source for o in parsed if o is not None)) <= 1:
                continue  # in a function this run never calls
            draws.setdefault(family, other.path)
    return (seeds[0], draws) if draws else None
