"""What a function does on the host with the values it is given (TW207): the first read of a
value made from its arguments (``.item()``, ``.cpu()`` of a computed tensor, ``.data[0]``, an ``if``
on a reduction of one), found without the function's file (a project function is parsed on its
own), and the tests of a sink or an optional parameter that guard such reads (``if storer is not
None:``)."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, last_name
from torchwise.lint.semantics.branchgates import empty_skip, mark_gated
from torchwise.lint.semantics.devices import SYNC_METHODS
from torchwise.lint.semantics.shapevalues import without_metadata


def _derived(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names that carry (part of) the function's arguments: the parameters (``**kwargs`` too), and
    names assigned or looped over from them (``for name, value in loss_dict.items()``)."""
    args = func.args
    params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg))]]
    derived = {p for p in params if p not in ("self", "cls")}
    flows = []  # (names read, names bound) of each binding statement
    for node in ast.walk(func):
        cls = node.__class__
        if cls in (ast.Assign, ast.For, ast.comprehension, ast.AugAssign):
            source = node.iter if cls in (ast.For, ast.comprehension) else node.value
            targets = node.targets if cls is ast.Assign else [node.target]
            reads = {n.id for n in ast.walk(source) if n.__class__ is ast.Name}
            binds = {n for t in targets for n in _bound_names(t)}
            flows.append((reads, binds))
    for _ in range(3):  # a few passes reach names bound from names bound from parameters
        before = len(derived)
        for reads, binds in flows:
            if reads & derived:
                derived |= binds
        if len(derived) == before:
            break
    return derived


def _bound_names(target: AST) -> list[str]:
    """Names an assignment target binds (``a``, ``a, (b, c)``), not those it only reads
    (``self.totals[name] = ...`` binds neither ``self`` nor ``name``)."""
    if target.__class__ is ast.Name:
        return [target.id]
    if target.__class__ in (ast.Tuple, ast.List):
        return [n for e in target.elts for n in _bound_names(e)]
    if target.__class__ is ast.Starred:
        return _bound_names(target.value)
    return []


_MODEL_WORDS = ("model", "net", "module", "encoder", "decoder")
# reductions whose value an `if` test compares on the host (``if torch.min(y) < -1.``)
_REDUCTIONS = frozenset({"min", "max", "sum", "mean", "any", "all", "norm", "amax", "amin", "count_nonzero"})
_TEST_OPS = (ast.Lt, ast.Gt, ast.LtE, ast.GtE, ast.Eq, ast.NotEq)


def host_read_of_arguments(func: AST, live: Callable[[str], bool] | None = None) -> tuple[int, str] | None:
    """``(line, what)`` of the first host read in ``func`` of a value made from its arguments
    (not from ``self``): ``.item()``/``.tolist()``/``.numpy()`` on anything computed from them
    (``torch.eq(y_true, y_pred).sum().item()``), ``.cpu()`` on a computed tensor
    (``pred.eq(target).cpu()``), or an ``if`` that compares a reduction of one
    (``if torch.min(y) < -1.:``). ``func`` then reads what it is given on the host. Not a read
    under a test of a sink that a helper filters first (``storer = self._pre_call(is_train,
    storer)``; ``if storer is not None:``: the helper keeps it only at intervals), and with
    ``live``, not one under a test of a parameter (``if storer is not None:`` in ``def
    _kl_loss(mean, logvar, storer=None)``) for which ``live(name)`` says the call hands on nothing."""
    for line, what, guard in reads_of_arguments(func):
        if guard is None or live is None or live(guard):
            return line, what
    return None


