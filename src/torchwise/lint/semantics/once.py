"""Code that runs once - set-up (module level outside loops, ``__init__``/``setup``/``main``-like
functions, helpers only set-up or an evaluation calls, recovery paths) - and the functions that
run for every batch or step instead."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, DEF_TYPES, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.callers import MAX_CALLER_FILES, parsed_file, project_calls, star_calls
from torchwise.lint.semantics.classhelpers import helper_of_its_class
from torchwise.lint.semantics.deadcode import dead_code
from torchwise.lint.semantics.projecthelpers import module_class
from torchwise.lint.semantics.settingsloops import settings_comprehension, settings_loop
from torchwise.lint.semantics.steps import hot_loops, hot_region_of, is_eval_name, modulo_test, training_calls
from torchwise.lint.semantics.values import local_function

# functions that run once per program or per object: set-up
ONCE_NAMES = frozenset({"__init__", "__post_init__", "__new__", "main", "_main", "reset_parameters", "_reset_parameters",
                         "init_weights", "_init_weights", "reset", "setup", "_setup", "build", "_build"})
ONCE_PREFIXES = ("setup_", "_setup_", "build_", "_build_", "init_", "_init_", "initialize", "create_", "configure_",
                  "prepare_", "make_", "load_", "register_")
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def is_per_call_function(ctx: Context, func: AST) -> bool:
    """A function that runs for every batch or step: ``forward``/``__call__`` (also
    ``forward_features``...), ``*_step``, a method of an ``nn.Module`` class (part of the
    model's computation: ``generate``, ``encode``...), or one that runs a training step itself."""
    if func.__class__ is ast.Lambda:
        return True
    if _named_per_call(func.name):
        return True
    klass = ctx.parent(func)
    if klass.__class__ is ast.ClassDef and not _hook_or_eval(func.name) and module_class(ctx, klass):
        return True
    return any(ctx.scope_of(c) is func for c in training_calls(ctx))


def runs_once(ctx: Context, node: AST, depth: int = 2) -> bool:
    """Does ``node`` evidently run once (set-up), not every step? Never in a collate function;
    yes at module level outside loops, in ``__init__``/``setup``/``build``/``main``-like functions (``__init__`` of a plain
    helper class built in a forward pass excepted), before or after the loop of a function that
    loops (unless a forward pass calls it: :func:`called_per_call`, or a loop over batches or
    items does: :func:`called_per_item`), in a helper every caller of which (in this file) runs once or evaluates (an
    evaluator's method), and on a NaN recovery path - also inside loops over a few settings only
    (:func:`settings_loop`), once per setting; no inside other loops or a comprehension, in
    per-call functions (:func:`is_per_call_function`) and in other functions (helpers may be
    called per step)."""
    loops = ctx.enclosing_loops(node)
    if loops and not all(settings_loop(ctx, loop) for loop in loops):
        return False  # (a loop over a few settings, `for res in RESOLUTIONS:`, `for K in args.nmb_prototypes:`, runs once per setting)
    comps = []
    for anc in ctx.ancestors(node):
        if anc.__class__ in _COMPREHENSIONS:
            comps.append(anc)
        if isinstance(anc, DEF_TYPES):
            break
    if comps and not settings_comprehension(ctx, comps):
        return False  # (one item per layer, [torch.zeros(n) for layer in model.layers], is made once)
    if _recovery_path(ctx, node):
        return True
    scope = ctx.scope_of(node)
    if scope.__class__ is ast.Module:
        return True
    if scope.__class__ is not ast.Lambda and "collate" in scope.name.lower():
        return False  # a loader's collate function (variable_time_collate_fn): it runs for every batch
    if scope.__class__ is not ast.Lambda and _HOOK.match(scope.name):
        return True  # begin_task / end_epoch: once per task or epoch
    if scope.__class__ is not ast.Lambda and scope.name in ONCE_NAMES:
        return not (scope.name == "__init__" and _built_per_call(ctx, scope))
    if scope.__class__ is not ast.Lambda and scope.name.startswith(ONCE_PREFIXES):
        # make_one_hot(...) in a loss's forward, hidden = model.init_hidden() in a per-example training step: every step
        return not (called_per_call(ctx, scope, skip_samplers=True) or _called_in_step(ctx, scope.name)
                    or _forward_calls_elsewhere(ctx, scope))  # build_targets(...) in another module's loss forward
    if scope.__class__ is not ast.Lambda and scope.name not in ("forward", "__call__") and depth > 0 and _called_at_setup(ctx, scope, depth):
        return True  # a method of a module, but only called from its __init__ (a dummy forward to size layers)
    if is_per_call_function(ctx, scope) and not outside_its_steps(ctx, scope, node):
        return False
    if not any(n.__class__ in (ast.For, ast.AsyncFor) or n.__class__ is ast.While and not _reshape_loop(n)
               for n in ctx.walk_body(scope.body)):
        return False
    return not (scope.__class__ is not ast.Lambda and (called_per_call(ctx, scope) or called_per_item(ctx, scope)
                                                       or _forward_calls_elsewhere(ctx, scope)))


def outside_its_steps(ctx: Context, func: AST, node: AST) -> bool:
    """``node`` is outside every loop of a function (not forward-like) that runs its training
    steps in loops of its own (``def train(self):`` ... ``for epoch in ...:`` ... ``loss.backward()``):
    it runs once per call of that function, before or after its loop."""
    if func.__class__ is ast.Lambda or _forward_like(ctx, func) or ctx.enclosing_loops(node):
        return False
    steps = [c for c in training_calls(ctx) if ctx.scope_of(c) is func]
    return bool(steps) and all(ctx.enclosing_loops(c) for c in steps)


def _forward_calls_elsewhere(ctx: Context, func: AST) -> bool:
    """A module-level function (a loss with a loop over the batch's nodes) that a ``forward`` of
    another module of the project calls: it runs every step there."""
    if ctx.parent(func) is not ctx.tree or not ctx.project.files:
        return False
    for where, call in [*project_calls(ctx, func.name), *star_calls(ctx, func.name)]:
        caller = where.function_of(call)
        if caller is not None and caller.__class__ is not ast.Lambda and _named_per_call(caller.name) \
                and not runs_once(where, call, 0):
            return True
    return False


def _reshape_loop(loop: ast.While) -> bool:
    """``while len(res.shape) < len(shape): res = res[..., None]``: a loop over dimensions, not work."""
    return any(n.__class__ is ast.Attribute and n.attr in ("shape", "ndim") or n.__class__ is ast.Call
               and n.func.__class__ is ast.Attribute and n.func.attr == "dim" for n in ast.walk(loop.test))


_EPOCH_ITERS = frozenset({"range", "trange"})
_ITER_WRAPPERS = frozenset({"enumerate", "tqdm", "zip"})


def called_per_item(ctx: Context, func: AST) -> bool:
    """A function of this file called inside a loop over batches or items - a loop that runs a
    training step, or iterates over something other than ``range(...)`` (``for x, y in
    test_loader:``, ``for path in paths:``): its own inner loop (a PGD attack's steps) is per
    call, and what it allocates before that loop is made for every batch. A call in an epoch
    loop (``for epoch in range(n):``) does not count."""
    hot = None
    for call in ctx.calls_named(func.name):
        loops = ctx.enclosing_loops(call)
        if not loops or local_function(ctx, call) is not func or ctx.function_of(call) is func:
            continue
        if hot is None:
            hot = hot_loops(ctx)
        if _pass_iterable(ctx, call, hot):
            continue  # for x in batch_iter(X): made once per pass over the batches, not per batch
        if any(id(loop) in hot for loop in loops):
            return True
        loop = next((loop for loop in loops if not settings_loop(ctx, loop)), None)  # for k in args.nb_knn: per setting
        if loop is None or loop.__class__ is not ast.For:
            continue
        it = loop.iter
        while it.__class__ is ast.Call and last_name(it.func) in _ITER_WRAPPERS and it.args:
            it = it.args[0]
        if not (it.__class__ is ast.Call and last_name(it.func) in _EPOCH_ITERS):
            return True
    return False


def _pass_iterable(ctx: Context, call: ast.Call, hot: set[int]) -> bool:
    """``call`` is what a ``for`` loop iterates (through ``enumerate``/``tqdm``): it runs once per
    pass - where that loop runs the training steps itself, or is an evaluation under a modulo test
    (``if itr % args.val_freq == 0:``)."""
    node, parent = call, ctx.parent(call)
    while parent.__class__ is ast.Call and last_name(parent.func) in _ITER_WRAPPERS and node in parent.args:
        node, parent = parent, ctx.parent(parent)
    if parent.__class__ not in (ast.For, ast.AsyncFor, ast.comprehension) or parent.iter is not node:
        return False  # (the first iterable of a comprehension, too: sum(f(x) for x in batches(X)))
    if any(modulo_test(ctx, i.test) for i, body in ctx.enclosing_ifs(call) if body):
        return True
    # for xb in loader: for x in chunks(xb): per batch of the outer loop
    return id(parent) in hot and all(loop.__class__ is ast.While or _epoch_iter(loop.iter) for loop in ctx.enclosing_loops(parent))


def _epoch_iter(it: AST) -> bool:
    """``range(n)``, ``tqdm(range(n))``: an epoch count, not data."""
    while it.__class__ is ast.Call and last_name(it.func) in _ITER_WRAPPERS and it.args:
        it = it.args[0]
    return it.__class__ is ast.Call and last_name(it.func) in _EPOCH_ITERS


def called_per_call(ctx: Context, func: AST, depth: int = 2, skip_samplers: bool = False) -> bool:
    """A function of this file that a per-call function (a ``forward``) calls, directly or
    through ``depth`` helpers: its loop is part of the computation (``farthest_point_sample``'s
    loop over the points to pick), so what it allocates before the loop is made every call.
    ``skip_samplers``: calls from ``__init__``-like set-up (``build_*``, ``make_*``...), and
    outside the loops of a ``generate()`` no step calls, do not count."""
    for call in ctx.calls_named(func.name):
        if local_function(ctx, call) is not func:
            continue
        caller = ctx.function_of(call)
        if caller is None or caller is func:
            continue
        if skip_samplers and caller.__class__ is not ast.Lambda and (
                caller.name in ONCE_NAMES or caller.name.startswith(ONCE_PREFIXES)
                or not ctx.enclosing_loops(call) and sampler_off_step(ctx, caller)):
            continue  # self.table = make_table(...) in __init__; hidden = self.init_hidden() once per generate()
        if _forward_like(ctx, caller) or (depth > 0 and called_per_call(ctx, caller, depth - 1)):
            return True
    return False


def _forward_like(ctx: Context, func: AST) -> bool:
    """Part of a model's computation: ``forward``-like by name, or a method of an ``nn.Module``
    class (a training function that calls a helper once per epoch is not)."""
    if func.__class__ is ast.Lambda or _named_per_call(func.name):
        return True
    klass = ctx.parent(func)
    return klass.__class__ is ast.ClassDef and not _hook_or_eval(func.name) and module_class(ctx, klass)


_HOOK = lazy_compile(r"^_*(begin|end|start|finish|before|after|on)_(task|epoch|train|training|experience|stage)")


def _hook_or_eval(name: str) -> bool:
    """A model's once-per-task or once-per-epoch hook (``begin_task``, ``end_task``, ``end_epoch``)
    or its evaluation method (``evaluate_bias``): not part of every step's computation."""
    return bool(_HOOK.match(name)) or name in ONCE_NAMES or name.startswith(ONCE_PREFIXES) or is_eval_name(name)


def _named_per_call(name: str) -> bool:
    low = name.lower()
    return "forward" in low or low in ("__call__", "step") or low.endswith("_step")


def _called_at_setup(ctx: Context, func: AST, depth: int) -> bool:
    """Every call of this helper - in the file (dead code aside) and in the modules importing it -
    is made at set-up (:func:`runs_once`) or by an evaluation function outside its loops
    (``_dummy_forward`` from ``__init__``; an evaluator's ``eval()`` calling ``_calculate_mrr``;
    ``range_tensor(n)`` that agents call in their ``__init__``; a loss factory the training
    function calls before its epoch loop)."""
    sites = [(ctx, c) for c in ctx.calls_named(func.name) if local_function(ctx, c) is func and not dead_code(ctx, c)]
    if not all(_set_up_site(where, call, func, depth) for where, call in sites):
        return False
    if ctx.parent(func) is ctx.tree and ctx.project.files:
        # the modules importing it count too (a forward pass there is not set-up because this file
        # only calls it in its own ``__main__`` smoke test; an agent's __init__ there is)
        if _called_in_a_loop(ctx, func.name):
            return False  # a text test first: no module is parsed to learn that a loop calls it
        remote = list(project_calls(ctx, func.name))
        if not all(_set_up_site(where, call, func, depth) for where, call in remote):
            return False
        sites += remote
    return bool(sites)


def _set_up_site(where: Context, call: ast.Call, func: AST, depth: int) -> bool:
    caller = where.function_of(call)
    if caller is func:
        return False
    evaluating = caller is not None and is_eval_name(caller.name) and not where.enclosing_loops(call)
    return evaluating or runs_once(where, call, depth - 1)


def _called_in_a_loop(ctx: Context, name: str) -> bool:
    """Some other file of the project calls ``name(`` on a line inside a ``for``/``while`` block of
    its function (read from the indentation, not parsed)."""
    needle = name + "("
    for path, text in ctx.project.files:
        if path == ctx.path or needle not in text:
            continue
        lines = text.splitlines()
        for i, line in enumerate(lines):
            at = line.find(needle)
            if at < 0 or at and (line[at - 1].isalnum() or line[at - 1] == "_"):
                continue
            indent = len(line) - len(line.lstrip())
            for prev in reversed(lines[:i]):
                stripped = prev.lstrip()
                width = len(prev) - len(stripped)
                if not stripped or stripped.startswith("#") or width >= indent:
                    continue
                if stripped.startswith(("for ", "while ", "async for ")):
                    return True
                if stripped.startswith(("def ", "async def ", "class ")):
                    break
                indent = width
    return False


_NAN_CHECKS = frozenset({"isnan", "isinf", "isfinite"})


def _recovery_path(ctx: Context, node: AST) -> bool:
    """Under ``if torch.isnan(k).any():`` (or ``isinf``): a fallback taken on a rare failure."""
    for if_node, in_body in ctx.enclosing_ifs(node):
        if in_body and any(n.__class__ is ast.Call and last_name(n.func) in _NAN_CHECKS for n in ast.walk(if_node.test)):
            return True
    return False


def _built_per_call(ctx: Context, init: AST) -> bool:
    """``__init__`` of a plain helper class (not an ``nn.Module``) that the file builds inside a
    per-call function (``ProbMask(B, H, ...)`` in an attention ``forward``), or that the modules
    importing it do: it runs every forward."""
    klass = ctx.parent(init)
    if klass.__class__ is not ast.ClassDef or any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)):
        return False
    sites = [(ctx, call) for call in ctx.calls_named(klass.name)]
    if ctx.parent(klass) is ctx.tree:
        sites += list(project_calls(ctx, klass.name))
    for where, call in sites:
        func = where.function_of(call)
        if func is not None and func is not init and not (func.__class__ is not ast.Lambda and _hook_or_eval(func.name)) \
                and is_per_call_function(where, func) and not runs_once(where, call, 1) \
                and (where.enclosing_loops(call) or _forward_like(where, func)):
            return True  # not a training function building it once before its loop
    return False


