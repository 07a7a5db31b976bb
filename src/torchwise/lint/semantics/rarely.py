"""Branches of a training loop that do not run every step although no modulo test guards them
(TW207): the pre-0.4 arm of a torch version test (dead on any PyTorch a user runs), a log
written when some seconds have passed (``if now - last_log > args.log_freq_time:``), and the
branch for the one batch that holds a chosen item (``if attn_example in ids:``), a branch gated by
a mark it moves (``if t_env - self.log_stats_t >= interval: ...; self.log_stats_t = t_env``:
:mod:`.branchgates`), a branch that
ends the run (``sys.exit(1)``, ``raise``, ``break`` as its last statement), a debugging
switch (``if self.debug_mode:``), an opt-in switch for a picture (:mod:`.optinpictures`), the first passes of the loop (``if epoch == 0:``,
``if batch_idx < 5:``: :mod:`.countguards`), a sink or flag handed on only at intervals and a value cached
on the first call (:mod:`.gatedreads`)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.branchgates import empty_skip, mark_gated
from torchwise.lint.semantics.countguards import first_passes
from torchwise.lint.semantics.gatedreads import first_call_cache, interval_gated_test
from torchwise.lint.semantics.optinpictures import picture_switch
from torchwise.lint.semantics.steps import backward_calls, modulo_test
from torchwise.lint.semantics.unitintervals import every_step_interval

# clocks whose differences gate a time-based log
_CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "timeit.default_timer",
                     "datetime.datetime.now", "datetime.datetime.utcnow"})
_ORDER = (ast.Gt, ast.GtE, ast.Lt, ast.LtE)
# what a per-batch collection of item identities is called (``ids``, ``names``, ``sample_idx``), word by word
_ID_WORDS = frozenset({"id", "ids", "name", "names", "idx", "indices", "index", "path", "paths", "file", "files",
                       "fname", "fnames", "filenames", "keys", "uids", "utt", "utts"})


def runs_rarely(ctx: Context, node: AST) -> bool:
    """Is ``node`` in such a branch of its function?"""
    for if_node, in_body in ctx.enclosing_ifs(node):
        if legacy_arm(ctx, if_node, in_body):
            return True
        if in_body and (_time_gated(ctx, if_node.test) or _one_item_test(ctx, if_node.test)
                        or if_node.__class__ is ast.If and _ends_run(if_node.body) or _debug_flag(if_node.test)
                        or picture_switch(ctx, if_node)
                        or interval_gated_test(ctx, if_node.test) or mark_gated(if_node) and not _updates(ctx, if_node)
                        or if_node.__class__ is ast.If and first_passes(ctx, if_node, node) and not _updates(ctx, if_node)):
            return True
    return first_call_cache(ctx, node)


def logged_periodically(ctx: Context, node: AST) -> bool:
    """Under a modulo test (``if step % 100 == 0:``: once per interval) that is not an update of
    its own: a periodic branch that runs a backward pass (``if self.total_it % self.policy_freq ==
    0:`` around the actor's loss, backward and step; ``if i % n_critic == 0:`` around the
    generator's) is the update of that network, and what it reads, it reads on every update."""
    for if_node, _ in ctx.enclosing_ifs(node):
        if modulo_test(ctx, if_node.test) and not _updates(ctx, if_node) and not every_step_interval(ctx, if_node.test):
            return True
    return False


def _updates(ctx: Context, if_node: AST) -> bool:
    if if_node.__class__ is not ast.If:
        return False
    first, last = if_node.body[0].lineno, if_node.body[-1].end_lineno or if_node.body[-1].lineno
    return any(first <= c.lineno <= last and ctx.contains(if_node, c) for c in backward_calls(ctx))


def _debug_flag(test: AST) -> bool:
    """``if self.debug_mode:``, ``if args.debug:``: a debugging switch, off in a normal run; also
    as a part of ``and`` (``if args.debug_log_ratio and i == 0:``: the branch needs the switch)."""
    if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And:
        return any(_debug_flag(part) for part in test.values)
    if test.__class__ is ast.Name:
        return "debug" in test.id.lower()
    return test.__class__ is ast.Attribute and "debug" in test.attr.lower()


_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})


def _ends_run(body: list[AST]) -> bool:
    """The branch ends the run or its loop (``print(loss_dict); sys.exit(1)``, ``raise``,
    ``break``): what it reads before, it reads once, when training stops."""
    last = body[-1] if body else None
    if last.__class__ in (ast.Raise, ast.Break):
        return True
    if last.__class__ is not ast.Expr or last.value.__class__ is not ast.Call:
        return False
    func = last.value.func
    name = func.id if func.__class__ is ast.Name else (
        f"{func.value.id}.{func.attr}" if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name else None)
    return name in _EXITS


