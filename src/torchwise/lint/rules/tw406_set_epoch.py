"""TW406: a shuffling ``DistributedSampler`` whose ``set_epoch`` is never called."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, keyword, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.epochsetting import project_never_sets_epoch
from torchwise.lint.semantics.flaggedepochs import built_regardless, flag_only_set_epoch
from torchwise.lint.semantics.loaderhelpers import is_loader_call
from torchwise.lint.semantics.steps import is_eval_name
from torchwise.lint.semantics.values import local_function

_EVAL_DATA = ("val", "test", "eval")


def _for_evaluation(ctx: Context, call: ast.Call) -> bool:
    """A sampler of evaluation data: built in an evaluation function (``validate()``), under
    no_grad, or over a dataset named for validation (``valset``, ``test_dataset``). The order of
    evaluation batches changes nothing."""
    func = ctx.function_of(call)
    if func is not None and is_eval_name(func.name):
        return True
    dataset = argument(call, "dataset", 0)
    if dataset is not None and any(w in ctx.text(dataset).lower() for w in _EVAL_DATA):
        return True
    for test, in_body in ctx.enclosing_ifs(call):
        if test.__class__ is ast.If and not in_body and _names_training(test.test):
            return True  # if is_train: ... else: sampler = DistributedSampler(dataset) - the test split
    return under_no_grad(ctx, call)


def _names_training(test: ast.AST) -> bool:
    """``if is_train:`` / ``if train:`` / ``if self.training:``: a plain test of a training flag."""
    name = test.id if test.__class__ is ast.Name else test.attr if test.__class__ is ast.Attribute else ""
    return name.lower() in ("train", "is_train", "training", "is_training")


def _has_epoch_loop(ctx: Context) -> bool:
    for loop in [*ctx.nodes.get(ast.For, ()), *ctx.nodes.get(ast.AsyncFor, ())]:
        for node in (loop.target, loop.iter):
            for sub in ast.walk(node):
                name = sub.id if sub.__class__ is ast.Name else (sub.attr if sub.__class__ is ast.Attribute else None)
                if name and "epoch" in name.lower():
                    return True
    return False


def _endless_passes(ctx: Context) -> bool:
    """``def sample_data(loader): while True: for batch in loader: yield batch``: an iteration-based
    loop that passes over the loader again and again - each pass is an epoch."""
    if "yield" not in ctx.source:
        return False
    for loop in ctx.nodes.get(ast.While, ()):
        func = ctx.function_of(loop)
        if func is None or loop.test.__class__ is not ast.Constant or not loop.test.value:
            continue
        params = {a.arg for a in func.args.args}
        for inner in loop.body:
            if inner.__class__ is ast.For and inner.iter.__class__ is ast.Name and inner.iter.id in params \
                    and any(n.__class__ in (ast.Yield, ast.YieldFrom) for n in ast.walk(inner)):
                return True
    return False


def _shuffles(ctx: Context, call: ast.Call) -> bool:
    """The sampler shuffles: by default, ``shuffle=True``, or ``shuffle=shuffle`` in a helper
    (``def data_sampler(dataset, shuffle, distributed)``) that every call of this file passes
    ``shuffle=True``."""
    shuffle = argument(call, "shuffle", 3)
    if shuffle is None or shuffle.__class__ is ast.Constant and shuffle.value is True:
        return True
    func = ctx.function_of(call)
    if shuffle.__class__ is not ast.Name or func is None:
        return False
    params = [a.arg for a in func.args.args]
    if shuffle.id not in params:
        return False
    calls = [c for c in ctx.calls_named(func.name) if c.func.__class__ is ast.Name]
    values = [argument(c, shuffle.id, params.index(shuffle.id)) for c in calls]
    return bool(values) and all(v.__class__ is ast.Constant and v.value is True for v in values)


def _bound_names(ctx: Context, call: ast.Call) -> set[str]:
    parent = ctx.parent(call)
    if parent.__class__ is ast.Assign:
        return {t.id for t in parent.targets if t.__class__ is ast.Name} | {t.attr for t in parent.targets if t.__class__ is ast.Attribute}
    return set()


# what a loader passes through on its way into the loop: nothing here calls set_epoch
_ITERATION = frozenset({"enumerate", "iter", "next", "len", "zip", "list", "tqdm", "trange", "print", "islice", "cycle",
                        "chain", "isinstance", "range", "sorted", "tuple", "repeat", "log_every"})


def _handed_on(ctx: Context, sampler: ast.Call) -> bool:
    """Is the sampler, or a DataLoader built with it, passed to a function not defined here?"""
    names = _bound_names(ctx, sampler)
    if not names:
        return False
    for call in ctx.calls_to("torch.utils.data.DataLoader"):
        if any(last_name(v) in names for v in [*call.args, *(k.value for k in call.keywords)]):
            names |= _bound_names(ctx, call)
    for d in ctx.nodes.get(ast.Dict, ()):
        if any(v is not None and last_name(v) in names for v in d.values):
            return True  # stored in a dict of loader arguments we do not follow
    for call in ctx.nodes.get(ast.Call, ()):
        if ctx.qualname(call.func) in ("torch.utils.data.DataLoader", "torch.utils.data.DistributedSampler"):
            continue
        if local_function(ctx, call) is not None or last_name(call.func) in _ITERATION:
            continue  # our own function (its set_epoch would be seen), or iteration: enumerate(loader), tqdm(loader)
        if any(v.__class__ in (ast.Name, ast.Attribute) and last_name(v) in names for v in [*call.args, *(k.value for k in call.keywords)]):
            return True
    return False


def _consumed_elsewhere(ctx: Context, sampler: ast.Call) -> bool:
    """The sampler (or a ``BatchSampler`` over it) goes to something other than a DataLoader: a
    project's own batch iterator (one that freezes the batches and reshuffles them with its own
    seed every epoch) decides the order, not the sampler's epoch."""
    names = _bound_names(ctx, sampler)
    for call in ctx.calls_named("BatchSampler"):
        if any(last_name(v) in names for v in [*call.args, *(k.value for k in call.keywords)]):
            names |= _bound_names(ctx, call)
    for call in ctx.nodes.get(ast.Call, ()):
        if is_loader_call(ctx, call) or last_name(call.func) in ("BatchSampler", "DistributedSampler") \
                or last_name(call.func) in _ITERATION:
            continue
        if any(v.__class__ is ast.Name and v.id in names for v in [*call.args, *(k.value for k in call.keywords)]):
            return True
    return False


