"""TW202: a DataLoader that loads in the main process (``num_workers`` 0 or unset)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, has_star_args, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.data import demo_loader, getitem_of, getitem_slices_only, is_index_collection, loader_yields_device_batches, moves_to_device, project_dataset

from torchwise.lint.semantics.loaderhelpers import forwarded_key, loader_class_calls
from torchwise.lint.semantics.loadersubclasses import loader_subclass_calls
from torchwise.lint.semantics.handedoptions import zero_through_callers
from torchwise.lint.semantics.optiondefaults import zero_by_default
from torchwise.lint.semantics.unread import never_read_loader
from torchwise.lint.semantics.unheld import unheld_loader
from torchwise.lint.semantics.conversionpass import conversion_pass

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
    if _preprocessed(ctx, expr, use):
        return True
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
    if last == "Subset":
        source = _subset_source(ctx, expr, use)
        return source is not None and _cheap_dataset(ctx, source, use, depth - 1)
    if last in _IN_MEMORY or last.lower().startswith(_SYNTHETIC):
        return True
    if built.startswith("torch.") and last in ("tensor", "arange", "randn", "rand", "zeros", "ones", "stack", "cat"):
        return True
    if built.startswith("local:"):
        bases = ctx.local_class_bases(last)
        if any(b.endswith("IterableDataset") for b in bases):
            return True
        klass = ctx.local_classes.get(last)
        if klass is None:
            return False
        getitem = getitem_of(klass)
        # items made on the device cannot come from worker processes at all
        return getitem_slices_only(ctx, klass) or (getitem is not None and moves_to_device(ctx, getitem))
    return False


def _per_item_work(ctx: Context, expr: ast.AST, use: ast.AST) -> bool:
    """Evidence that producing an item costs CPU time workers could overlap: a torchvision or
    other library dataset class, a dataset class of this file that does more than slicing, or
    per-item transforms in this file (``transform=...``, ``transforms.Compose``). A dataset we
    cannot see with no such evidence (a tokenised corpus, tensors made elsewhere) is left alone."""
    built = ctx.constructed_from(ctx.resolve(expr, use), use)
    if built is not None:
        if built.startswith(("torchvision.datasets.", "torchaudio.datasets.", "torchtext.datasets.")):
            return True
        if built.startswith("local:"):
            klass = ctx.local_classes.get(built[6:])
            return klass is not None and not getitem_slices_only(ctx, klass)
    found = ctx._cache.get("tw202:transforms")
    if found is None:
        found = any(k.arg in ("transform", "transforms", "target_transform") for k in ctx.nodes.get(ast.keyword, ())) or any(
            (ctx.qualname(c.func) or "").startswith(("torchvision.transforms.", "albumentations.")) for c in ctx.nodes.get(ast.Call, ())
        )
        ctx._cache["tw202:transforms"] = found
    return found


def _subset_source(ctx: Context, expr: ast.AST, use: ast.AST) -> ast.AST | None:
    """The dataset a ``Subset(ds, indices)`` selects from (through names and ``self.x``)."""
    for _ in range(3):
        if expr.__class__ is ast.Call:
            return expr.args[0] if expr.args else None
        if expr.__class__ is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
            expr = ctx.single_self_value(expr, use)
            if expr is None:
                return None
            continue
        expr = ctx.resolve(expr, use)
        if expr.__class__ is not ast.Call:
            return None
    return None


def _preprocessed(ctx: Context, expr: ast.AST, use: ast.AST) -> bool:
    """A Hugging Face style dataset prepared ahead with ``.map(fn, ...)`` (tokenised once, in
    memory): ``tokenized["train"]`` after ``tokenized = raw.map(tokenize, batched=True)``."""
    seen = 0
    while seen < 5:
        seen += 1
        if expr.__class__ is ast.Subscript:
            expr = expr.value
            continue
        if expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute:
            if expr.func.attr == "map" and (expr.args or expr.keywords) and ctx.qualname(expr.func) is None:
                return True
            expr = expr.func.value  # .rename_column(...), .with_format(...), .shuffle(...)
            continue
        if expr.__class__ is ast.Name:
            b = ctx.binding_at(expr.id, use)
            if b is None or b.kind != "assign" or b.value is None:
                return False
            expr, use = b.value, b.node
            continue
        return False
    return False


def _builds_cache(ctx: Context, call: ast.Call) -> bool:
    """A loader inside the ``process()`` method of a dataset class (``class
    ImageDataset(InMemoryDataset)``): the one-time pass that writes the processed file the dataset
    then loads; it runs once, not per epoch."""
    func = ctx.function_of(call)
    klass = ctx.class_of(call)
    return func is not None and func.name == "process" and klass is not None and ctx.parent(func) is klass \
        and any((last_name(b) or "").endswith("Dataset") for b in klass.bases)


def _graph_project(ctx: Context) -> bool:
    """The file or its project uses PyTorch Geometric: graph loaders that slice a collated
    in-memory dataset, where workers have little to do."""
    if "torch_geometric" in ctx.source:
        return True
    key = ("tw202:graph-project",)
    if key not in ctx.project.answers:
        ctx.project.answers[key] = any("torch_geometric" in text for _, text in ctx.project.files)
    return ctx.project.answers[key]


def _split_source(ctx: Context, dataset: ast.AST | None, call: ast.Call) -> tuple[ast.AST | None, ast.AST]:
    """The dataset that ``random_split`` cut a part from (``train_set, val_set = random_split(train_set,
    [n, m])``), and where to read it; else the dataset itself, at the loader."""
    b = ctx.binding_at(dataset.id, call) if dataset.__class__ is ast.Name else None
    if b is not None and b.kind == "unpack" and b.value.__class__ is ast.Call and last_name(b.value.func) == "random_split" \
            and b.value.args:
        return b.value.args[0], b.node
    return dataset, call


def _one_batch(ctx: Context, call: ast.Call, dataset: ast.AST) -> bool:
    """``DataLoader(test_set, batch_size=len(test_set))``: the whole dataset in one batch, which a
    single worker would load alone - workers have nothing to overlap."""
    size = argument(call, "batch_size", 1)
    return size.__class__ is ast.Call and last_name(size.func) == "len" and len(size.args) == 1 \
        and ctx.text(size.args[0]) == ctx.text(dataset)


class SynchronousDataLoader(Rule):
    code = "TW202"
    per_call = True
    name = "dataloader-no-workers"
    triggers = ("DataLoader",)
    doc = """\
