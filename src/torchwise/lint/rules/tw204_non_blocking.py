"""TW204: copies of pinned batches to the GPU without ``non_blocking=True``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, keyword, last_name
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.data import pinned_loaders_line
from torchwise.lint.semantics.devices import device_move_target
from torchwise.lint.semantics.projectcode import function_verdict

DATALOADER = "torch.utils.data.DataLoader"
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "trange", "prefetch"})


def _pinned(ctx: Context, call: ast.Call) -> bool | None:
    """True/False for ``DataLoader(..., pin_memory=True/False or absent)``, also through a
    ``**loader_args`` dict written in the file (``dict(..., pin_memory=True)``); None for other
    ``**kwargs``."""
    pin = argument(call, "pin_memory", 7)
    if pin is not None:
        return pin.__class__ is ast.Constant and pin.value is True
    for k in call.keywords:
        if k.arg is None:
            value = ctx.resolve(k.value, call)
            if value is not None and value.__class__ is ast.Call and last_name(value.func) == "dict":
                pin = keyword(value, "pin_memory")
            elif value is not None and value.__class__ is ast.Dict:
                pin = next((v for key, v in zip(value.keys, value.values)
                            if key is not None and key.__class__ is ast.Constant and key.value == "pin_memory"), None)
            else:
                return None
            if pin is not None:
                node = pin.value if isinstance(pin, ast.keyword) else pin
                return node.__class__ is ast.Constant and node.value is True
    return False


def _loader_names(ctx: Context) -> dict[str, set[bool | None]]:
    """Names (last identifiers) bound to DataLoaders in this file -> whether each is pinned."""
    names: dict[str, set[bool | None]] = {}
    for call in ctx.calls_to(DATALOADER):
        parent = ctx.parent(call)
        targets = parent.targets if parent.__class__ is ast.Assign else [parent.target] if parent.__class__ is ast.AnnAssign else []
        for t in targets:
            n = last_name(t)
            if n:
                names.setdefault(n, set()).add(_pinned(ctx, call))
    return names


def _pinned_source(ctx: Context, src: ast.AST, loop: ast.AST, names: dict[str, set[bool | None]]) -> bool:
    """Does the loop iterate over a pinned loader? The DataLoader bound to that name where the
    loop runs; else every loader of that name in the file; else one a project function builds
    pinned (``train_loader, _ = get_loaders(...)``), or a ``*loader`` parameter in a project
    whose loaders are all pinned."""
    if src.__class__ is ast.Name:
        b = ctx.binding_at(src.id, loop)
        if b is not None and b.kind in ("assign", "unpack") and b.value.__class__ is ast.Call:
            value = b.value
            if ctx.qualname(value.func) == DATALOADER:
                return _pinned(ctx, value) is True
            if function_verdict(ctx.project, "loader_blocks", last_name(value.func), pinned_loaders_line):
                return True  # train_loader, val_loader = get_loaders(...), a project function that pins them
        if b is not None and b.kind == "param" and "loader" in src.id.lower():
            every = set().union(*names.values()) if names else set()
            if ctx.project.all_loaders_pinned or every == {True}:
                return True  # a loader handed in, where every loader of the project (or file) is pinned
    found = names.get(last_name(src) or "")
    return bool(found) and found == {True}


def _loop_source(it: ast.AST) -> ast.AST:
    """What a loop iterates over, through wrappers: ``enumerate(tqdm(loader))``, and logging
    iterators handed the loader first (``metric_logger.log_every(data_loader, 50)``)."""
    while it.__class__ is ast.Call and it.args:
        first = it.args[0]
        if last_name(it.func) in _WRAPPERS or "loader" in (last_name(first) or "").lower():
            it = first
            continue
        break
    return it


def _from_loop(ctx: Context, expr: ast.AST, loop: ast.AST, depth: int = 3) -> bool:
    """Does ``expr`` hold (part of) the batch that ``loop`` takes from its loader?"""
    while expr.__class__ is ast.Subscript:
        expr = expr.value
    if expr.__class__ is not ast.Name or depth <= 0:
        return False
    b = ctx.binding_at(expr.id, expr)
    if b is None:
        return False
    if b.kind == "for":
        return b.node is loop
    value = b.value
    if b.kind == "unpack" and value is not None and value.__class__ in (ast.Tuple, ast.List) and 0 <= b.index < len(value.elts):
        value = value.elts[b.index]  # images, masks = batch["image"], batch["mask"]
    if b.kind in ("assign", "unpack") and value is not None:
        return _from_loop(ctx, value, loop, depth - 1)
    return False


class BlockingCopyFromPinned(Rule):
    code = "TW204"
    name = "blocking-copy-from-pinned"
    triggers = ("pin_memory", "loader", "Loader")
    fixable = True
    doc = """\
What it flags
  In a loop over a pinned DataLoader, copies of the batch to a device (`x.to(device)`,
  `x.cuda()`) that do not pass `non_blocking=True`. The loader is pinned when the
  `DataLoader(..., pin_memory=True)` bound to the loop's name where the loop runs says so (a
  same-named unpinned loader elsewhere in the file does not count), or - across the files
  linted together - when it comes from a function of the project that builds only pinned
  loaders (`train_loader, val_loader = get_loaders(...)`), or is a `*loader` parameter in a
  file or project whose every DataLoader is pinned. Loops over `enumerate(...)`, `tqdm(...)`
  or a logging iterator given the loader (`metric_logger.log_every(data_loader, 50)`) count.

Why it matters
  Pinning the batch only pays off when the copy is asynchronous. A blocking copy makes the
  host wait for the transfer to finish before it can queue the next kernels, so the copy and
  the computation never overlap.

Example
  loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True)
  for x, y in loader:
      x = x.to(device)                    # TW204

Fix
  `x = x.to(device, non_blocking=True)`. Host-to-device copies from pinned memory are safe
  to make non-blocking: later work on the same stream waits for them. `torchwise lint --fix`
  adds the argument.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        names = _loader_names(ctx)
        if not any(True in v for v in names.values()) and not (
            ctx.project.loader_blocks or ctx.project.all_loaders_pinned
        ):
            return
        loops = []
        for loop in [*ctx.nodes.get(ast.For, ()), *ctx.nodes.get(ast.AsyncFor, ())]:
            if _pinned_source(ctx, _loop_source(loop.iter), loop, names):
                loops.append(loop)
        if not loops:
            return
        for call in ctx.calls_named("to", "cuda"):
            target = device_move_target(ctx, call)
            if target is None or keyword(call, "non_blocking") is not None:
                continue
            if call.func.attr == "to" and len(call.args) > 1:
                continue  # .to(device, dtype, non_blocking...) positional forms: leave alone
            recv = call.func.value
            loop = next((l for l in ctx.enclosing_loops(call) if l in loops), None)
            if loop is None or not _from_loop(ctx, recv, loop):
                continue
            edit = ctx.add_keyword(call, "non_blocking=True")
            yield ctx.finding(
                self.code, call,
                "copy of a pinned batch without non_blocking=True blocks the host until it finishes",
                suggestion="pass non_blocking=True",
                fix=Fix("add non_blocking=True", (edit,)) if edit is not None else None,
            )


RULE = BlockingCopyFromPinned()
