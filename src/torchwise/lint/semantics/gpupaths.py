"""Code paths that a run without a GPU never takes, and files that choose between the CPU and
the GPU by testing their own device (TW403).

- A move in a ``try`` whose ``except`` carries on without it (``try: _, idx =
  torch.sort(scores.cuda())`` / ``except: _, idx = torch.sort(scores)``): the CPU run falls back.
- A move on the distributed path of a file whose distributed set-up pins each process to a GPU
  (``torch.cuda.set_device(rank)``): under ``if world_size > 1:`` / ``if args.distributed:``, or
  after ``if world_size == 1: return`` in the same function. A single-process CPU run never
  gets there, and the multi-process run is GPU-only by the file's own set-up.
- A file that tests the device it chose for the CPU (``if device.type != 'cpu':``,
  ``use_amp = device.type == "cuda"``): it means to run on both, so a bare ``.cuda()`` in it
  breaks the CPU run it offers - unless it asserts the device is no CPU (``assert
  self.get_device() != "cpu", "CPU not implemented"``): then it demands the GPU.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile

_DISTRIBUTED_WORDS = ("world_size", "distributed", "is_initialized", "ddp")
# the device the code chose, by name: `device`, `self.device`, `args.device`, `str(device)`
_CHOSEN = lazy_compile(r"^(?:str\()?(?:(?:self|args|opt|cfg|config|self\.args|self\.opt|self\.cfg)\.)?\w*device\w*(?:\.type)?\)?$")


def in_fallback_try(ctx: Context, node: AST) -> bool:
    """``node`` is in the body of a ``try`` with a handler that carries on (does not re-raise or exit)."""
    child = node
    for anc in ctx.ancestors(node):
        if anc.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef):
            return False
        if anc.__class__ is ast.Try and getattr(child, "_tw_field", "") == "body" and anc.handlers:
            return any(not any(s.__class__ is ast.Raise or _exits(s) for s in h.body) for h in anc.handlers)
        child = anc
    return False


def _exits(stmt: ast.stmt) -> bool:
    v = getattr(stmt, "value", None)
    return stmt.__class__ is ast.Expr and v.__class__ is ast.Call and (
        getattr(v.func, "attr", None) == "exit" or getattr(v.func, "id", None) == "exit")


def _distributed_test(ctx: Context, test: AST) -> bool | None:
    """True for a test that holds on the distributed path (``world_size > 1``, ``args.distributed``),
    False for one that holds off it (``world_size == 1``, ``not args.distributed``), None otherwise."""
    text = ctx.text(test)
    if not any(w in text for w in _DISTRIBUTED_WORDS):
        return None
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        inner = _distributed_test(ctx, test.operand)
        return None if inner is None else not inner
    if test.__class__ is ast.Compare and len(test.ops) == 1 and test.comparators[0].__class__ is ast.Constant:
        op, value = test.ops[0].__class__, test.comparators[0].value
        if value == 1 and op in (ast.Eq, ast.LtE) or value == 2 and op is ast.Lt:
            return False
        if value == 1 and op in (ast.Gt, ast.NotEq) or value == 2 and op is ast.GtE:
            return True
        return None
    return True if test.__class__ in (ast.Name, ast.Attribute, ast.Call) else None


def on_gpu_distributed_path(ctx: Context, node: AST) -> bool:
    """``node`` runs only on the distributed path, in a file whose distributed set-up pins a GPU
    to each process (``torch.cuda.set_device``)."""
    src = ctx.source
    if "set_device(" not in src or not any(w in src for w in _DISTRIBUTED_WORDS):
        return False
    for if_node, in_body in ctx.enclosing_ifs(node):
        if if_node.__class__ is ast.If and _distributed_test(ctx, if_node.test) is in_body:
            return True
    func = ctx.function_of(node)
    if func is None:
        return False
    for stmt in func.body:
        if stmt.lineno >= node.lineno:
            break
        if stmt.__class__ is ast.If and not stmt.orelse and len(stmt.body) == 1 and stmt.body[0].__class__ is ast.Return \
                and _distributed_test(ctx, stmt.test) is False:
            return True  # `if world_size == 1: return metrics`, then the distributed code
    return False


def tests_device_for_cpu(ctx: Context) -> bool:
    """The file compares the device it chose with ``"cpu"`` or ``"cuda"`` (``device.type !=
    'cpu'``, ``args.device == "cuda"``): it is written to run on either."""
    src = ctx.source
    if "device" not in src or not ("'cpu'" in src or '"cpu"' in src or "'cuda'" in src or '"cuda"' in src):
        return False
    if any(_demands_gpu(a.test) for a in ctx.nodes.get(ast.Assert, ())):
        return False  # `assert self.get_device() != "cpu", "CPU not implemented"`: it demands the GPU
    found = False
    for cmp in ctx.nodes.get(ast.Compare, ()):
        if len(cmp.ops) != 1 or cmp.ops[0].__class__ not in (ast.Eq, ast.NotEq):
            continue
        left, right = cmp.left, cmp.comparators[0]
        if left.__class__ is ast.Constant:
            left, right = right, left
        if right.__class__ is ast.Constant and right.value in ("cpu", "cuda") and _CHOSEN.match(ctx.text(left)):
            found = True
    return found


def _demands_gpu(test: ast.AST) -> bool:
    """An assert test ``x != "cpu"`` (the device of a model or tensor is no CPU)."""
    return test.__class__ is ast.Compare and len(test.ops) == 1 and test.ops[0].__class__ is ast.NotEq and any(
        c.__class__ is ast.Constant and c.value == "cpu" for c in (test.left, test.comparators[0]))


__all__ = ["in_fallback_try", "on_gpu_distributed_path", "tests_device_for_cpu"]