What it flags
  `torch.utils.data.DataLoader(...)` (under any import alias) that is not given `num_workers`
  at all (by keyword or as the sixth positional argument), also through a helper's own `**kwargs`
  that none of its callers (in the file or the project, all in view) fills with it
  (`def get_dataloaders(name, **kwargs): return DataLoader(dataset, **kwargs)`), and calls of a
  project's own subclass that never names `num_workers` (`class DataLoader(TorchDataLoader)`
  fixing only the collate function, imported as `from data import DataLoader`). A part that
  `random_split` cuts from a dataset (`train_set, val_set = random_split(full, [n, m])`) is judged
  by the dataset it was cut from. Also
  `num_workers=args.workers` where the file's `add_argument('--workers', type=int, default=0)`
  declares it, or a helper's parameter `num_workers=num_workers` that every call of the helper in
  the project fills with such an option (`get_train_val_test_loader(dataset, ...,
  num_workers=args.workers)` in `main.py` with `-j` defaulting to 0; a call that passes nothing
  counts when the parameter's default is 0): 0 unless the user sets the option - such a loader counts even without visible
  per-item work (the option says loading is meant to be worth workers), except over data that
  workers cannot speed up (below) and in a project that uses PyTorch Geometric (graph loaders that
  slice a collated in-memory dataset). Left alone: an
  explicit count (0 included: a decision), other `**kwargs` (the value may be in there), the whole
  dataset as one batch (`batch_size=len(test_set)`: one worker would load it alone), data that workers cannot
  speed up (lists, ranges, tensors, index tensors such as `train_idx`, `TensorDataset`, random/dummy datasets, a dataset class of
  the file whose `__getitem__` only indexes stored tensors, at a random offset too), data made
  on the device (a `__getitem__` or `collate_fn` that moves it there, or a `collate_fn` handed
  the device - `lambda b: collate(b, args, device)`: CUDA cannot be used in forked workers), iterable datasets (which the main process feeds), and test files. A dataset defined elsewhere is flagged only when the file shows
  per-item work (torchvision datasets, `transform=` arguments, `transforms.Compose`). A dataset
  class defined in another module of the linted project is judged by its own `__getitem__`,
  read in a first pass over the project (`torchwise.lint.project`): iterable, slicing in-memory
  tensors or making items on the device: left alone; reading, decoding or transforming each
  item: flagged - also an element of what a method of such a class returns (`train_set, dev_set,
  test_set = data.SpeechDataset.splits(config)`). (The flake8 plugin sees one file at a time and
  keeps the file-only judgement.)
  A loader in the `process()` method of a dataset class (`class ImageDataset(InMemoryDataset)`:
  the one-time pass that writes the processed file) is left alone: it runs once, not per epoch;
  so is a one-time conversion pass - a loader of single items (`batch_size=1` or unset) that a
  set-up function walks only to gather every sample into lists (`for image, target in loader:
  data["x"].append(image)`, nothing but container, reshaping, NumPy, torch - not `torch.nn` - or
  standard-library calls in the loop: no model, no device copy) and then stacks or saves
  (`torch.stack(data["x"])`, `torch.save(...)`): training slices those tensors, never the loader.
  Demo loaders are left alone too: one only looked at (`next(iter(loader))`, `iter(loader).next()`,
  `loader.__iter__().__next__()`, `dataiter = iter(loader); next(dataiter)`, `len(loader)`) or bound
  again under its name before any use (`train_loader` rebuilt over a `random_split` part: ruling R16) and one built in the `__main__`
  smoke test of a dataset module that only prints what it yields (a script's `__main__` block
  that hands the loader to a function of the file that moves data to a device - `train(args,
  loader, generator, device)` - is no smoke test); and a loader a helper
  returns whose every caller in the project (its own file included) only hands it to methods that
  never read that argument (`model.evaluate(test_loader, d_path, g_path)` that samples noise
  instead), takes only its `.dataset` (`return model, test_loader.dataset`) or leaves it unused
  (ruling R16: no batch is loaded). Also left alone under R16: a loader bound to a name that nothing
  reads after it (the last statement of a smoke test; not inside a loop, not a module-level name
  another module imports), one only appended to a list that is never read but for its `.append`
  calls (`test_loader_list.append(test_loader)`), and one a method returns into a `self` attribute
  that no module of the project reads (`self.trainloader, self.validloader, self.testloader =
  self.train_val_test(...)` with `.validloader` never read).

Why it matters
  With no workers, every batch is read, decoded, augmented and collated in the training
  process, in between steps, while the GPU waits. Worker processes prepare the next batches
  in parallel with the step. The right count depends on the machine and the data, so it
  should be measured; too many workers can also be slower.

Example
  from torchvision import datasets, transforms
  train_set = datasets.ImageFolder("data/train", transform=transforms.ToTensor())
  loader = DataLoader(train_set, batch_size=64, shuffle=True)     # TW202

Fix
  Pass `num_workers=N` (start near the number of cores per GPU), usually with
  `persistent_workers=True`; `torchwise tune` measures the best count for your data.

Lint and the doctor
  Lint flags loaders without workers over data that evidently costs CPU time per item. The
  doctor measures the share of step time spent waiting for the loader and reports it when it
  is large, for any loader, workers or not.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        calls = [*ctx.calls_to(DATALOADER), *loader_class_calls(ctx)]  # (klass=DataLoader: a helper's loader class)
        if ctx.source.count("Loader") > ctx.source.count("DataLoader("):
            calls += loader_subclass_calls(ctx, "num_workers")  # the project's class DataLoader(TorchDataLoader)
        for call in calls:
            value = argument(call, "num_workers", 5)
            option = value is not None and (zero_by_default(ctx, value) or zero_through_callers(ctx, value))
            if value is None:
                if has_star_args(call) and forwarded_key(ctx, call, "num_workers") is not False:
                    continue  # (a helper's own **kwargs that no caller fills with num_workers: unset)
                message = "DataLoader without num_workers loads every batch in the training process"
            elif option:
                message = (f"num_workers={ctx.text(value)} is 0 unless the option is given: by default every batch "
                           "is loaded in the main process, between steps")
            else:
                continue  # an explicit count, 0 included, is a decision someone made
            dataset = argument(call, "dataset", 0)
            dataset, call_site = _split_source(ctx, dataset, call)
            if dataset is None or _cheap_dataset(ctx, dataset, call_site):
                continue
            facts = project_dataset(ctx, dataset, call_site)  # its class is in another module of the project
            if facts is not None and (facts.iterable or facts.in_memory or facts.device):
                continue  # main-process streams, slices of in-memory tensors, items made on the device
            if not (facts is not None and facts.decodes) and not _per_item_work(ctx, dataset, call_site) \
                    and not (option and not _graph_project(ctx)):
                continue  # (an option for the worker count, 0 by default: the author expects loading to be worth workers)
            if is_index_collection(ctx, dataset, call) or _one_batch(ctx, call, dataset):
                continue  # batches of indices: nothing to load per item; or the whole dataset as one batch
            if demo_loader(ctx, call) or never_read_loader(ctx, call) or unheld_loader(ctx, call) or _builds_cache(ctx, call) or conversion_pass(ctx, call):
                continue  # only next(iter(loader)) to show a batch, a __main__ smoke test, a one-time conversion
            if loader_yields_device_batches(ctx, call, dataset):
                continue  # batches made on the device: worker processes could not build them
            yield ctx.finding(
                self.code, call, message,
                suggestion="set num_workers > 0 (measure the best count, e.g. with torchwise tune)",
                end_node=call.func,
            )


RULE = SynchronousDataLoader()
