"""Branches of a training step that do not read every step although no modulo test guards them,
told from the syntax alone (TW207; also for project functions parsed on their own):

* a **mark the branch moves**: ``if t_env - self.log_stats_t >= self.args.learner_log_interval:
  ...; self.log_stats_t = t_env`` (the distance of a step counter from the step it last logged
  at), ``if step >= self.next_log: ...; self.next_log += every``: the branch runs once per
  interval, like ``if step % every == 0:`` - not when it runs a backward pass (an update every
  N environment steps is the update);
* a **skip of an empty selection** inside the step, in a loop over a ``range`` (time steps, the
  images of the batch): ``if mask_t.sum() == 0: continue``, ``if torch.sum(select) < 1: continue``
  - a data-dependent branch of the algorithm (ruling R9: nothing to compute on at this time step
  or image). Skipping a batch of the loader (``for data in loader: ... if data.train_mask.sum() ==
  0: continue``) is a check of the inputs every step and stays a read.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST

_ORDER = (ast.Gt, ast.GtE, ast.Lt, ast.LtE)


def mark_gated(if_node: AST) -> bool:
    """Is ``if_node`` an ``if`` whose test measures a counter against a mark its branch moves?"""
    if if_node.__class__ is not ast.If:
        return False
    test = if_node.test
    compares = test.values if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And else [test]
    for cmp in compares:
        if cmp.__class__ is not ast.Compare or len(cmp.ops) != 1 or cmp.ops[0].__class__ not in _ORDER:
            continue
        big, small = cmp.left, cmp.comparators[0]
        if cmp.ops[0].__class__ in (ast.Lt, ast.LtE):
            big, small = small, big
        if big.__class__ is ast.BinOp and big.op.__class__ in (ast.Div, ast.FloorDiv):
            big = big.left  # (episode - self.last_update) / self.interval >= 1.0
        if big.__class__ is ast.BinOp and big.op.__class__ is ast.Sub:
            found = _moved(if_node.body, big.right, big.left)  # t - last >= every; ... last = t
        else:
            found = _moved(if_node.body, small, None)  # step >= next_log; ... next_log += every
        if found:
            return not _runs_backward(if_node.body)
    return False


def _key(expr: AST) -> str | None:
    """``"self.log_stats_t"`` for a name or attribute chain (loaded or stored); None otherwise."""
    parts = []
    while expr.__class__ is ast.Attribute:
        parts.append(expr.attr)
        expr = expr.value
    return ".".join([expr.id, *reversed(parts)]) if expr.__class__ is ast.Name else None


def _moved(body: list[AST], mark: AST, counter: AST | None) -> bool:
    """The branch sets ``mark`` to ``counter`` (``self.log_stats_t = t_env``) or advances it
    (``self.next_log += every``, ``last = last + every``)."""
    key = _key(mark)
    if key is None:
        return False
    counter_key = ast.dump(counter) if counter is not None else None  # (a Load either way: `time.time()` too)
    for stmt in body:
        for n in ast.walk(stmt):
            if n.__class__ is ast.AugAssign and n.op.__class__ is ast.Add and _key(n.target) == key:
                return True
            if n.__class__ is ast.Assign and any(_key(t) == key for t in n.targets):
                value = n.value
                if counter_key is not None and ast.dump(value) == counter_key:
                    return True
                if value.__class__ is ast.BinOp and value.op.__class__ is ast.Add and key in (
                        _key(value.left), _key(value.right)):
                    return True
    return False


def _runs_backward(body: list[AST]) -> bool:
    return any(n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr == "backward"
               for stmt in body for n in ast.walk(stmt))


_COUNTS = frozenset({"sum", "numel", "count_nonzero", "any"})


def empty_skip(node: AST) -> bool:
    """``if mask.sum() == 0: continue`` (also ``< 1``, ``<= 0``, ``torch.sum(m) < 1``, ``not
    m.any()``, ``len(idx) == 0``): a branch that only skips the pass of a loop over a ``range``
    when the selection is empty (the tree's parent links tell the loop; without them, no)."""
    if node.__class__ is not ast.If or len(node.body) != 1 or node.body[0].__class__ is not ast.Continue or node.orelse:
        return False
    if not _in_range_loop(node):
        return False
    test = node.test
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        return _count(test.operand, ("any",))
    if test.__class__ is not ast.Compare or len(test.ops) != 1:
        return False
    bound = test.comparators[0]
    if bound.__class__ is not ast.Constant or bound.value.__class__ not in (int, float):
        return False
    op = test.ops[0].__class__
    empty = op in (ast.Eq, ast.LtE) and bound.value == 0 or op is ast.Lt and bound.value == 1
    return empty and _count(test.left, tuple(_COUNTS - {"any"}) + ("len",))


_RANGES = frozenset({"range", "reversed", "enumerate", "trange"})


def _in_range_loop(node: AST) -> bool:
    """The innermost loop around ``node`` is ``for t in range(n)`` (also ``reversed(range(n))``),
    not over a loader (``range(len(loader))``)."""
    loop = getattr(node, "_tw_parent", None)
    while loop is not None and loop.__class__ not in (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
        loop = getattr(loop, "_tw_parent", None)
    it = getattr(loop, "iter", None) if loop.__class__ is ast.For else None
    while it.__class__ is ast.Call and it.func.__class__ is ast.Name and it.func.id in _RANGES:
        if it.func.id in ("range", "trange"):
            return not any("loader" in ast.dump(a).lower() for a in it.args)
        it = it.args[0] if it.args else None
    return False


def _count(expr: AST, names: tuple[str, ...]) -> bool:
    """``m.sum()``, ``torch.sum(m)``, ``m.numel()``, ``len(idx)``: a count of what a selection holds."""
    if expr.__class__ is not ast.Call:
        return False
    func = expr.func
    name = func.attr if func.__class__ is ast.Attribute else func.id if func.__class__ is ast.Name else None
    return name in names and (not expr.args or name == "len" or func.__class__ is ast.Attribute)