def forward_path_function(ctx: Context, node: AST) -> AST | None:
    """The function around ``node`` when it runs on every forward pass: a per-call function
    (:func:`is_per_call_function`, e.g. a module's ``forward``) or a helper a forward pass calls
    (:func:`called_per_call`); None otherwise (set-up, evaluation, module level)."""
    func = ctx.function_of(node)
    if func is None or func.name in ONCE_NAMES or func.name.startswith(ONCE_PREFIXES):
        return None
    key = ("sem:forward-path", id(func))
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = is_per_call_function(ctx, func) or called_per_call(ctx, func)
    return func if found else None


# a model's generation methods: called to draw samples for a figure or a demo, not in the step
_SAMPLER_NAMES = frozenset({"sample", "generate", "infer", "inference", "synthesize", "synthesise"})


def sampler_off_step(ctx: Context, func: AST) -> bool:
    """A model's ``sample()``/``generate()``-like method (not ``forward``) that no training step
    of the project calls - no call of it sits in a training loop, a step function, a forward pass
    or a ``*_step`` method -: it runs when someone asks for samples (once per validation epoch),
    so what it allocates is made once per request, not per batch."""
    if func.__class__ is ast.Lambda or ctx.parent(func).__class__ is not ast.ClassDef:
        return False
    name = func.name.lstrip("_")
    if not (name in _SAMPLER_NAMES or name.startswith(("sample_", "generate_"))) or _named_per_call(name):
        return False
    if helper_of_its_class(ctx, func, lambda n: n.lstrip("_").startswith(("sample", "generate", "infer", "synthes"))
                           or n in ONCE_NAMES):
        return False  # self._sample_exploration_noise(action) in policy_with_noise(): per call of that method
    key = ("sem:sampler-off-step", name)
    found = ctx.project.answers.get(key)
    if found is None:
        texts = [(p, t) for p, t in ctx.project.files if f".{func.name}(" in t] or [(ctx.path, ctx.source)]
        found = len(texts) <= MAX_CALLER_FILES and not any(
            _calls_in_step(ctx if p == ctx.path else parsed_file(ctx.project, p, t), func.name) for p, t in texts)
        ctx.project.answers[key] = found
    return found


