"""TW204: copies of pinned batches to the GPU without ``non_blocking=True``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, keyword, last_name, root_name
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.devices import device_move_target
from torchwise.lint.semantics.pinning import loader_pinned, pin_value
from torchwise.lint.semantics.values import local_function

DATALOADER = "torch.utils.data.DataLoader"
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "trange", "prefetch"})


def _loader_names(ctx: Context) -> dict[str, set[bool | None]]:
    """Names (last identifiers) bound to DataLoaders in this file -> whether each is pinned."""
    names: dict[str, set[bool | None]] = {}
    for call in ctx.calls_to(DATALOADER):
        parent = ctx.parent(call)
        targets = parent.targets if parent.__class__ is ast.Assign else [parent.target] if parent.__class__ is ast.AnnAssign else []
        for t in targets:
            n = last_name(t)
            if n:
                names.setdefault(n, set()).add(pin_value(ctx, call))
    return names


def _pinned_source(ctx: Context, src: ast.AST, loop: ast.AST, names: dict[str, set[bool | None]]) -> bool:
    """Does the loop iterate over a pinned loader? What :func:`loader_pinned` tells of the
    loader where the loop runs (its DataLoader call, a function of the file or project that
    builds it, the callers that hand it in); else every loader of that name in the file, or a
    ``*loader`` parameter in a project (or file) whose loaders are all pinned."""
    verdict = loader_pinned(ctx, src, loop)
    if verdict is not None:
        return verdict
    if src.__class__ is ast.Name:
        b = ctx.binding_at(src.id, loop)
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


_CONVERSIONS = frozenset({"float", "double", "half", "long", "int", "bool", "contiguous", "squeeze", "unsqueeze",
                          "view", "reshape", "permute", "clone", "type"})


def _unconverted(expr: ast.AST) -> ast.AST:
    """``expr`` without an index or conversions applied before the copy (``images.float()``, ``batch[0]``)."""
    while True:
        if expr.__class__ is ast.Subscript:
            expr = expr.value
        elif expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in _CONVERSIONS:
            expr = expr.func.value
        else:
            return expr


def _from_loop(ctx: Context, expr: ast.AST, loop: ast.AST, depth: int = 5) -> bool:
    """Does ``expr`` hold (part of) the batch that ``loop`` takes from its loader? Also through
    a conversion before the copy (``images.float().cuda()``), a batch unpacked from a dict or
    tuple, a conditional (``target if len(target) > 0 else None``) and the elements of a
    comprehension over the batch (``tuple(d.cuda() for d in data)``)."""
    expr = _unconverted(expr)
    if expr.__class__ is ast.IfExp:
        return depth > 0 and (_from_loop(ctx, expr.body, loop, depth - 1) or _from_loop(ctx, expr.orelse, loop, depth - 1))
    if expr.__class__ in (ast.Tuple, ast.List):  # data = (data,): the batch wrapped in a tuple
        return depth > 0 and any(_from_loop(ctx, e, loop, depth - 1) for e in expr.elts)
    if expr.__class__ is not ast.Name or depth <= 0:
        return False
    b = ctx.binding_at(expr.id, expr)
    if b is None:
        return False
    if b.kind == "for":
        if b.node is loop:
            return True
        # a comprehension over the batch: for d in data
        return b.node.__class__ is ast.comprehension and _from_loop(ctx, b.value, loop, depth - 1)
    value = b.value
    if b.kind == "unpack" and value is not None and value.__class__ in (ast.Tuple, ast.List) and 0 <= b.index < len(value.elts):
        value = value.elts[b.index]  # images, masks = batch["image"], batch["mask"]
    if b.kind in ("assign", "unpack") and value is not None:
        return _from_loop(ctx, value, loop, depth - 1)
    return False


class BlockingCopyFromPinned(Rule):
    code = "TW204"
    name = "blocking-copy-from-pinned"
    triggers = ("pin_memory", "loader", "Loader", ".to(", ".cuda(")
    fixable = True
    doc = """\
