"""Host reads a host-only library needs (TW207, ruling R9): a value read off the device and handed,
through the names the function binds from it, to a function of a library that works only on the
host - a QP solver (``solve_qp(C, -p, A, b)``), a superpixel segmentation (``slic(img)``), a speech
quality score run in worker processes (``Parallel(n_jobs)(delayed(pesq)(...))``), also inside a
helper of the project - whose result the step then moves back to the device and trains with
(``torch.tensor(v).to(device)``, ``.type_as(x)``, ``.cuda()``, a helper that returns
``....to("cuda")``). Torch has no kernel for that work: the round trip is the algorithm's. Not
such a read: a round trip through NumPy, the standard library, OpenCV or PIL alone (work torch
could do on the device: ``to_one_hot(y.cpu(), n).to(y.device)`` stays flagged), a metric of a
metrics package, and a library result that is only logged or collected (nothing moves it back).
"""

from __future__ import annotations

import ast
import re
import sys

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.deadmethods import function_at
from torchwise.lint.semantics.hostreads import host_reader
from torchwise.lint.semantics.projectcode import project_modules
from torchwise.lint.semantics.projecthelpers import project_function

# roots that are no host-only library: torch and NumPy themselves, the standard library, image
# libraries whose work torch also does, loggers and progress bars, metric packages (logged values)
_NOT_LIBRARIES = frozenset({"torch", "torchvision", "torchaudio", "functorch", "numpy", "cv2", "PIL", "imageio", "skimage.io",
                            "tensorboard", "tensorboardX", "wandb", "visdom", "mlflow", "tqdm", "matplotlib", "neptune",
                            "comet_ml", "torchmetrics", "sklearn.metrics", "einops", "pandas"}) | frozenset(sys.stdlib_module_names)
_READS = frozenset({"cpu", "numpy", "tolist"})  # (an .item() scalar goes to no such library)
_MOVES = frozenset({"cuda", "type_as", "to"})


def library_round_trip(ctx: Context, node: AST) -> bool:
    """Is ``node`` - a host read (a ``.cpu()``/``.numpy()`` chain) or a call of a project helper that
    reads its arguments on the host - the first half of a round trip through a host-only library?"""
    if node.__class__ is not ast.Call or "import" not in ctx.source:
        return False
    key = ("sem:host-library", id(node))
    if key not in ctx._cache:
        ctx._cache[key] = _round_trip(ctx, node)
    return ctx._cache[key]


def _round_trip(ctx: Context, node: ast.Call) -> bool:
    func = ctx.function_of(node)
    if func is None:
        return False
    if getattr(node.func, "attr", None) in _READS:
        return _flows(ctx, func, node, False)
    found = project_function(ctx, node) or _reader_at(ctx, node)  # a helper whose every host read goes to such a library
    if found is None:
        return False
    where, helper = found
    moved = _moved_result(ctx, node)
    calls = [c for c in where.walk_body(helper.body) if c.__class__ is ast.Call and not c.args]
    if any(getattr(c.func, "attr", None) == "item" for c in calls):
        return False  # it also reads a scalar (logged): the call still waits for that
    reads = [c for c in calls if getattr(c.func, "attr", None) in _READS]
    return bool(reads) and all(_flows(where, helper, r, moved) for r in reads)


def _reader_at(ctx: Context, call: ast.Call) -> tuple[Context, AST] | None:
    """The helper of another module whose host read :func:`host_reader` found (``... at path:line``)."""
    said = host_reader(ctx, call) or ""
    path, _, line = said.rpartition(" at ")[2].rpartition(":")
    text = next((t for p, t in ctx.project.files if p == path), None) if line.isdigit() else None
    other = parsed_file(ctx.project, path, text) if text is not None and _imports_library(ctx, path, text) else None
    func = function_at(other, int(line)) if other is not None else None
    return (other, func) if func is not None else None


_IMPORT = lazy_compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w.]+))", re.M)


def _imports_library(ctx: Context, path: str, text: str) -> bool:
    """Does the file import a host-only library at all (a text test, before parsing it)?"""
    key = ("sem:host-library-imports", path)
    found = ctx.project.answers.get(key)
    if found is None:
        own = project_modules(ctx.project)
        found = ctx.project.answers[key] = any(_host_only(m) and m.split(".", 1)[0] not in own
                                              for m in (a or b for a, b in _IMPORT.findall(text)))
    return found


def _moved_result(ctx: Context, call: AST) -> bool:
    """``run_slic(img).type_as(img)``, ``helper(x).to(device)``: the call's result is moved to the device."""
    parent = ctx.parent(call)
    while parent.__class__ is ast.Attribute and ctx.parent(parent).__class__ is ast.Call:
        if parent.attr in _MOVES and _a_move(ctx, ctx.parent(parent)):
            return True
        call = ctx.parent(parent)
        parent = ctx.parent(call)
    return False


def _a_move(ctx: Context, call: ast.Call) -> bool:
    name = call.func.attr
    if name != "to":
        return True
    values = [*call.args, *(k.value for k in call.keywords)]
    return bool(values) and not any((ctx.qualname(v) or "").startswith("torch.") and "device" not in (ctx.qualname(v) or "")
                                    or v.__class__ is ast.Constant and v.value == "cpu" for v in values)


def _names(expr: AST | None) -> set[str]:
    return {n.id for n in ast.walk(expr) if n.__class__ is ast.Name} if expr is not None else set()


