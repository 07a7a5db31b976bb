"""TW204: copies of pinned batches to the GPU without ``non_blocking=True``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, DEF_TYPES, Context, argument, keyword, last_name, root_name
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.devices import device_move_target
from torchwise.lint.semantics.handedloaders import constructor_loader_params, copies_to_cuda_type, device_helper_call, keyword_callers_pinned, runs
from torchwise.lint.semantics.pinning import loader_pinned, pin_value
from torchwise.lint.semantics.callers import project_arguments
from torchwise.lint.semantics.remotecallers import method_calls
from torchwise.lint.semantics.values import local_function
from torchwise.lint.semantics.batchsources import items_of, mapped_structures, next_source, runs_once, unconverted
from torchwise.lint.semantics.stephooks import dassl_batch_parser, parsed_batch

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


def _pinned_source(ctx: Context, src: ast.AST, loop: ast.AST, names: dict[str, set[bool | None]], depth: int = 2) -> bool:
    """Does the loop iterate over a pinned loader? What :func:`loader_pinned` tells of the
    loader where the loop runs (its DataLoader call, a function of the file or project that
    builds it, the callers that hand it in); else every loader of that name in the file, or a
    ``*loader`` parameter in a project (or file) whose loaders are all pinned."""
    if src.__class__ is ast.Call and last_name(src.func) == "zip" and src.args and not src.keywords:
        # loader = zip(labeled_loader, unlabeled_loader): pinned when every zipped loader is
        verdicts = [_pinned_source(ctx, _loop_source(a), loop, names) for a in src.args]
        return all(verdicts)
    if src.__class__ is ast.IfExp:  # tqdm(self.dataset) if self.is_master else self.dataset: one loader either way
        return all(_pinned_source(ctx, _loop_source(a), loop, names) for a in (src.body, src.orelse))
    verdict = loader_pinned(ctx, src, loop)
    if verdict is not None:
        return verdict
    every = set().union(*names.values()) if names else set()
    if src.__class__ is ast.Name:
        b = ctx.binding_at(src.id, loop)
        outer = _listed_loaders(b) if depth > 0 and b is not None and "loader" in src.id.lower() else None
        if outer is not None:  # for i_set, loader in enumerate(self.valid_loaders): a loader of a list (handed in)
            return _pinned_source(ctx, outer, b.node, names, depth - 1)
        if b is not None and b.kind == "param" and "loader" in src.id.lower() and runs(ctx, ctx.function_of(loop)):
            if ctx.project.all_loaders_pinned or every == {True}:
                return True  # a loader handed in, where every loader of the project (or file) is pinned
    params = constructor_loader_params(ctx, src, loop)
    if params and runs(ctx, ctx.function_of(loop)):
        # self.train_loader = train_loader: a loader handed to the constructor (the file's own loaders
        # decide only when it is linted alone: in a project, the project's)
        pinned_here = ctx.project.all_loaders_pinned if ctx.project.files else every == {True}
        if pinned_here or keyword_callers_pinned(ctx, params, loader_pinned):
            return True
    found = names.get(last_name(src) or "")
    return bool(found) and found == {True}


def _listed_loaders(b) -> ast.AST | None:
    """For a loader name bound by ``for loader in loaders`` / ``for i, loader in enumerate(loaders)``
    (a loop over a list of loaders, each then iterated): the list; else None."""
    if b.kind != "for" or b.node.__class__ is not ast.For or b.value is None:
        return None
    it = b.value
    if it.__class__ is ast.Call and last_name(it.func) == "enumerate" and b.index == 1 and len(it.args) == 1:
        it = it.args[0]
    elif b.index != -1:
        return None
    return it if it.__class__ in (ast.Name, ast.Attribute) else None


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


def _wrapped_source(ctx: Context, src: ast.AST, loop: ast.AST) -> ast.AST:
    """A name bound to a wrapped loader: ``data_stream = tqdm(enumerate(data_loader, 1))``."""
    b = ctx.binding_at(src.id, loop) if src.__class__ is ast.Name else None
    if b is not None and b.kind in ("assign", "with") and b.value.__class__ is ast.Call and last_name(b.value.func) in _WRAPPERS:
        return _loop_source(b.value)  # (also with tqdm(loader) as bar: for x in bar)
    if b is not None and b.kind == "assign" and b.value.__class__ is ast.Call and last_name(b.value.func) == "zip":
        return b.value  # loader = zip(loader_l, loader_u, loader_u): the zip, each of its loaders decides
    return src


def _from_loop(ctx: Context, expr: ast.AST, loop: ast.AST, depth: int = 5) -> bool:
    """Does ``expr`` hold (part of) the batch that ``loop`` takes from its loader? Also through
    a conversion before the copy (``images.float().cuda()``), a batch unpacked from a dict or
    tuple, a conditional (``target if len(target) > 0 else None``) and the elements of a
    comprehension over the batch (``tuple(d.cuda() for d in data)``)."""
    expr = unconverted(expr)
    if expr.__class__ is ast.IfExp:
        return depth > 0 and (_from_loop(ctx, expr.body, loop, depth - 1) or _from_loop(ctx, expr.orelse, loop, depth - 1))
    if expr.__class__ in (ast.Tuple, ast.List):  # data = (data,): the batch wrapped in a tuple
        return depth > 0 and any(_from_loop(ctx, e, loop, depth - 1) for e in expr.elts)
    if expr.__class__ is not ast.Name or depth <= 0:
        return False
    b = _branch_binding(ctx, expr)
    if b is None:
        return False
    if b.kind == "for":
        if b.node is loop:
            return True
        # a comprehension over the batch (for d in data), a loop over a part of it (for clip in clips),
        # or a loop over a dict batch's items (for k, v in batch.items())
        if b.node.__class__ is ast.comprehension or b.node.__class__ is ast.For and b.index == -1 and b.value.__class__ is ast.Name:
            return _from_loop(ctx, b.value, loop, depth - 1)
        held = items_of(b)
        return held is not None and _from_loop(ctx, held, loop, depth - 1)
    value = b.value
    if b.kind == "unpack" and value is not None and value.__class__ in (ast.Tuple, ast.List) and 0 <= b.index < len(value.elts):
        value = value.elts[b.index]  # images, masks = batch["image"], batch["mask"]
    if b.kind in ("assign", "unpack") and value is not None:
        return _from_loop(ctx, value, loop, depth - 1)
    if b.kind == "param" and ctx.parent(ctx.parent(b.node)).__class__ is ast.Lambda:  # map_structure(batch, lambda x: x.to(d))
        return any(_from_loop(ctx, a, loop, depth - 1) for a in mapped_structures(ctx, expr))
    return False


def _branch_binding(ctx: Context, name: ast.Name):
    """The binding ``name`` sees, skipping one made in the other branch of an ``if`` around the use
    (``if half: x = x.to(d).half() else: x = x.to(d)``: the ``else`` copies the loop's batch)."""
    b = ctx.binding_at(name.id, name)
    if b is None:
        return None
    child = b.node
    for anc in ctx.ancestors(b.node):
        if anc.__class__ is ast.If and ctx.contains(anc, name):
            side = next(a for a in [name, *ctx.ancestors(name)] if ctx.parent(a) is anc)
            if getattr(side, "_tw_field", "") != getattr(child, "_tw_field", ""):
                return ctx.binding_at(name.id, anc)
            return b
        if isinstance(anc, DEF_TYPES):
            return b
        child = anc
    return b


class BlockingCopyFromPinned(Rule):
    code = "TW204"
    per_call = True
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
  loaders (`train_loader, val_loader = get_loaders(...)`, or an item of the list it returns:
  `loaders = utils.get_data_loaders(...)`, then `loaders[0]`; also through a settings dict it
  splats: `params = dict(..., pin_memory=True)`, `DataLoader(ds, **params)`, one per branch of an
  `if` when every one pins), or is a `*loader` parameter in a
  file or project whose every DataLoader is pinned (loaders built inside a dataset class, which
  feed that dataset's `__getitem__`, do not count; `pin_memory = True` counts), or is an
  attribute a class stores from a `*loader` parameter of its constructor (`self.dataloader =
  dataloader`, also in a base class of the file or one another module of the project defines, and
  one part of a tuple assignment, `self.train_loader, self.valid_loader = train_loader, valid_loader`) in such a project (or such a file, linted
  alone), or an attribute stored from any constructor parameter (`self.train_ds = train_ds`)
  where the constructor calls of the file hand in pinned loaders (`Trainer(train_ds, test_ds,
  rank)` after `train_ds, test_ds = loaders.load_data(...)`), or an attribute unpacked once from
  a call (`self.loader, self.class_num = get_train_loader(conf)`: that function's loaders) - or where every
  call of the project that passes that parameter by keyword (`trainer_class(...,
  train_dataloader=train_dataloader)`, a class chosen by the config) hands in a pinned loader;
  or comes from a project function that pins the loaders of the branch the call's constant selects
  (`create_dataloader(hp, args, train=True)` with `if train: return DataLoader(..., pin_memory=True)`
  and an unpinned test loader in the `else`; `if mode == "train":`, `if not train:` too),
  or is a parameter (whatever its name: `gen`) whose callers - in the
  file, or in the modules that import it (`engine.train(model, train_loader, ...)`,
  `fit_one_epoch(model, ..., gen, gen_val, ...)`; for a parameter of a class's `__call__`, the calls
  of its instances, `ev = SegEval(...)`, `ev(net, val_loader)`) - hand in pinned loaders - also when the copying file never names a loader or `pin_memory` (the
  loaders come from `get_sets(...)` of a data module). Loaders kept in a dict count: built in a
  dict comprehension (`{split: DataLoader(..., pin_memory=True) for split in splits}`) and
  iterated as `loaders[phase]`, or stored as an item (`loaders["aux"] = DataLoader(...)`; with a
  constant key, that item decides; also `self.dataloaders['train']`, and a comprehension that pins per key,
  `pin_memory=(True if x == 'train' else False)`: the 'train' item is pinned, 'val' not). Pinned also means `pin_memory=<an expression>` (`pin_memory=use_cuda`; not
  a config setting whose default a module of the project sets to False -
  `pin_memory=config.test.dataloader.pin_memory` with `config.test.dataloader.pin_memory = False`:
  TW203 reports that default, nor `config.PIN_MEMORY` false in every shipped YAML/JSON config, nor a command-line option off by default - `pin_memory=args.pin_memory`
  with `default=False`, also handed down through a parameter of the project function that builds the
  loaders, `get_loaders(..., pin_memory=args.pin_memory)`: on the default path nothing is pinned) and
  `**kwargs` dicts chosen by a condition (`{'pin_memory': True} if cuda else {}`), also in a
  helper of the file or project (`get_data_loader(ds, bs, cuda=cuda)`); a call that leaves such
  a flag at its false default (`get_data_loader(ds, bs)`) gets an unpinned loader. Loops over
  `enumerate(...)`, `tqdm(...)`, `zip(...)` of loaders (also a name bound to one:
  `stream = tqdm(enumerate(loader))` or `with tqdm(loader) as bar:`, or to a zip of loaders, `loader = zip(loader_l, loader_u)`,
  when every zipped loader is pinned; a conditional `tqdm(loader) if is_master else loader` when
  each arm is) or a logging iterator given the loader
  (`metric_logger.log_every(data_loader, 50)`) count, and so do copies in either branch of an
  `if` (`if fp16: x = x.to(device).half()` / `else: x = x.to(device)`), copies in a method the loop
  calls with the batch (one caller that hands it in is enough; also through one more method
  that hands its parameter on: `forward_loss(x, y)` calling `self.forward(x)`; also a method of a
  class, defined once in the project, that another module calls on an instance inside its loop -
  `model.train_emb(images, captions)` reaching `images.cuda()` in `forward_emb` - and a helper of
  another module handed the batch, `utils.batch_to_gpu(batch, device)`), after a
  conversion (`images.float().cuda()`, `Variable(x).cuda()`), of every part of the
  batch (`tuple(d.cuda() for d in data)`) or of every entry of a dict batch (`for key, ipt in
  inputs.items(): inputs[key] = ipt.cuda()`); in iteration-based training, the batch read inside
  the loop with `next(batch_iterator)` or `batch_iterator.__next__()` where `batch_iterator =
  iter(loader)` or `enumerate(loader)`, or an item of a list of such iterators
  (`next(iterators[task])`, `iterators[task] = iter(get_loader(...))`). Copies count also when
  the device comes from a helper named for it (`x.to(self._device())`, `get_device(t)`) or the
  batch is cast to a CUDA tensor type (`x.type(torch.cuda.FloatTensor)`, or a `Tensor` alias
  chosen by a GPU check), or is a name a function sets under `global` (`global cuda; cuda =
  torch.device('cuda')` in `main()`, `x.to(cuda)` in `train()`), or the device's kind
  (`x.to(args.device.type)`). Loaders count as pinned also when the project function that builds
  them is handed the setting (`make_data_loader(args, **kwargs)` with `kwargs = {'pin_memory':
  True, ...}`), when they reach the loop through a module the script takes with `from train
  import *`, and - for a `*loader` parameter - in a project whose every DataLoader is pinned
  through a settings dict (`{'num_workers': 4, 'pin_memory': True} if cuda else {}`). A loader
  rebuilt from another (`DataLoader(loader.dataset + extra, ..., pin_memory=loader.pin_memory)`) is
  pinned as that loader is, and not claimed pinned when lint cannot tell. Also: a batch read with
  `next()` (`batch_iter.__next__()`, an old iterator's `.next()`) and handed to a helper of another
  module (`loss_calc(pred, labels, device)`), a batch unpacked in the method it is handed to
  (`_, feat, txt = data` in `fetch_data(data)`), a `self` attribute a class unpacks from calls of one
  builder in several methods (`self.tr_set, ... = load_dataset(...)`, renewed later), and loaders
  iterated from a list (`for ds in [self.dv_set, self.tt_set]`; also a `*loader` name taken from a list
  of loaders handed in, `for i, loader in enumerate(self.valid_loaders)`, that list judged as above).
  Also the batch a Dassl trainer's `parse_batch_train`/`parse_batch_test` copies (`input =
  batch["img"]; input = input.to(self.device)`): Dassl's loaders are pinned whenever CUDA is used
  (not in a project that builds loaders with `pin_memory=False` of its own).
  A copy of a new tensor built from the batch on the host (`torch.cat([img1, img2], 1).to(device)`) is
  not flagged: the new tensor is not pinned, and `non_blocking=True` would not make that copy overlap. A loop whose body
  ends in an unconditional `break` takes one batch (a sample for a figure) and is left alone,
  and so is a function that nothing runs: one whose name occurs nowhere in the project beyond
  its `def`, in a module that other files of the project import (an unused helper).

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
        if not ctx.project.pins_memory and "pin_memory" not in ctx.source and "dassl" not in ctx.source:
            return  # (a loader pinned through a ``**kwargs`` dict names pin_memory too; Dassl pins its own)
        names = _loader_names(ctx)
        pinned: dict[int, bool] = {}

        def pinned_loop(loop: ast.AST) -> bool:
            if id(loop) not in pinned:
                it = getattr(loop, "iter", None)
                pinned[id(loop)] = it is not None and _pinned_source(ctx, _wrapped_source(ctx, _loop_source(it), loop), loop, names)
            return pinned[id(loop)]

        def batch_loop(loop: ast.AST) -> bool:
            return pinned_loop(loop) and not runs_once(loop)

        for call in ctx.calls_named("to", "cuda", "type"):
            target = device_move_target(ctx, call) if call.func.__class__ is ast.Attribute and call.func.attr != "type" else None
            if target is None and not _other_copy(ctx, call) or keyword(call, "non_blocking") is not None:
                continue
            if call.func.attr == "to" and len(call.args) > 1:
                continue  # .to(device, dtype, non_blocking...) positional forms: leave alone
            recv = call.func.value
            if not any(batch_loop(l) and _from_loop(ctx, recv, l) for l in _loops_around(ctx, call)) and not (
                    _batch_parameter(ctx, recv, call, batch_loop)) and not _from_next(ctx, recv, call, names) and not (
                    dassl_batch_parser(ctx, ctx.function_of(call)) and parsed_batch(ctx, recv, call)):
                continue
            edit = ctx.add_keyword(call, "non_blocking=True")
            yield ctx.finding(
                self.code, call,
                "copy of a pinned batch without non_blocking=True blocks the host until it finishes",
                suggestion="pass non_blocking=True",
                fix=Fix("add non_blocking=True", (edit,)) if edit is not None else None,
            )


def _loops_around(ctx: Context, call: ast.Call) -> list[ast.AST]:
    """The loops around the copy; for a copy in a lambda (whose own scope has none), those around the lambda."""
    loops = ctx.enclosing_loops(call)
    if loops:
        return loops
    lam = next((a for a in ctx.ancestors(call) if a.__class__ is ast.Lambda), None)
    return ctx.enclosing_loops(lam) if lam is not None else []


def _other_copy(ctx: Context, call: ast.Call) -> bool:
    """A copy to the device that :func:`device_move_target` does not name: ``x.to(self._device())``
    (a helper named for the device) or ``x.type(torch.cuda.FloatTensor)``."""
    if call.func.__class__ is not ast.Attribute:
        return False
    if call.func.attr == "to":
        return len(call.args) == 1 and device_helper_call(call.args[0])
    return call.func.attr == "type" and copies_to_cuda_type(ctx, call)


def _from_next(ctx: Context, recv: ast.AST, call: ast.Call, names: dict[str, set[bool | None]]) -> bool:
    """A batch read with ``next(batch_iterator)`` inside a loop (iteration-based training) from
    a pinned loader, also each element of it that a mapped lambda copies."""
    mapped = mapped_structures(ctx, recv) if recv.__class__ is ast.Name else []
    loops = _loops_around(ctx, call)
    if not loops or "next(" not in ctx.source and "__next__(" not in ctx.source:
        return False
    sources = [next_source(ctx, r, call) for r in [recv, *mapped]]
    return any(src is not None and _pinned_source(ctx, _loop_source(src), loops[-1], names) for src in sources)


def _batch_parameter(ctx: Context, recv: ast.AST, call: ast.Call, pinned_loop, depth: int = 2) -> bool:
    """The copied value is a parameter of a function of this file (``def _train_batch(self, X,
    y): X = X.to(self.device)``), or an item of one (``for key, ipt in inputs.items()``), that a
    caller passes a batch of a pinned loader's loop - directly, or through one more function of
    this file that hands its own parameter on (``forward_loss(x, y)`` calling ``self.forward(x)``).
    One such caller is enough: ``non_blocking=True`` helps it and costs the others nothing."""
    root = root_name(recv)
    func = ctx.function_of(call)
    if root is None or func is None:
        return False
    b = _branch_binding(ctx, root)  # (if basic: images = images.cuda() else: images = images.cuda())
    if b is not None and b.kind == "for":
        held = items_of(b)
        root = root_name(held) if held is not None else None
        b = ctx.binding_at(root.id, held) if root is not None else None
    for _ in range(2):  # _, feat, feat_len, txt = data: a part of the parameter unpacked first
        if b is None or b.kind not in ("assign", "unpack") or b.value.__class__ is not ast.Name:
            break
        root = b.value
        b = ctx.binding_at(root.id, b.node)
    if b is None or b.kind != "param" or root.id in ("self", "cls"):
        return False
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    method = ctx.parent(func).__class__ is ast.ClassDef and params[:1] in (["self"], ["cls"])
    index = params.index(root.id) if root.id in params else None
    callers = [c for c in ctx.calls_named(func.name) if local_function(ctx, c) is func and ctx.function_of(c) is not func]
    for caller in callers:
        shift = 1 if method and caller.func.__class__ is ast.Attribute else 0
        value = argument(caller, root.id, index - shift if index is not None and index >= shift else None)
        if value is None:
            continue
        if any(pinned_loop(l) and _from_loop(ctx, value, l) for l in ctx.enclosing_loops(caller)):
            return True
        if depth > 1 and _batch_parameter(ctx, value, caller, pinned_loop, depth - 1):
            return True
    # model.train_emb(images, captions) in another module's loop over its pinned loader
    # (utils.batch_to_gpu(batch, device) of another module, too)
    remote = method_calls(ctx, func, root.id) if method else project_arguments(ctx, func, root.id, star=True)
    return any(_remote_batch(other, value, caller) for other, value, caller in remote)


def _remote_batch(ctx: Context, value: AST, call: ast.Call) -> bool:
    """Is ``value``, passed at ``call`` (in another file), the batch of a pinned loader's loop there?"""
    loops = [l for l in ctx.enclosing_loops(call) if getattr(l, "iter", None) is not None and not runs_once(l)]
    names = _loader_names(ctx) if loops or "next" in ctx.source else {}
    if value.__class__ is ast.Name and _from_next(ctx, value, call, names):
        return True  # loss_calc(pred, labels, device) with labels from batch_iter.__next__() in a step loop
    if not loops:
        return False
    return any(_from_loop(ctx, value, l) and _pinned_source(ctx, _wrapped_source(ctx, _loop_source(l.iter), l), l, names)
               for l in loops)


RULE = BlockingCopyFromPinned()
