"""TW203: a DataLoader that feeds a GPU without ``pin_memory``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, has_star_args, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.collates import graph_collate, identity_collate, numpy_collate
from torchwise.lint.semantics.configdefaults import false_pin_sources, shipped_off
from torchwise.lint.semantics.data import demo_loader, getitem_reads_nothing, is_index_collection, loader_yields_device_batches, local_dataset_class, project_dataset
from torchwise.lint.semantics.loaderconfig import splat_without_pin, splatted_false
from torchwise.lint.semantics.loaderhelpers import forwarded_key, loader_class_calls
from torchwise.lint.semantics.devices import gpu_evident, gpu_evident_for, moves_near
from torchwise.lint.semantics.pinning import unpinned_helper_calls
from torchwise.lint.semantics.numpybatches import batches_become_numpy
from torchwise.lint.semantics.jsonrecords import text_record_loader
from torchwise.lint.semantics.textitems import getitem_yields_text, prompt_dataset as _prompt_dataset
from torchwise.lint.semantics.loaderuses import handed_to_project_mover, subclass_moves, unused_or_xla
from torchwise.lint.semantics.localmovers import handed_to_local_mover
from torchwise.lint.semantics.heldloaders import held_for_gpu_scripts
from torchwise.lint.semantics.loadersubclasses import loader_subclass_calls, monai_loader_calls
from torchwise.lint.semantics.optionpins import explicit_false as _explicit_false
from torchwise.lint.semantics.pinorigin import handed_option_off
from torchwise.lint.semantics.pinchoice import pinned_for_one_choice
from torchwise.lint.semantics.remoteloaders import returned_to_remote_gpu
from torchwise.lint.semantics.onlyiterated import only_iterated
from torchwise.lint.semantics.loaderstreams import streaming_method, streams
from torchwise.lint.semantics.trainerloaders import handed_to_trainer
from torchwise.lint.semantics.unread import never_read_loader
from torchwise.lint.semantics.unheld import unheld_loader
from torchwise.lint.semantics.values import local_function

DATALOADER = "torch.utils.data.DataLoader"
# PyTorch Geometric's loaders: DataLoader subclasses that hand pin_memory on (Data/Batch pin themselves)
PYG_LOADERS = ("torch_geometric.loader.DataLoader", "torch_geometric.data.DataLoader")


def _returned(ctx: Context, call: ast.Call) -> bool:
    """The loader is what its function returns (``return DataLoader(...)``, or a name bound to
    it, alone or in a tuple, or a value of a returned dict) or yields: a helper that builds
    loaders for its callers."""
    func = ctx.function_of(call)
    if func is None:
        return False
    parent = ctx.parent(call)
    if parent.__class__ is ast.Dict and call in parent.values or parent.__class__ is ast.DictComp and parent.value is call \
            or parent.__class__ in (ast.ListComp, ast.GeneratorExp) and parent.elt is call:
        parent = ctx.parent(parent)  # return {"train": DataLoader(...), ...}; {split: DataLoader(ds) for split, ds in ...}
    if parent.__class__ in (ast.Return, ast.Yield):
        return True  # (yield DataLoader(...): loaders made lazily, one per test volume, for the callers)
    names = {t.id for t in getattr(parent, "targets", ()) if t.__class__ is ast.Name}
    if parent.__class__ is ast.Call and parent.func.__class__ is ast.Attribute and parent.func.attr == "append" \
            and parent.func.value.__class__ is ast.Name:
        names = {parent.func.value.id}  # trn_load.append(DataLoader(...)) ... return trn_load, val_load: a list of loaders
    for node in ctx.walk_body(func.body):
        if node.__class__ is ast.Return and node.value is not None:
            parts = node.value.elts if node.value.__class__ in (ast.Tuple, ast.List) else [node.value]
            if any(p is call or (p.__class__ is ast.Name and p.id in names) for p in parts):
                return True
        elif node.__class__ is ast.YieldFrom and node.value.__class__ is ast.Name and node.value.id in names:
            return True  # while True: yield from loader - an endless stream of its batches for the callers
        elif streams(node, names):
            return True  # for item in loader: yield item - the same stream, written out
    return False


def _feeds_gpu(ctx: Context, call: ast.Call) -> bool:
    """The code that builds the loader evidently trains on a GPU (see :func:`gpu_evident_for`); for
    a loader a helper builds and returns, its callers in this file do, or - none here - the file
    or the project does."""
    if gpu_evident_for(ctx, call):
        return True
    func = ctx.function_of(call)
    if func is not None and moves_near(ctx, call) and (gpu_evident(ctx) or ctx.project.targets_gpu) and not _names_cpu(ctx, func):
        return True  # the function (or its class) moves batches to a device chosen elsewhere: self.device, get_device(cfg)
    if handed_to_trainer(ctx, call) or ctx.project.targets_gpu and (
            handed_to_project_mover(ctx, call) or subclass_moves(ctx, call)):
        return True
    if (ctx.project.targets_gpu or gpu_evident(ctx)) and handed_to_local_mover(ctx, call):
        return True  # train_epoch(model, train_loader, ...) of this file loops over it and moves each batch
    if ctx.project.targets_gpu and held_for_gpu_scripts(ctx, call):
        return True  # self.data = DataLoader(...) of a wrapper class the project's GPU scripts build and read
    return _returned_to_gpu(ctx, call)


def _returned_to_gpu(ctx: Context, call: ast.Call, depth: int = 2) -> bool:
    """The loader (or what a loader helper returned) is returned by its function, whose callers in
    the file show GPU evidence - or return it again (``get_all_data_loaders`` returning what
    ``get_data_loader_folder`` built), up to ``depth`` helpers deep; with no caller in the file, a
    module-level loader builder in a file or project that names CUDA."""
    if not _returned(ctx, call):
        return False
    func = ctx.function_of(call)
    callers = [c for c in ctx.calls_named(func.name) if local_function(ctx, c) is func]
    if callers:
        return any(gpu_evident_for(ctx, c) or depth > 1 and ctx.function_of(c) is not func
                   and _returned_to_gpu(ctx, c, depth - 1) for c in callers)
    if returned_to_remote_gpu(ctx, func):
        return True  # train_iterator, ... = get_iterators(config, ...) in a script of the project that trains on a GPU
    if streaming_method(ctx, func, call):
        return gpu_evident(ctx) or ctx.project.targets_gpu  # a dataset's create_iterator(): a stream of batches for the trainer
    if ctx.parent(func).__class__ is ast.ClassDef or not any(w in func.name.lower() for w in ("load", "data")):
        return False  # a method (a framework's *_dataloader hook: its trainer decides), or not a loader builder
    return gpu_evident(ctx) or ctx.project.targets_gpu


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# what a file that feeds a device somewhere has: a move, a backward pass, a restored or evaluated model, a device
_DEVICE_WORK = (".cuda(", ".to(", ".backward(", "load_state_dict(", ".eval()", "device")


def _host_statistics(ctx: Context, call: ast.Call) -> bool:
    """A file whose only GPU evidence is a check (``use_gpu = torch.cuda.is_available()``) and
    that never moves anything, trains, restores or evaluates a model or names a device, looping
    over a loader it keeps (not returned, not handed on): it computes statistics of the data on
    the CPU (a dataset's mean and std), and no batch reaches a GPU."""
    if any(w in ctx.source for w in _DEVICE_WORK) or _returned(ctx, call):
        return False
    return only_iterated(ctx, call)


def _names_cpu(ctx: Context, func: ast.AST) -> bool:
    """A ``"cpu"`` device named in the function, and no other: it runs on the CPU on purpose."""
    for const in ctx.nodes.get(ast.Constant, ()):
        if const.value == "cpu" and func.body[0].lineno <= const.lineno <= (func.end_lineno or func.lineno):
            if _maps_location(ctx, const):
                continue  # torch.load(path, map_location="cpu"): where a checkpoint is read, not where the code runs
            # in the function's own body: its nearest enclosing def/class/lambda is the function itself
            if next((a for a in ctx.ancestors(const) if a.__class__ in _SCOPES), None) is func:
                return True
    return False


def _maps_location(ctx: Context, const: ast.AST) -> bool:
    """``map_location="cpu"`` (or ``map_location=torch.device("cpu")``)."""
    holder = ctx.parent(const)
    if holder.__class__ is ast.Call and last_name(holder.func) == "device":
        holder = ctx.parent(holder)
    return holder.__class__ is ast.keyword and holder.arg == "map_location"


class LoaderWithoutPinMemory(Rule):
    code = "TW203"
    per_call = True
    name = "dataloader-no-pin-memory"
    triggers = ("DataLoader", "loader(", "pin_memory")  # (a project helper that builds loaders: get_data_loader(...))
    doc = """\
What it flags
  `DataLoader(...)` calls (also of a project's subclass that leaves `pin_memory` to its callers:
  `class AudioDataLoader(DataLoader)`, here or in another module, and MONAI's `monai.data.DataLoader`
  - torch's class, `pin_memory` off by default - unless the file's transforms move the data to a device,
  `ToDeviced`, `EnsureTyped(..., device=device)`, or a class named
  `DataLoader` itself deriving from torch's under an alias - `class DataLoader(TorchDataLoader)` - that the scripts
  import from the project's module, or torch's own `DataLoader` imported from a project module that
  imported it: `from preprocess import DataLoader`) that do not mention `pin_memory` at all (neither by keyword nor as
  the eighth positional argument, and no `**kwargs` that could hold it) where the code evidently trains on a GPU:
  the function that builds the loader (or one enclosing it, or the module's top level) calls
  `.cuda()`, names a `"cuda"` device or uses `torch.cuda`. A loader that a helper builds and
  returns (`def get_loaders(...): ... return train_loader`, also as a value of a returned dict -
  written out or a comprehension, `{split: DataLoader(ds) for split, ds in datasets.items()}` - or
  yielded one by one, or appended to a returned list: `train_out.append(DataLoader(...))`) is judged by the
  helper's callers in the file, else by its callers in other modules (`get_iterators(...)` taken with
  `from utils import *` by a script that moves batches to a GPU) (also through a second helper of the file that returns it again: `get_all_loaders`
  returning what `get_loader_folder` built); a loader-building function nobody calls here (a
  data module) by the file or the project linted with it - also one that streams the loader's batches to its callers
  (`while True: yield from loader`, or `for item in loader: yield item`), and a method of a dataset
  class that streams batches of a loader over itself that way (`create_iterator(batch_size)`,
  whose batches the model takes with `next(...)`) in such a file or project. A function or class that moves its batches to a device chosen
  elsewhere (`self.device` set in `__init__`, `define_device(...)` of another module) counts in a
  file or project that names CUDA; so does a loader handed to a function of the file that loops
  over the argument it receives and moves data to a device itself (`train_epoch(model,
  train_loader, optimizer, args)` whose loop does `ids.to(args.device)`, the device chosen in
  `main()`; a function that only keeps the loader, or loops over it without moving anything, does
  not count); and a loader handed to a trainer class of the project
  (`BERTTrainer(bert, train_dataloader=train_data_loader)`, defined in another module, or a
  `trainer_class(...)` chosen by the config) in a project that names CUDA (a framework's
  trainer is not), and a loader handed to a function of another module of the project that
  moves data to a device (`train_epoch(epoch, model, train_loader, loss, opt)` whose loop does
  `batch[0].to(get_device())`) in such a project, or kept on `self` by a class whose subclass in
  another module of the project reads it and moves data to a device (`self.data_loader['train'] =
  DataLoader(...)` in a base `Processor`, the training loop in `class Trainer(Processor)`).
  Loaders of PyTorch Geometric (`torch_geometric.loader.DataLoader`; its batches pin
  themselves) count like torch's. A `**` splat of settings counts as not
  pinning when it cannot hold the key: a config entry (`DataLoader(data,
  **self.params['train_args'])`, `**cfg.loader`) in a project whose text never names
  pin_memory, or a local dict written out without it (`kw = dict(batch_size=64)`) in a file
  that never names pin_memory, or - in a project that never names pin_memory - the result of a
  project function that returns only dicts written out without it (`kwargs =
  os_dependent_loader_kwargs()`, returning `{}` or `{"persistent_workers": True}`); a function's
  own `**kwargs` (its callers may pass pin_memory), and settings a helper reads from a config or
  completes in place (`kw.update(...)`), are left alone - except a helper's own `**kwargs`
  (and `*args`) that none of its callers, in the file or the project, fills with pin_memory
  (`def get_loader(ds, bs, **kwargs): return DataLoader(ds, bs, **kwargs)`, every caller in
  view, none passing pin_memory or a splat of its own). The loader class a helper takes as a
  parameter (`def loader(dataset, *args, klass=DataLoader, **kwargs): return klass(dataset, *args,
  **kwargs)`) builds DataLoaders when no caller passes another. Also a call of a loader-building
  helper (of the file or project) that pins only when a flag is set (`**({'pin_memory': True}
  if cuda else {})`, `cuda=False` by default) which leaves the flag off while the batches go to
  the GPU (`utils.get_data_loader(dataset, batch_size)`, then `x.cuda()`). A CPU-only function in a file that also has GPU code (one that names only a `"cpu"` device;
  `torch.load(..., map_location="cpu")` says where a checkpoint is read, not where the code
  runs) is left alone,
  and so are methods that return loaders to a framework (`train_dataloader()`). An explicit
  `pin_memory=False` on a loader whose batches go to the GPU is flagged too (the message says it
  is set to False), and so is `pin_memory` tied to a choice that is not the device
  (`pin_memory = (args.dataset == "imagenet")`, `pin_memory=cfg.data in ("imagenet", "places")`:
  the other datasets' batches go to the GPU unpinned; a test naming the device - `args.device ==
  "cuda"`, `cfg.accelerator in ("gpu", "auto")` - is the usual idiom and left alone), also in a loader helper of another module,
  and per split of a dict comprehension (`{x: DataLoader(..., pin_memory=(True if x == 'train' else False)) for x in
  ['train', 'val']}`: the validation batches go to the GPU unpinned; a comprehension over pinned splits only is left alone);
  so is `pin_memory=config.PIN_MEMORY` read from a config object that every YAML/JSON config file the project
  ships sets to false (`PIN_MEMORY: False`; not when one sets it true, nor when a module sets it to `True` or offers
  `--pin_memory`);
  so is `pin_memory` read from a command-line option that is off by default (`pin_memory=args.pin_mem`
  with `action="store_true"`, or `pin_memory=self.pin_memory` stored from `args.pin_memory` of
  `add_argument("--pin_memory", type=int, default=0)`, in the class or a base class of another
  module, or a parameter of a loader builder whose every caller hands in such an option -
  `get_loaders(..., pin_memory=args.pin_memory)` of another module: reported at the builder's loaders;
  also a lookup in a settings dict with a `False` fallback - `in_config("pin_memory", settings, False)`,
  `settings.get("pin_memory", False)` - where every dict of the project's code that fills that key fills it
  from such an option, `{"pin_memory": namespace.pin_memory}`, or with `False`; a key only a YAML or
  JSON file fills is not judged; every run that does not pass the option copies unpinned batches), and so is `pin_memory=False` in
  the loader settings of a config module (`loader=dict(batch_size=32, pin_memory=False)`, or
  `{"pin_memory": False}` under a key) that another module of the project splats into a
  DataLoader feeding a GPU (`DataLoader(dataset, **cfg.loader)`), and the default
  `config.train.dataloader.pin_memory = False` of a config tree (yacs, `_C.DATA_LOADER.PIN_MEMORY =
  False`; at module level or at the top of a function, not under an `if`) that a DataLoader
  feeding a GPU reads (`pin_memory=config.train.dataloader.pin_memory`): the finding is at the
  setting; so is a settings dict of the file with `pin_memory` off that loaders feeding a GPU
  splat (`kwargs = {'pin_memory': False, 'num_workers': 4}`, `DataLoader(ds, **kwargs)`: one
  finding for the dict, however many loaders share it). It is left alone where a comment
  naming pin_memory on its line or the line above gives the reason. Also left alone: loaders whose batches are already on the device (the
  dataset's `__getitem__` or the `collate_fn` moves them, the `collate_fn` is handed the device
  - `lambda batch: collate(batch, args, device)`, `partial(collate, device=device)`, a
  collate function of the file whose `device` parameter defaults to one -, an identity `collate_fn=lambda x: x`
  (lists of raw items - PIL images, paths - that the consumer converts itself), or a device tensor or a `TensorDataset` of device
  tensors: `DataLoader(series.to(device)[:n])`, also tensors of a CUDA typed class -
  `torch.cuda.FloatTensor(x)`, or `TensorFloat(x)` after `TensorFloat = torch.cuda.FloatTensor if
  cuda else torch.FloatTensor`), where pinning would fail; loaders whose `collate_fn` returns NumPy arrays and no
  tensor (a function of the file or of another module, or a method of the dataset's class -
  `collate_fn=dataset.collate_fn` -, in a module that imports no torch beyond
  `torch.utils.data`, building arrays with NumPy, and calling only helpers that name no
  tensor): `pin_memory` pins tensors only; loaders whose `collate_fn` returns DGL graph batches
  (`dgl.batch(graphs)`, alone or first in the returned tuple - also from a factory,
  `collate_fn=batcher()` returning an inner `def`, or either arm of a conditional): graphs are not
  pinned; loaders of parsed JSON records - the dataset's
  `__getitem__` hands back fields of `json.load(...)`/`json.loads(...)`, also through
  `super().__getitem__(i)` - whose own `collate_fn` (also a `def` nested where the loader is
  built) regroups, filters or splits them without naming a tensor (lists of strings; without a
  `collate_fn` the default collate makes tensors of numbers and the loader counts); datasets (of this file or another module) whose
  `__getitem__` only hands back entries of lists of strings the class read (`self.names[i],
  self.countries[i]` with `self.names = [row[0] for row in csv.reader(f)]`, the stripped lines of
  a text file): batches of strings, the loop builds its tensors itself; datasets of this file whose `__getitem__` only hands back
  stored constants, `*PromptDataset` instances (text prompts for sampling, defined here or
  imported), and loaders over indices (`range(n)`, `train_idx = mask.nonzero().view(-1)`),
  whose small index batches only slice data held elsewhere: none has a tensor worth pinning;
  loaders whose every batch the loop hands only to a function (of the file, or imported from a
  module of the project) that first turns it into NumPy (`image = image.squeeze(0).cpu().numpy()`
  in a volume evaluation that copies each resized slice on its own);
  and a notebook's demo loader that is only looked at (`next(iter(loader))`, `iter(loader).next()`,
  `loader.__iter__().__next__()`, `len(loader)`,
  `dataiter = iter(loader); next(dataiter)`, or never: bound again before any use - `train_loader` rebuilt over a
  `random_split` part -, the iterator made once outside any loop and not
  stepped in one: `it = iter(loader)` every epoch, `it.next()` every step is flagged) or built in a module's `__main__` smoke test
  (not a script's `__main__` block that hands the loader to a function of the file, or of another
  module of the project - also one imported inside the block -, that moves data to a device:
  `train(args, loader, generator, device)`, `train(model, train_loader, eval_loader, ...)` of
  `train.py`), a
  loader stored under a name nothing in the file reads (beside loaders it uses; not a module-level
  loader another module of the project imports, `from common.train import *`), or one a helper
  returns whose every caller (in other modules or its own file) only hands it to methods that never read that
  argument, takes only its `.dataset` or leaves it unused (ruling R16; also a loader only appended
  to a list nothing reads but for `.append`, `test_loader_list.append(test_loader)`, or returned by
  a method into a `self` attribute no module reads, `self.train_loader, self.val_loader = self.split(...)`
  with `.val_loader` never read), and loaders handed to torch_xla
  (`pl.ParallelLoader(loader, [device])`): they feed a TPU, where pinning does not apply; and
  a loader a file only loops over itself (not returned, not handed to any function) when its only GPU evidence is a
  check (`use_gpu = torch.cuda.is_available()`) and it moves nothing, trains, restores or
  evaluates no model and names no device: it computes statistics of the data (mean and std of
  the images) on the CPU.
  The same holds for a dataset class defined in another module of the linted project
  (`from .data import PromptSet`): its `__getitem__` is read in a first pass over the project
  (`torchwise.lint.project`); the flake8 plugin, which sees one file, cannot do this.

Why it matters
  Copies from ordinary (pageable) host memory to the GPU go through a staging buffer and
  cannot overlap with computation. Batches in page-locked (pinned) memory copy faster and,
  with `.to(device, non_blocking=True)`, asynchronously while the GPU works.

Example
  model = Net().cuda()
  loader = DataLoader(ds, batch_size=256, num_workers=8)     # TW203

Fix
  `DataLoader(..., pin_memory=True)`, or `pin_memory=torch.cuda.is_available()` for code that
  also runs on CPU-only machines, and `non_blocking=True` on the copies (TW204).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        calls = ctx.calls_to(DATALOADER, *PYG_LOADERS) if "torch_geometric" in ctx.source else ctx.calls_to(DATALOADER)
        calls = [*calls, *monai_loader_calls(ctx)]  # MONAI's DataLoader (unless its transforms move data to a device)
        if ctx.source.count("Loader") > ctx.source.count("DataLoader("):
            calls = [*calls, *loader_subclass_calls(ctx)]  # AudioDataLoader(DataLoader), DataLoaderMaskingPred of the project
        calls = [*calls, *loader_class_calls(ctx)]  # klass(dataset, **kwargs) of def loader(..., klass=DataLoader, **kwargs)
        shared: set[int] = set()  # settings dicts already reported
        for call in calls:
            pin = argument(call, "pin_memory", 7)
            off = splatted_false(ctx, call) if pin is None and any(k.arg is None for k in call.keywords) else None
            if off is not None:  # kwargs = {'pin_memory': False, ...}; DataLoader(ds, **kwargs): reported at the dict
                if id(off) not in shared and _explicit_false(ctx, off) and _feeds_gpu(ctx, call) and not _nothing_to_pin(ctx, call):
                    shared.add(id(off))
                    yield ctx.finding(self.code, off, "loader settings with pin_memory=False, splatted into a DataLoader "
                                      f"feeding a GPU (line {call.lineno})", suggestion="set pin_memory=True")
                continue
            explicit = _explicit_false(ctx, pin)
            choice = pinned_for_one_choice(ctx, pin, call) if pin is not None and not explicit else None
            choice = handed_option_off(ctx, pin, call) if pin is not None and not explicit and choice is None else choice
            shipped = shipped_off(ctx, pin) if pin is not None and not explicit and choice is None else None
            choice = pin if shipped is not None else choice
            if (pin is not None and not explicit and choice is None) or has_star_args(call) and not splat_without_pin(ctx, call) \
                    and forwarded_key(ctx, call, "pin_memory") is not False or not _feeds_gpu(ctx, call):
                continue
            if _nothing_to_pin(ctx, call):
                continue
            what = ("with pin_memory=False set explicitly: pinned batches copy faster and, with non_blocking=True, overlap "
                    "with compute" if explicit else "without pin_memory: host-to-device copies are slower and cannot overlap")
            if shipped is not None:
                what = f"with pin_memory={ctx.text(pin)}, false in every config file the project ships ({shipped})"
            elif choice is not None:
                what = (f"pinned only when {ctx.text(choice)}: the other choices' batches go to the GPU unpinned"
                        if choice.__class__ is not ast.Attribute else f"pinned only when the option {ast.unparse(choice)} is set (off by default)")
            yield ctx.finding(self.code, call, f"DataLoader feeding a GPU {what}",
                              suggestion="pass pin_memory=True (or pin_memory=torch.cuda.is_available())", end_node=call.func)
        if "pin_memory" in ctx.source and ctx.project.files:
            yield from self._config_findings(ctx)
        if "pin_memory" in ctx.source or ctx.project.loader_blocks:
            for call in unpinned_helper_calls(ctx):
                if gpu_evident_for(ctx, call) and not demo_loader(ctx, call):
                    yield ctx.finding(
                        self.code, call,
                        f"{last_name(call.func)}() pins its loader only when asked, and this call leaves the flag off "
                        "while the batches go to the GPU", suggestion="pass the flag (cuda=True when on a GPU)", end_node=call.func)

    def _config_findings(self, ctx: Context) -> Iterator[Finding]:
        """``pin_memory=False`` in a config module's loader settings (``loader=dict(...,
        pin_memory=False)``, ``config.train.dataloader.pin_memory = False``) that a loader of the
        project feeding a GPU takes (see :func:`false_pin_sources`)."""
        for value, what, loaders, fix in false_pin_sources(ctx):
            if not _explicit_false(ctx, value):
                continue  # a comment gives the reason
            for other, call in loaders():
                if _feeds_gpu(other, call) and not _nothing_to_pin(other, call):
                    yield ctx.finding(self.code, value, f"{what} ({other.path.rsplit('/', 1)[-1]}:{call.lineno})", suggestion=fix)
                    break


def _nothing_to_pin(ctx: Context, call: ast.Call) -> bool:
    """A loader feeding a GPU whose pinning would not help: its batches are already on the device,
    NumPy arrays, constants, prompts or indices, raw items; or it is a demo, a statistics pass,
    unused, or fed to an XLA device."""
    dataset = argument(call, "dataset", 0)
    if loader_yields_device_batches(ctx, call, dataset):
        return True  # batches already on the device: pinning them would fail
    if numpy_collate(ctx, call):
        return True  # the collate function returns NumPy arrays: pin_memory pins tensors only
    if graph_collate(ctx, call):
        return True  # the collate function returns DGL graph batches (dgl.batch): nothing pinnable
    if text_record_loader(ctx, call):
        return True  # JSON records regrouped by a collate that makes no tensor: lists of strings
    klass = local_dataset_class(ctx, dataset, call)
    if getitem_reads_nothing(klass) or _prompt_dataset(ctx, dataset, call) or getitem_yields_text(ctx, klass):
        return True  # items are stored constants, text prompts or strings: no tensor worth pinning
    if is_index_collection(ctx, dataset, call):
        return True  # batches of indices (range(n), train_idx) that slice data held elsewhere
    if identity_collate(call):
        return True  # collate_fn=lambda x: x: raw items (PIL images, paths) that the consumer converts itself
    if demo_loader(ctx, call) and not handed_to_project_mover(ctx, call):
        return True  # only next(iter(loader)) to show a sample: nothing reaches the GPU
        # (a script's __main__ block handing it to the project's train()/evaluate() is no smoke test)
    if batches_become_numpy(ctx, call):
        return True  # each batch goes to a function that turns it into NumPy first (slices go to the GPU one by one)
    if _host_statistics(ctx, call):
        return True  # a statistics script: it checks for a GPU but no batch goes to a device
    if unused_or_xla(ctx, call) or never_read_loader(ctx, call) or unheld_loader(ctx, call):
        return True  # never iterated (also: returned, then only handed to methods that ignore it); or fed to torch_xla
    facts = project_dataset(ctx, dataset, call)
    return facts is not None and (facts.device or facts.constant or facts.text)  # its class, in another module: device tensors, constants, strings


RULE = LoaderWithoutPinMemory()
