"""Statement-level scans of TW207 (host-device syncs every training step): ``if``/``while`` tests on a
device value, and boolean-mask selections. Each node found is handed to the rule's ``report`` callback,
which decides whether it runs every training step on an accelerator (and words the finding)."""

from __future__ import annotations

import ast
from typing import Callable, Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.semantics.earlystop import patience_stop
from torchwise.lint.semantics.forwardsyncs import MASK_FIX
from torchwise.lint.semantics.hostreads import tensor_test
from torchwise.lint.semantics.nanguards import nan_guard
from torchwise.lint.semantics.rarely import algorithm_stop
from torchwise.lint.semantics.stepregion import step_region
from torchwise.lint.semantics.stopflags import flag_stop
from torchwise.lint.semantics.syncs import boolean_mask_index

Report = Callable[..., "Finding | None"]


def tensor_conditions(ctx: Context, report: Report) -> Iterator[Finding]:
    """``if``/``while`` tests that read a device tensor (not a data-dependent stop of the algorithm, R9)."""
    for node in [*ctx.nodes.get(ast.If, ()), *ctx.nodes.get(ast.While, ())]:
        if algorithm_stop(node) or flag_stop(ctx, node):
            continue  # (a stop of the algorithm, also through a flag a later test breaks on: R9)
        part = tensor_test(ctx, node.test, node.test) or nan_guard(ctx, node.test, node.test) if step_region(ctx, node.test) is not None else None
        if part is None or patience_stop(ctx, node):
            continue  # (the best-so-far test of a patience early stop: R9)
        finding = report(ctx, node.test, None, "a tensor condition", check_subject=False)
        if finding is not None:
            yield finding


def mask_selections(ctx: Context, report: Report) -> Iterator[Finding]:
    """Boolean-mask indexing of a device tensor, one finding per statement."""
    statements: set[int] = set()
    for sub in ctx.nodes.get(ast.Subscript, ()):
        stmt = ctx.statement_of(sub)
        if id(stmt) in statements or step_region(ctx, sub) is None or not boolean_mask_index(ctx, sub):
            continue
        finding = report(ctx, sub, None, "boolean-mask indexing", check_subject=False, suggestion=MASK_FIX)
        if finding is not None:
            statements.add(id(stmt))
            yield finding