def _targets(stmt: AST) -> set[str]:
    if stmt.__class__ is ast.Assign:
        return set().union(*(_names(t) for t in stmt.targets))
    if stmt.__class__ in (ast.AugAssign, ast.AnnAssign, ast.For):
        return _names(stmt.target)
    return set()


def _flows(ctx: Context, func: AST, read: ast.Call, caller_moves: bool) -> bool:
    """From the statement of ``read`` on, through the names bound in ``func``: host copy -> a
    host-only library's call -> a move back to the device (or a ``return`` of a call the caller moves)."""
    start = ctx.statement_of(read)
    host: set[str] = set()
    lib: set[str] = set()
    for s, used, calls, targets in _statements(ctx, func):
        if (s.lineno, s.col_offset) < (start.lineno, start.col_offset):
            continue
        first = s is start
        library = [k for c in calls if _fed(c, read if first else None, host) and (k := _library(ctx, c)) is not None]
        if any(moving for _, moving in library):
            return True  # a helper that hands the library's result back on the device
        if library or used & lib:
            if any(c.func.__class__ is ast.Attribute and c.func.attr in _MOVES and _a_move(ctx, c) and _names(c.func.value) & (lib | host)
                   for c in calls) or s.__class__ is ast.Return and caller_moves:
                return True
            lib |= targets | _filled(s)
        elif first or used & host:
            host |= targets
    return False


def _statements(ctx: Context, func: AST) -> list[tuple[AST, set[str], list[ast.Call], set[str]]]:
    """The simple statements of ``func`` in order (loops by their ``iter``), each with the names it
    uses, its calls and the names it binds - once per function."""
    key = ("sem:host-library-statements", id(func))
    found = ctx._cache.get(key)
    if found is None:
        found = []
        for s in ctx.walk_body(func.body):
            if s.__class__ not in _SIMPLE or ctx.function_of(s) is not func:
                continue
            part = s.iter if s.__class__ is ast.For else s.value
            if part is not None:
                found.append((s, _names(part), [c for c in ast.walk(part) if c.__class__ is ast.Call], _targets(s)))
        found.sort(key=lambda e: (e[0].lineno, e[0].col_offset))
        ctx._cache[key] = found
    return found


_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.For)


def _fed(call: ast.Call, read: AST | None, host: set[str]) -> bool:
    """Is ``call`` handed the read itself or a name bound from it?"""
    args = [*call.args, *(k.value for k in call.keywords)]
    return any(read is n for a in args for n in ast.walk(a)) if read is not None else bool(host & set().union(set(), *map(_names, args)))


def _filled(stmt: AST) -> set[str]:
    """``out.append(seg)``: the container filled with the value."""
    value = getattr(stmt, "value", None)
    if stmt.__class__ is ast.Expr and value.__class__ is ast.Call and value.func.__class__ is ast.Attribute \
            and value.func.attr in ("append", "extend") and value.func.value.__class__ is ast.Name:
        return {value.func.value.id}
    return set()


def _library(ctx: Context, call: ast.Call) -> tuple[ast.Call, bool] | None:
    """``(call, moves)`` when ``call`` runs a host-only library function (``moves`` False) or a
    project helper that calls one (``moves``: it returns its result moved to the device)."""
    key = ("sem:host-library-call", id(call))
    if key not in ctx._cache:
        ctx._cache[key] = _library_call(ctx, call)
    return ctx._cache[key]


def _library_call(ctx: Context, call: ast.Call) -> tuple[ast.Call, bool] | None:
    found = project_function(ctx, call)
    if found is None:
        q = _qualname(ctx, call.func)
        return (call, False) if q is not None and q.split(".", 1)[0] not in project_modules(ctx.project) and _host_only(q) else None
    where, helper = found
    key = ("sem:host-library-helper", id(helper))
    if key not in where._cache:
        inner = [c for c in where.walk_body(helper.body) if c.__class__ is ast.Call and (q2 := _qualname(where, c.func)) is not None
                 and q2.split(".", 1)[0] not in project_modules(where.project) and _host_only(q2)]
        moves = any(r.__class__ is ast.Return and any(c.__class__ is ast.Call and c.func.__class__ is ast.Attribute
                                                      and c.func.attr in _MOVES and _a_move(where, c) for c in ast.walk(r))
                    for r in where.walk_body(helper.body))
        where._cache[key] = (call, moves) if inner else None
    found_kind = where._cache[key]
    return None if found_kind is None else (call, found_kind[1])


def _qualname(ctx: Context, func: AST) -> str | None:
    """The dotted name of a callee, also of a method of an object a library call made
    (``fast_slic = Slic(n)`` ... ``fast_slic.iterate(img)``) or of a call of such an object."""
    if func.__class__ is ast.Call:  # Parallel(n_jobs=4)(delayed(score)(a, b) for ...): the object's call
        return _qualname(ctx, func.func)
    q = ctx.qualname(func)
    if q is not None or func.__class__ is not ast.Attribute or func.value.__class__ is not ast.Name:
        return q
    b = ctx.binding_at(func.value.id, func)
    value = b.value if b is not None and b.kind == "assign" else None
    inner = ctx.qualname(value.func) if value.__class__ is ast.Call else None
    return f"{inner}.{func.attr}" if inner is not None else None


def _host_only(q: str) -> bool:
    return not any(q == r or q.startswith(r + ".") for r in _NOT_LIBRARIES) and q.split(".", 1)[0] not in ("builtins", "np")