def opens_step_text(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A method that opens a training step without finishing it: it zeroes gradients
    (``self.gen_optimizer.zero_grad()``), runs no backward pass of its own, and returns a loss (a
    name with "loss" in it, alone or in a tuple). Its reads are of what it computes for the step,
    reported where they are (semantics.stepopeners), not as reads of what its callers hand it."""
    zeroes = returns_loss = False
    for node in ast.walk(func):
        cls = node.__class__
        if cls is ast.Call and node.func.__class__ is ast.Attribute:
            if node.func.attr == "backward":
                return False
            zeroes = zeroes or node.func.attr == "zero_grad"
        elif cls is ast.Return and node.value is not None:
            values = node.value.elts if node.value.__class__ is ast.Tuple else [node.value]
            returns_loss = returns_loss or any(v.__class__ is ast.Name and "loss" in v.id.lower() for v in values)
    return zeroes and returns_loss


def reads_of_arguments(func: AST) -> list[tuple[int, str, str | None]]:
    """Every such read, with the parameter whose test guards it (or None)."""
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return []
    candidates = []  # the reads and tests, first: most functions have none, and then need no data flow
    for node in ast.walk(func):
        cls = node.__class__
        if cls is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in SYNC_METHODS:
            recv = node.func.value
            if not (node.func.attr == "cpu" and (recv.__class__ is ast.Name or node.args or _names_model(recv))):
                candidates.append(node)  # x.cpu() of a parameter may move a module; a computed tensor's .cpu() reads it
        elif cls in (ast.If, ast.While) and not empty_skip(node):
            candidates.append(node)  # (`if mask.sum() == 0: continue`: the algorithm's skip, ruling R9)
        elif cls is ast.Subscript and _legacy_read(node):
            candidates.append(node)  # losses[name].data[0]: the pre-0.4 .item()
    if not candidates or opens_step_text(func):
        return []  # (a method opening a step reads what it computes: reported where it is)
    derived = _derived(func)
    guards = _sink_guards(func, [n for n in candidates if n.__class__ is ast.If])
    out: list[tuple[int, str, str | None]] = []
    for node in candidates:
        guard = guards.get(id(node))
        if guard is False:
            continue  # under a sink a helper filters first: read at its intervals only
        if node.__class__ is ast.Call:
            if _mentions(without_metadata(node.func.value), derived):  # (not np.prod(m.size()).item(): host ints)
                out.append((node.lineno, f"calls .{node.func.attr}()", guard))
        elif node.__class__ is ast.Subscript:
            if _mentions(node.value, derived):
                out.append((node.lineno, "reads .data[0]", guard))
        elif _reduction_test(node.test, derived):
            out.append((node.lineno, "tests a tensor in an if", guard))
    return out


def _sink_guards(func: AST, ifs: list[ast.If]) -> dict[int, str | bool]:
    """The nodes under ``if x is not None:`` / ``if x:`` in ``func``, by id: the parameter ``x``
    when the function does not rebind it, ``False`` when it rebinds it from a call handed it
    (``storer = self._pre_call(is_train, storer)``: a filter), nothing otherwise; ``False`` too
    under a log interval of its own (``if self.n % self.every == 0:``)."""
    out: dict[int, str | bool] = {}
    for if_node in _log_intervals(ifs):  # if self.steps % self.every == 0: writer.add_scalar(..., loss.item())
        for stmt in if_node.body:
            for n in ast.walk(stmt):
                out[id(n)] = False
    tests = [n for n in ifs if _tested_name(n.test) is not None]
    if not tests:
        return out
    args = func.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} - {"self", "cls"}
    assigns = [n for n in ast.walk(func) if n.__class__ is ast.Assign and len(n.targets) == 1
               and n.targets[0].__class__ is ast.Name]
    for if_node in tests:
        name = _tested_name(if_node.test)
        # name -> rebound from a call handed it (True) or otherwise (False); not in the branch itself
        # (``if entropy is not None: entropy = 1.0 + torch.exp(-entropy)`` still tests the parameter)
        rebound: dict[str, bool] = {}
        for n in assigns:
            if n.targets[0].id == name and not if_node.lineno <= n.lineno <= (if_node.end_lineno or if_node.lineno):
                filtered = n.value.__class__ is ast.Call and any(
                    a.__class__ is ast.Name and a.id == name for a in [*n.value.args, *(k.value for k in n.value.keywords)])
                rebound[name] = rebound.get(name, True) and filtered
        verdict: str | bool | None = False if rebound.get(name) else (name if name in params and name not in rebound else None)
        if verdict is None:
            continue
        for stmt in if_node.body:
            for n in ast.walk(stmt):
                out.setdefault(id(n), verdict)
    return out


def _log_intervals(ifs: list[ast.If]) -> list[ast.If]:
    """The ``if`` tests with a modulo (``if self.n % self.every == 0:``) or of a mark the branch
    moves (semantics.branchgates) whose branch runs no backward pass: what it reads, it reads once
    per interval."""
    return [n for n in ifs if mark_gated(n) or any(m.__class__ is ast.BinOp and m.op.__class__ is ast.Mod for m in ast.walk(n.test))
            and not any(c.__class__ is ast.Call and c.func.__class__ is ast.Attribute and c.func.attr == "backward"
                        for stmt in n.body for c in ast.walk(stmt))]


def _tested_name(test: AST) -> str | None:
    """``x`` of ``if x is not None:`` or ``if x:``."""
    if test.__class__ is ast.Name:
        return test.id
    if test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.IsNot \
            and test.left.__class__ is ast.Name and test.comparators[0].__class__ is ast.Constant \
            and test.comparators[0].value is None:
        return test.left.id
    return None


def _legacy_read(node: ast.Subscript) -> bool:
    """``x.data[0]``: the pre-0.4 spelling of ``x.item()``."""
    value, index = node.value, node.slice
    return value.__class__ is ast.Attribute and value.attr == "data" and index.__class__ is ast.Constant and index.value == 0


def _mentions(expr: AST, names: set[str]) -> bool:
    return any(n.__class__ is ast.Name and n.id in names for n in ast.walk(expr))


def _names_model(expr: AST) -> bool:
    name = (last_name(expr) or "").lower()
    return any(w in name for w in _MODEL_WORDS)


def _reduction_test(test: AST, derived: set[str]) -> bool:
    """``torch.min(y) < -1.``, ``y.abs().max() > 1``: a comparison of a reduction of an argument."""
    for node in ast.walk(test):
        if node.__class__ is not ast.Compare or not all(op.__class__ in _TEST_OPS for op in node.ops):
            continue
        for side in [node.left, *node.comparators]:
            func = side.func if side.__class__ is ast.Call else None
            if func.__class__ is not ast.Attribute or func.attr not in _REDUCTIONS:
                continue
            if func.value.__class__ is ast.Name and func.value.id in ("torch", "th"):
                subject = side.args[0] if side.args else None  # torch.min(y)
            else:
                subject = func.value  # y.max(), y.abs().max()
            if subject is not None and _mentions(subject, derived):
                return True
    return False
