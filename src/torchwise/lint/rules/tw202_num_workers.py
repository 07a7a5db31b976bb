"""TW202: a DataLoader that loads in the main process (``num_workers`` 0 or unset)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, has_star_args, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule

DATALOADER = "torch.utils.data.DataLoader"


_IN_MEMORY = frozenset({"TensorDataset", "StackDataset", "ConcatDataset"})
_SYNTHETIC = ("random", "dummy", "fake", "synthetic", "toy", "boring")


def _cheap_dataset(ctx: Context, expr: ast.AST, use: ast.AST, depth: int = 3) -> bool:
    """Data that workers cannot speed up, or must not read: in-memory tensors and ranges, synthetic
    datasets, datasets that only index stored tensors, and iterable datasets (each worker would
    replay the whole stream, so the main process feeds them)."""
    if depth <= 0:
        return False
    expr = ctx.resolve(expr, use)
    cls = expr.__class__
    if cls in (ast.List, ast.Tuple, ast.ListComp):
        return True
    if cls is not ast.Call and cls not in (ast.Name, ast.Attribute):
        return False
    built = ctx.constructed_from(expr, use)
    if built is None and cls is ast.Call:
        name = last_name(expr.func)
        if name in ("range", "list", "tuple", "zip", "enumerate"):
            return True
        return False
    if built is None:
        return False
    last = built.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    if last in _IN_MEMORY or last.lower().startswith(_SYNTHETIC):
        return True
    if built.startswith("torch.") and last in ("tensor", "arange", "randn", "rand", "zeros", "ones", "stack", "cat"):
        return True
    if built.startswith("local:"):
        bases = ctx.local_class_bases(last)
        if any(b.endswith("IterableDataset") for b in bases):
            return True
        klass = ctx.local_classes.get(last)
        return klass is not None and _indexes_only(klass)
    return False


def _indexes_only(klass: ast.ClassDef) -> bool:
    """``__getitem__`` that only returns items of stored sequences (``self.x[i], self.y[i]``)."""
    for item in klass.body:
        if item.__class__ is ast.FunctionDef and item.name == "__getitem__":
            body = [s for s in item.body if not (s.__class__ is ast.Expr and s.value.__class__ is ast.Constant)]
            if len(body) != 1 or body[0].__class__ is not ast.Return or body[0].value is None:
                return False
            value = body[0].value
            parts = value.elts if value.__class__ is ast.Tuple else [value]
            return all(p.__class__ is ast.Subscript for p in parts)
    return False


class SynchronousDataLoader(Rule):
    code = "TW202"
    name = "dataloader-no-workers"
    triggers = ("DataLoader",)
    doc = """\
What it flags
  `torch.utils.data.DataLoader(...)` (under any import alias) that is not given `num_workers`
  at all (by keyword or as the sixth positional argument). Left alone: an explicit count (0
  included: a decision), `**kwargs` (the value may be in there), data that workers cannot
  speed up (lists, ranges, tensors, `TensorDataset`, random/dummy datasets, a dataset class of
  the file whose `__getitem__` only indexes stored tensors), iterable datasets (which the main
  process feeds), and test files.

Why it matters
  With no workers, every batch is read, decoded, augmented and collated in the training
  process, in between steps, while the GPU waits. Worker processes prepare the next batches
  in parallel with the step. The right count depends on the machine and the data, so it
  should be measured; too many workers can also be slower.

Example
  loader = DataLoader(train_set, batch_size=64, shuffle=True)     # TW202

Fix
  Pass `num_workers=N` (start near the number of cores per GPU), usually with
  `persistent_workers=True`; `torchwise tune` measures the best count for your data.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_to(DATALOADER):
            value = argument(call, "num_workers", 5)
            if value is None:
                if has_star_args(call):
                    continue
                message = "DataLoader without num_workers loads every batch in the training process"
            else:
                continue  # an explicit count, 0 included, is a decision someone made
            dataset = argument(call, "dataset", 0)
            if dataset is not None and _cheap_dataset(ctx, dataset, call):
                continue
            yield ctx.finding(
                self.code, call, message,
                suggestion="set num_workers > 0 (measure the best count, e.g. with torchwise tune)",
                end_node=call.func,
            )


RULE = SynchronousDataLoader()