What it flags
  In a loop over a pinned DataLoader, copies of the batch to a device (`x.to(device)`,
  `x.cuda()`) that do not pass `non_blocking=True`. The loader is pinned when the
  `DataLoader(..., pin_memory=True)` bound to the loop's name where the loop runs says so (a
  same-named unpinned loader elsewhere in the file does not count), or - across the files
  linted together - when it comes from a function of the project that builds only pinned
  loaders (`train_loader, val_loader = get_loaders(...)`), or is a `*loader` parameter in a
  file or project whose every DataLoader is pinned, or is a parameter whose callers - in the
  file, or in the modules that import it (`engine.train(model, train_loader, ...)`) - all hand
  in pinned loaders - also when the copying file never names a loader or `pin_memory` (the
  loaders come from `get_sets(...)` of a data module). Loaders kept in a dict count: built in a
  dict comprehension (`{split: DataLoader(..., pin_memory=True) for split in splits}`) and
  iterated as `loaders[phase]`, or stored as an item (`loaders["aux"] = DataLoader(...)`; with a
  constant key, that item decides). Pinned also means `pin_memory=<an expression>` (`pin_memory=use_cuda`) and
  `**kwargs` dicts chosen by a condition (`{'pin_memory': True} if cuda else {}`). Loops over
  `enumerate(...)`, `tqdm(...)`, `zip(...)` of loaders or a logging iterator given the loader
  (`metric_logger.log_every(data_loader, 50)`) count, and so do copies in a method the loop
  calls with the batch, after a conversion (`images.float().cuda()`), or of every part of the
  batch (`tuple(d.cuda() for d in data)`); in iteration-based training, the batch read inside
  the loop with `next(batch_iterator)` or `batch_iterator.__next__()` where `batch_iterator =
  iter(loader)` or `enumerate(loader)`. A loop whose body
  ends in an unconditional `break` takes one batch (a sample for a figure) and is left alone.

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
        if not ctx.project.pins_memory and "pin_memory" not in ctx.source:
            return  # (a loader pinned through a ``**kwargs`` dict names pin_memory too)
        names = _loader_names(ctx)
        pinned: dict[int, bool] = {}

        def pinned_loop(loop: ast.AST) -> bool:
            if id(loop) not in pinned:
                it = getattr(loop, "iter", None)
                pinned[id(loop)] = it is not None and _pinned_source(ctx, _loop_source(it), loop, names)
            return pinned[id(loop)]

        def batch_loop(loop: ast.AST) -> bool:
            return pinned_loop(loop) and not _runs_once(loop)

        for call in ctx.calls_named("to", "cuda"):
            target = device_move_target(ctx, call)
            if target is None or keyword(call, "non_blocking") is not None:
                continue
            if call.func.attr == "to" and len(call.args) > 1:
                continue  # .to(device, dtype, non_blocking...) positional forms: leave alone
            recv = call.func.value
            if not any(batch_loop(l) and _from_loop(ctx, recv, l) for l in ctx.enclosing_loops(call)) and not (
                    _batch_parameter(ctx, recv, call, batch_loop)) and not _from_next(ctx, recv, call, names):
                continue
            edit = ctx.add_keyword(call, "non_blocking=True")
            yield ctx.finding(
                self.code, call,
                "copy of a pinned batch without non_blocking=True blocks the host until it finishes",
                suggestion="pass non_blocking=True",
                fix=Fix("add non_blocking=True", (edit,)) if edit is not None else None,
            )


def _runs_once(loop: ast.AST) -> bool:
    """A loop whose body ends every pass with ``break`` (or ``return``) at its own level takes one
    batch: an evaluation that copies a single sample batch for a figure. One blocking copy is no
    pipeline to overlap."""
    return any(s.__class__ in (ast.Break, ast.Return) for s in getattr(loop, "body", ()))


