"""Branches of an ``if`` that no run of the project takes (for :mod:`.neverruns`), found where the
test reads a value every run fixes:

* a **constant test**: ``if False:`` (or ``if 0:``) around a call switched off by hand, the ``else``
  of ``if True:``;
* a **local flag bound once to a constant**: ``parallel = False`` and, later in the same function,
  ``if parallel:`` - nothing else binds the name (no second assignment, no loop, no ``global``);
  also a **switch a script sets by hand** (:mod:`.constflow`): ``flag = 0`` right before ``if flag:``
  at module level, rebound before the next block, and names computed from such constants
  (``ngpu = 0``; ``parallel = ngpu > 1``; ``if parallel and torch.cuda.device_count() > 1:``);
* an **option of a class that no construction selects** (:mod:`.unselected`): ``if is_batchnorm:``
  or ``if self.kind == 'margin':`` where every construction of the class in the project passes, or
  leaves at its default, a constant that fails the test - also the ``else`` of a test every
  construction passes;
* an **option nothing in the project sets** (:mod:`.unsetoptions`): ``if getattr(self.config,
  "gradient_checkpointing", False) and self.training:`` where no file, config or script names the
  option but in such reads;
* a **parameter of a function that no call passes**: ``def loss(self, pred, label, type='softmax')``
  with ``if type == 'margin':``, where every call of that name in the project (``model.loss(ypred,
  label)``) leaves it at its default or passes a constant that fails the test. Only when the name is
  called and never used otherwise (no reference handed on, no ``*args``), and not for a public
  function of an installable package or one in ``__all__`` (its callers are outside the project).

Tests understood: the value itself, ``not``, ``==``/``!=`` a constant, ``in`` a tuple of
constants, and ``'c' in value``. Only the ``if`` statements around a finding are judged.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.callvalues import UNKNOWN, parameter_values
from torchwise.lint.semantics.constflow import UNKNOWN as FOLD_UNKNOWN, folded_test
from torchwise.lint.semantics.unselected import _UNKNOWN, branch_values
from torchwise.lint.semantics.unsetoptions import unset_option

_CANDIDATE = (ast.Name, ast.Attribute, ast.Compare, ast.UnaryOp, ast.Constant, ast.BoolOp, ast.Call)


def in_unrun_branch(ctx: Context, line: int) -> bool:
    """Line ``line`` lies in a branch of an ``if`` that never runs (module doc). Only the ``if``
    statements around the line are judged, each once per file."""
    cache = ctx._cache.get("unrun:ifs")
    if cache is None:
        cache = ctx._cache["unrun:ifs"] = {}
    for node in ctx.nodes.get(ast.If, ()):
        if not node.lineno < line <= (node.end_lineno or node.lineno) or node.test.__class__ not in _CANDIDATE:
            continue
        in_body = node.body[0].lineno <= line <= (node.body[-1].end_lineno or node.body[-1].lineno)
        in_else = bool(node.orelse) and node.orelse[0].lineno <= line <= (node.orelse[-1].end_lineno or node.orelse[-1].lineno)
        if not (in_body or in_else):
            continue
        outcome = cache.get(id(node), 0)
        if outcome == 0:
            outcome = cache[id(node)] = _outcome(ctx, node)
        if outcome is (not in_body):
            return True
    return False


def _outcome(ctx: Context, node: ast.If) -> bool | None:
    """True / False when every run gives the test that value; None when it may vary."""
    if node.test.__class__ is ast.Constant:  # `if False:` around code switched off by hand
        return bool(node.test.value) if node.test.value in (True, False, None, 0, 1) else None
    folded = folded_test(ctx, node.test)  # `flag = 0` ... `if flag:`; `ngpu = 0` ... `if ngpu > 1 and ...:`
    if folded is not FOLD_UNKNOWN:
        return folded
    if node.test.__class__ is ast.Call or node.test.__class__ is ast.BoolOp:  # `getattr(config, "opt", False) and self.training`
        parts = node.test.values if node.test.__class__ is ast.BoolOp and node.test.op.__class__ is ast.And else (node.test,)
        return False if "getattr(" in ctx.source and any(unset_option(ctx, p) for p in parts) else None
    results = _local_constant(ctx, node)
    if results is None:
        results = branch_values(ctx, node)
    if results is None:
        results = _parameter_branch(ctx, node)
    if not results or any(r is _UNKNOWN or r is UNKNOWN for r in results):
        return None
    if all(r is True for r in results):
        return True
    if all(r is False for r in results):
        return False
    return None


def _local_constant(ctx: Context, node: ast.If) -> list | None:
    """``[value of the test]`` when it reads a local name bound once in its function to a
    constant (``parallel = False``), else None."""
    test = node.test
    negate = test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not
    inner = test.operand if negate else test
    if inner.__class__ is not ast.Name:
        return None
    func = ctx.function_of(node)
    if func is None:
        return None
    chain = ctx.bindings(func).get(inner.id)
    if not chain or len(chain) != 1:
        return None
    b = chain[0]
    if b.kind != "assign" or b.value.__class__ is not ast.Constant or b.value.value not in (True, False, None, 0, 1):
        return None
    if b.pos > (node.lineno, node.col_offset) or ctx.enclosing_loops(b.node) or any(
            n.__class__ in (ast.Global, ast.Nonlocal) and inner.id in n.names for n in ast.walk(func)):
        return None
    value = bool(b.value.value)
    return [(not value) if negate else value]


def _parameter_branch(ctx: Context, node: ast.If) -> list | None:
    """The test's value for each call of the enclosing function, when it tests one of the
    function's parameters that nothing rebinds before the test (:mod:`.callvalues`)."""
    func = ctx.function_of(node)
    if func is None or func.__class__ is not ast.FunctionDef or func.name == "__init__":
        return None
    found = _parse(node.test)
    if found is None:
        return None
    name, evaluate = found
    b = ctx.binding_at(name, node)
    if b is None or b.kind != "param" or ctx.function_of(b.node) is not func and b.node is not func:
        return None
    values = parameter_values(ctx, func, name)
    if values is None:
        return None
    return [UNKNOWN if v is UNKNOWN else evaluate(v) for v in values]


def _parse(test: ast.AST):
    """``(name, evaluate(value) -> bool or UNKNOWN)`` for a test of one plain name: the name,
    ``not name``, ``name ==``/``!= const``, ``name in (consts)``, ``'c' in name``."""
    negate = test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not
    inner = test.operand if negate else test
    if inner.__class__ is ast.Name:
        return inner.id, (lambda v: not v) if negate else bool
    if negate or inner.__class__ is not ast.Compare or len(inner.ops) != 1:
        return None
    op, left, right = inner.ops[0].__class__, inner.left, inner.comparators[0]
    if op in (ast.Eq, ast.NotEq) and left.__class__ is ast.Name and right.__class__ is ast.Constant:
        c = right.value
        return left.id, lambda v: (v == c) == (op is ast.Eq)
    if op is ast.In and left.__class__ is ast.Constant and isinstance(left.value, str) and right.__class__ is ast.Name:
        c = left.value
        return right.id, lambda v: c in v if isinstance(v, str) else UNKNOWN
    if op is ast.In and left.__class__ is ast.Name and right.__class__ in (ast.Tuple, ast.List, ast.Set) \
            and all(e.__class__ is ast.Constant for e in right.elts):
        cs = [e.value for e in right.elts]
        return left.id, lambda v: v in cs
    return None