def _called_in_step(ctx: Context, name: str) -> bool:
    """Some call of ``name`` - in this file or another module of the project - runs every training
    step: in a training loop, or in a function that runs one step per call (``def train(line):``
    with its backward pass and optimizer step outside any loop of its own); this file's own calls
    however many modules name it (``self.init_hidden(n)`` in a policy's ``learn()``)."""
    if any(hot_region_of(ctx, c) is not None for c in ctx.calls_named(name)):
        return True
    key = ("sem:called-in-step", name)
    answers = ctx.project.answers if ctx.project.files else ctx._cache  # a file alone: its own answer
    found = answers.get(key)
    if found is None:
        texts = [(p, t) for p, t in ctx.project.files if f"{name}(" in t] or [(ctx.path, ctx.source)]
        found = len(texts) <= MAX_CALLER_FILES and any(
            hot_region_of(where, call) is not None
            for where in (ctx if p == ctx.path else parsed_file(ctx.project, p, t) for p, t in texts) if where is not None
            for call in where.calls_named(name))
        answers[key] = found
    return found


def _calls_in_step(where: Context | None, name: str) -> bool:
    if where is None:
        return True  # unreadable: assume the worst
    for call in where.calls_named(name):
        if hot_region_of(where, call) is not None:
            return True
        caller = where.function_of(call)
        if caller is not None and (_forward_like(where, caller) or any(where.scope_of(c) is caller for c in training_calls(where))):
            return True
    return False


def made_once_per_request(ctx: Context, call: AST) -> bool:
    """Outside the loops of a model's ``sample()``/``generate()`` method that no training step
    calls (:func:`sampler_off_step`): one allocation per request for samples (TW205)."""
    func = ctx.function_of(call)
    return func is not None and not ctx.enclosing_loops(call) and sampler_off_step(ctx, func)