class SamplerWithoutSetEpoch(Rule):
    code = "TW406"
    per_call = True
    name = "distributed-sampler-no-set-epoch"
    triggers = ("DistributedSampler",)
    doc = """\
What it flags
  `DistributedSampler(...)` that shuffles (the default) in a file that loops over epochs but
  never calls `.set_epoch(...)` on anything - also one built in a helper
  (`def data_sampler(dataset, shuffle, distributed)`) that every call passes `shuffle=True`, and
  a file that trains by iterations over an endless generator (`def sample_data(loader): while
  True: for batch in loader: yield batch`): each pass over the loader is an epoch. Across the
  files linted together, also a sampler built in a data module (`def create_dataloader(config):
  ... DistributedSampler(train_dataset)`, handed on to a `BatchSampler` or a DataLoader, also one
  a helper takes as a parameter: `klass=DataLoader`) of a
  project that loops over epochs but never calls `set_epoch` (nor assigns `sampler.epoch`) in
  any file and imports no training framework that would (Lightning, Accelerate, transformers,
  Ignite, mmcv/mmengine...; a lazy import inside a function of a file that never speaks of
  loaders, trainers, runners or epochs - a vendored config reader's `import mmcv` to parse a YAML
  file - runs no loop and does not count). A sampler built inside a loop or given its own `seed=` is left
  alone, and so is one handed to anything but a loader there (a project's batch iterator that
  freezes the batches and reshuffles them with its own seed). Samplers of evaluation data are left alone: built
  in an evaluation function (`validate()`), under no_grad, in the `else` of `if is_train:`, or over a dataset named for
  validation or test (`valset`): the order of evaluation batches changes nothing.
  Also a sampler built on every run (in no `if`, or under `if True:  # args.distributed:`) in a
  file whose every `set_epoch` runs only under a flag (`if args.distributed:
  loader.sampler.set_epoch(epoch)`): a single-process run without the flag still shuffles with
  the sampler and replays one order. Left alone there: a sampler built under a condition, or in
  a function that tests the flag before building it, and `set_epoch` guarded by a test of the
  sampler itself (`if sampler is not None:`, `isinstance(...)`).

Why it matters
  The sampler shuffles with a generator seeded from `seed + epoch`. Without `set_epoch` the
  epoch stays 0, so every epoch visits the samples in exactly the same order on every rank:
  the shuffling you asked for happens once and never again, which hurts convergence.

Example
  sampler = DistributedSampler(train_set)
  loader = DataLoader(train_set, sampler=sampler, batch_size=32)
  for epoch in range(epochs):                          # TW406: no sampler.set_epoch(epoch)
      for x, y in loader:
          ...

Fix
  Call `sampler.set_epoch(epoch)` at the start of every epoch, before iterating the loader.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        samplers = ctx.calls_to("torch.utils.data.DistributedSampler")
        flags = None
        if not samplers or ctx.calls_named("set_epoch") and (flags := flag_only_set_epoch(ctx)) is None:
            return
        local = _has_epoch_loop(ctx) or _endless_passes(ctx)
        if not local and not project_never_sets_epoch(ctx.project):
            return
        for call in samplers:
            if not _shuffles(ctx, call):
                continue
            if _for_evaluation(ctx, call):
                continue  # validation data: the order of its batches does not matter
            if ctx.enclosing_loops(call) or keyword(call, "seed") is not None:
                continue  # a sampler made anew in a loop, or given its own seed: maybe per epoch
            if flags is not None:
                if built_regardless(ctx, call, flags):
                    yield ctx.finding(
                        self.code, call,
                        f"DistributedSampler is built on every run but set_epoch() runs only if {sorted(flags)[0]}: "
                        "a run without it sees the same order every epoch",
                        suggestion="call sampler.set_epoch(epoch) whenever the sampler is used",
                        end_node=call.func,
                    )
                continue
            if _handed_on(ctx, call) and (not project_never_sets_epoch(ctx.project) or _consumed_elsewhere(ctx, call)):
                continue  # the sampler (or its loader) goes to a function of another module, which may call set_epoch
            yield ctx.finding(
                self.code, call,
                "DistributedSampler shuffles but set_epoch() is never called: every epoch sees the same order",
                suggestion="call sampler.set_epoch(epoch) at the start of each epoch",
                end_node=call.func,
            )


RULE = SamplerWithoutSetEpoch()