_ITERATORS = frozenset({"iter", "enumerate"})


def _next_source(ctx: Context, expr: ast.AST, use: ast.AST, depth: int = 4) -> ast.AST | None:
    """The loader that ``expr`` was taken from with ``next(...)``: ``images, targets =
    next(batch_iterator)`` where ``batch_iterator = iter(data_loader)``, also through a
    conversion or an element of the batch (``[ann.cuda() for ann in targets]``)."""
    expr = _unconverted(expr)
    if expr.__class__ is ast.Call and (last_name(expr.func) == "next" and len(expr.args) == 1 or (
            not expr.args and expr.func.__class__ is ast.Attribute and expr.func.attr == "__next__")):
        it = expr.args[0] if expr.args else expr.func.value  # next(it) / it.__next__()
        if it.__class__ is ast.Call and last_name(it.func) in _ITERATORS and it.args:
            return it.args[0]
        if it.__class__ is ast.Name:
            b = ctx.binding_at(it.id, use)
            values = [b.value] if b is not None and b.kind == "assign" else [
                n.value for n in ctx.nodes.get(ast.Assign, ()) if b is None and len(n.targets) == 1
                and n.targets[0].__class__ is ast.Name and n.targets[0].id == it.id
                and ctx.function_of(n) is ctx.function_of(use)]  # bound later in the loop: `except StopIteration: it = iter(...)`
            for value in values:  # it = iter(loader) / it = enumerate(loader)
                if value is not None and value.__class__ is ast.Call and last_name(value.func) in _ITERATORS and value.args:
                    return value.args[0]
        return None
    if expr.__class__ is not ast.Name or depth <= 0:
        return None
    b = ctx.binding_at(expr.id, use)
    if b is None or b.value is None:
        return None
    value = b.value
    if b.kind == "unpack" and value.__class__ in (ast.Tuple, ast.List) and 0 <= b.index < len(value.elts):
        value = value.elts[b.index]
    if b.kind == "for" and b.node.__class__ is ast.comprehension:
        return _next_source(ctx, b.value, b.node.iter, depth - 1)
    return _next_source(ctx, value, b.node, depth - 1) if b.kind in ("assign", "unpack") else None


def _from_next(ctx: Context, recv: ast.AST, call: ast.Call, names: dict[str, set[bool | None]]) -> bool:
    """A batch read with ``next(batch_iterator)`` inside a loop (iteration-based training) from
    a pinned loader."""
    loops = ctx.enclosing_loops(call)
    if not loops or "next(" not in ctx.source and "__next__(" not in ctx.source:
        return False
    src = _next_source(ctx, recv, call)
    return src is not None and _pinned_source(ctx, _loop_source(src), loops[-1], names)


def _batch_parameter(ctx: Context, recv: ast.AST, call: ast.Call, pinned_loop) -> bool:
    """The copied value is a parameter of a function of this file (``def _train_batch(self, X,
    y): X = X.to(self.device)``) that every caller passes a batch of a pinned loader's loop."""
    root = root_name(recv)
    func = ctx.function_of(call)
    if root is None or func is None:
        return False
    b = ctx.binding_at(root.id, recv)
    if b is None or b.kind != "param" or root.id in ("self", "cls"):
        return False
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    method = ctx.parent(func).__class__ is ast.ClassDef and params[:1] in (["self"], ["cls"])
    index = params.index(root.id) if root.id in params else None
    callers = [c for c in ctx.calls_named(func.name) if local_function(ctx, c) is func]
    for caller in callers:
        shift = 1 if method and caller.func.__class__ is ast.Attribute else 0
        value = argument(caller, root.id, index - shift if index is not None and index >= shift else None)
        if value is None or not any(pinned_loop(l) and _from_loop(ctx, value, l) for l in ctx.enclosing_loops(caller)):
            return False
    return bool(callers)


RULE = BlockingCopyFromPinned()