def legacy_arm(ctx: Context, if_node: AST, in_body: bool) -> bool:
    """The arm of a test of torch's version (``torch.__version__``, a name bound from it,
    ``TORCH_VERSION``) that reads with ``.data[0]``, the pre-0.4 spelling of ``.item()``: on
    PyTorch 0.4 and later the other arm runs, so this one never does."""
    if not _version_test(ctx, if_node.test):
        return False
    arm = if_node.body if in_body else if_node.orelse
    nodes = arm if isinstance(arm, list) else [arm]
    return any(n.__class__ is ast.Subscript and n.value.__class__ is ast.Attribute and n.value.attr == "data"
               and n.slice.__class__ is ast.Constant and n.slice.value == 0
               for stmt in nodes for n in ast.walk(stmt))


def _version_test(ctx: Context, test: AST) -> bool:
    for n in ast.walk(test):
        if n.__class__ is ast.Attribute and n.attr == "__version__":
            return True
        if n.__class__ is ast.Name:
            if "torch_ver" in n.id.lower():
                return True
            b = ctx.binding_at(n.id, test)
            if b is not None and b.value is not None and b.kind == "assign" and any(
                    m.__class__ is ast.Attribute and m.attr == "__version__" for m in ast.walk(b.value)):
                return True
    return False


def _time_gated(ctx: Context, test: AST) -> bool:
    """A comparison of elapsed clock time with a bound: ``now - last_log > interval``."""
    for n in ast.walk(test):
        if n.__class__ is ast.Compare and len(n.ops) == 1 and n.ops[0].__class__ in _ORDER and any(
                _elapsed(ctx, side, test, 2) for side in (n.left, n.comparators[0])):
            return True
    return False


def _elapsed(ctx: Context, expr: AST, at: AST, depth: int) -> bool:
    """``expr`` is a clock reading or a difference of one (through names bound from them)."""
    cls = expr.__class__
    if cls is ast.BinOp and expr.op.__class__ is ast.Sub:
        return _clock(ctx, expr.left, at, depth) or _clock(ctx, expr.right, at, depth)
    if cls is ast.Name and depth > 0:
        b = ctx.binding_at(expr.id, at)
        return b is not None and b.kind == "assign" and b.value is not None and b.value.__class__ is ast.BinOp \
            and _elapsed(ctx, b.value, b.node, depth - 1)
    return False


def _clock(ctx: Context, expr: AST, at: AST, depth: int) -> bool:
    if expr.__class__ is ast.Call:
        return ctx.qualname(expr.func) in _CLOCKS
    if expr.__class__ is ast.Name and depth > 0:
        b = ctx.binding_at(expr.id, at)
        return b is not None and b.kind == "assign" and b.value is not None and _clock(ctx, b.value, b.node, depth - 1)
    return False


def _one_item_test(ctx: Context, test: AST) -> bool:
    """``item in ids``: a value fixed before the loop (a parameter, a name bound outside it)
    looked up among the identities of the batch the loop unpacked (``for x, y, ids in loader``):
    true for the one batch that holds it, about once per epoch."""
    if test.__class__ is not ast.Compare or len(test.ops) != 1 or test.ops[0].__class__ is not ast.In:
        return False
    item, pool = test.left, test.comparators[0]
    if item.__class__ is not ast.Name or pool.__class__ is not ast.Name or _ID_WORDS.isdisjoint(pool.id.lower().split("_")):
        return False
    loops = ctx.enclosing_loops(test)
    if not loops:
        return False
    loop = loops[-1]
    inside = lambda b: b is not None and loop.lineno <= b.pos[0] <= getattr(loop, "end_lineno", loop.lineno)  # noqa: E731
    return inside(ctx.binding_at(pool.id, test)) and not inside(ctx.binding_at(item.id, test))


_GUARDS = frozenset({"isnan", "isinf", "isfinite"})


def algorithm_stop(node: AST) -> bool:
    """``if torch.max(abs(h)) > 10: break``: a data-dependent stop of the algorithm's own loop (a
    convergence or early-stop test), which needs its value on the host; a NaN/inf guard that
    breaks is a check of the inputs all the same. Also the skip of an empty selection (``if
    mask_t.sum() == 0: continue``: semantics.branchgates)."""
    if empty_skip(node):
        return True
    if node.__class__ is not ast.If or not node.body or node.body[-1].__class__ is not ast.Break or node.orelse:
        return False
    return not any(n.__class__ is ast.Call and (n.func.attr if n.func.__class__ is ast.Attribute else getattr(n.func, "id", ""))
                   in _GUARDS for n in ast.walk(node.test))
