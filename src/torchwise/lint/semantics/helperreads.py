"""Reads in a helper of one module that the training step of another module calls every step
(TW207): ``def accuracy(scores, targets, k): ... return correct_total.item()`` in ``utils.py``,
called as ``top5 = accuracy(output, label, 5)`` in the training loop of ``train.py``. The call is
reported in the caller's file (semantics.stepregion); this names the read itself, in the helper,
where the fix goes - but only where the caller's own check found the call: in a step region,
handed device values, not a number or a CPU tensor, not the sampler of the step's inputs."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.argreads import reads_of_arguments
from torchwise.lint.semantics.callers import MAX_CALLER_FILES, parsed_file
from torchwise.lint.semantics.devices import SYNC_METHODS
from torchwise.lint.semantics.stepreads import every_step_read
from torchwise.lint.semantics.stepregion import host_reader_calls

_TRAINING_TEXT = ("backward(", ".step(")


def helper_reads(ctx: Context) -> list[tuple[AST, str]]:
    """``(read, message)`` for each unguarded host read of its arguments in a function or method of
    this file whose call another module's training step makes every step with device values."""
    blocks = ctx.project.host_read_blocks
    out: list[tuple[AST, str]] = []
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef):
        for func in ctx.nodes.get(kind, ()):
            if not any(b.path == ctx.path for b in blocks.get(func.name, ())):
                continue  # (the project's facts: its text mentions no host read)
            files = _caller_files(ctx, func.name)
            reads = [(line, what) for line, what, guard in reads_of_arguments(func) if guard is None] if files else []
            at = _step_call(ctx, func, files) if reads else None
            for line, what in reads if at is not None else ():
                node = _node_at(func, line)
                if node is not None and not _without_gpu(ctx, node):
                    said = what[6:] if what.startswith("calls ") else ".data[0]" if what.startswith("reads") else "a tensor test"
                    out.append((node, f"{said} in {func.name}(), which the training step calls every step ({at}), waits for the GPU"))
    return out


def _caller_files(ctx: Context, name: str) -> list[tuple[str, str]]:
    """The other files of the project that call ``name`` and train (any import: a star import
    through a package's ``__init__`` too; the caller's verdict names this file); none past a few."""
    needle = f"{name}("
    files = [(p, t) for p, t in ctx.project.files if needle in t and p != ctx.path and any(w in t for w in _TRAINING_TEXT)]
    return files if len(files) <= MAX_CALLER_FILES else []


def _step_call(ctx: Context, func: AST, files: list[tuple[str, str]]) -> str | None:
    """``"path:line"`` of a call of ``func`` in another module that that module's training step
    makes every step with device values, reported there as reading its arguments in this file."""
    first, last = func.lineno, func.end_lineno or func.lineno
    for path, text in files:
        other = parsed_file(ctx.project, path, text)
        for call, where in _reader_calls(other, func.name).items() if other is not None else ():
            target, _, line = where.rpartition(" at ")[2].rpartition(":")
            if target == ctx.path and line.isdigit() and first <= int(line) <= last and call.lineno is not None:
                return f"{other.path}:{call.lineno}"
    return None


def _reader_calls(ctx: Context, name: str) -> dict[ast.Call, str]:
    """The file's calls of ``name`` that hand a device value to a project helper reading it on the
    host in another file (semantics.stepregion), with where it reads; once per file and name."""
    key = ("sem:helper-reader-calls", name)
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = {call: where for call, _, where in host_reader_calls(ctx, name)
                                   if " at " in where and every_step_read(ctx, call, None, False)}
    return found


def _without_gpu(ctx: Context, node: AST) -> bool:
    """Under the ``else`` of ``if torch.cuda.is_available():`` (or the body of ``if not ...``): the
    CPU path of the helper, which a run on a GPU never takes."""
    for test, in_body in ((i.test, b) for i, b in ctx.enclosing_ifs(node) if i.__class__ is ast.If):
        negated = test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not
        if ctx.text(test.operand if negated else test) == "torch.cuda.is_available()" and in_body == negated:
            return True
    return False


def _node_at(func: AST, line: int) -> AST | None:
    """The read on ``line``: a ``.item()``-like call, an ``if``/``while``, a ``.data[0]``."""
    for node in ast.walk(func):
        if getattr(node, "lineno", None) != line:
            continue
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in SYNC_METHODS \
                or node.__class__ in (ast.If, ast.While, ast.Subscript):
            return node
    return None
