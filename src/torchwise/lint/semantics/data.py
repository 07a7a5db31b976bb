"""Datasets and loaders: what a loader's dataset is and yields (items on the device, slices of
an in-memory tensor, stored constants, index collections), in this file or, through the project
facts, in another module of the project."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context, last_name, root_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.collates import device_collate
from torchwise.lint.semantics.cudatyped import cuda_typed
from torchwise.lint.semantics.files import in_demo_main
from torchwise.lint.semantics.devices import device_move_target, is_device_tensor
from torchwise.lint.semantics.values import body_nodes, local_function, producing_call


def local_dataset_class(ctx: Context, expr: AST | None, use: AST) -> ast.ClassDef | None:
    """The class of this file that ``expr`` (a loader's dataset) is an instance of, if evident."""
    if expr is None:
        return None
    built = ctx.constructed_from(ctx.resolve(expr, use), use)
    if built is None or not built.startswith("local:"):
        return None
    return ctx.local_classes.get(built[6:])


def getitem_of(klass: ast.ClassDef | None) -> ast.FunctionDef | None:
    if klass is None:
        return None
    for item in klass.body:
        if item.__class__ is ast.FunctionDef and item.name == "__getitem__":
            return item
    return None


def moves_to_device(ctx: Context, fn: AST, follow_calls: int = 1) -> bool:
    """Does ``fn``'s body put tensors on a device (``.cuda()``, ``.to(device)``), itself or
    through a helper of this file it calls?"""
    for node in body_nodes(ctx, fn, follow_calls=follow_calls):
        if node.__class__ is ast.Call and device_move_target(ctx, node) is not None:
            return True
    return False


def _collate_function(ctx: Context, loader: ast.Call) -> AST | None:
    """The function of this file a loader's ``collate_fn`` runs (through ``partial(fn, ...)``)."""
    value = None
    for k in loader.keywords:
        if k.arg == "collate_fn":
            value = k.value
    if value is None:
        return None
    for _ in range(3):
        if value.__class__ is ast.Name:
            b = ctx.binding_at(value.id, loader)
            if b is not None and b.kind == "assign" and b.value is not None:
                value = b.value
                continue
            break
        if value.__class__ is ast.Call and last_name(value.func) == "partial" and value.args:
            value = value.args[0]
            continue
        break
    if value.__class__ is ast.Lambda:
        return value
    if value.__class__ in (ast.Name, ast.Attribute):
        fake = ast.Call(func=value, args=[], keywords=[])
        return local_function(ctx, fake)
    return None


def loader_yields_device_batches(ctx: Context, loader: ast.Call, dataset: AST | None) -> bool:
    """Do the loader's batches come out already on a device? Its ``collate_fn`` (a function of
    this file, also through ``partial``) or the dataset's ``__getitem__`` moves them there, the
    collate function is handed the device (``lambda b: collate(b, args, device)``), or the
    dataset is a device tensor or wraps tensors that are on a device (``TensorDataset(x.to(device))``)."""
    collate = _collate_function(ctx, loader)
    if collate is not None and moves_to_device(ctx, collate) or device_collate(ctx, loader):
        return True  # (device_collate: the collate function is handed the device)
    getitem = getitem_of(local_dataset_class(ctx, dataset, loader))
    if getitem is not None and moves_to_device(ctx, getitem):
        return True
    if dataset is not None:
        if is_device_tensor(ctx, dataset, loader):
            return True  # DataLoader(train_y) where train_y = series.to(device): slices of a device tensor
        made = producing_call(ctx, dataset, loader)
        if made is not None and last_name(made.func) == "TensorDataset":
            return any(is_device_tensor(ctx, a, made) or cuda_typed(ctx, a, made) for a in made.args)
    return False


_INDEX_NAME = lazy_compile(r"(^|_)(idx|index|indices|perm)$", re.I)
_INDEX_MAKERS = frozenset({"nonzero", "arange", "randperm", "argwhere"})


def is_index_collection(ctx: Context, expr: AST | None, use: AST, depth: int = 4) -> bool:
    """Does a loader iterate over positions rather than data: ``range(n)``, a tensor of indices
    (``mask.nonzero().view(-1)``, ``torch.arange``/``randperm``), or a name such as ``train_idx``?
    Its batches are small index tensors used to slice data held elsewhere."""
    if expr is None or depth <= 0:
        return False
    cls = expr.__class__
    if cls is ast.Call:
        func = expr.func
        name = last_name(func)
        if func.__class__ is ast.Name and name == "range":
            return True
        if name in _INDEX_MAKERS:
            return True
        if func.__class__ is ast.Attribute and name in ("view", "reshape", "flatten", "squeeze", "to", "long", "cpu", "split"):
            return is_index_collection(ctx, func.value, use, depth - 1)
        return False
    if cls is ast.Subscript:
        return is_index_collection(ctx, expr.value, use, depth - 1)
    if cls is ast.Name:
        if _INDEX_NAME.search(expr.id):
            return True
        b = ctx.binding_at(expr.id, use)
        if b is not None and b.kind == "assign" and b.value is not None:
            return is_index_collection(ctx, b.value, b.node, depth - 1)
        return False
    if cls is ast.Attribute:
        return bool(_INDEX_NAME.search(expr.attr))
    return False


_TENSOR_METHODS = frozenset({"view", "reshape", "long", "float", "int", "clone", "unsqueeze", "squeeze", "contiguous",
                             "flatten", "t", "item", "type", "to", "bool", "half", "size", "numel", "dim"})


# Calls that only pick where to slice: a random offset, index arithmetic.
_INDEX_DRAWS = frozenset({
    "torch.randint", "random.randint", "random.randrange", "random.random", "numpy.random.randint",
    "numpy.random.choice", "len", "min", "max", "int",
})


def getitem_slices_only(ctx: Context, klass: ast.ClassDef) -> bool:
    """``__getitem__`` that only slices stored tensors (``return self.x[i], self.y[i]``, index
    arithmetic or a random offset, ``.view``/``.long()``, a move to the device): no file
    reading, decoding or transform calls."""
    item = getitem_of(klass)
    if item is None:
        return False
    if not any(n.__class__ is ast.Subscript for n in ast.walk(item)):
        return False
    for node in ast.walk(item):
        if node.__class__ is ast.Call:
            func = node.func
            if func.__class__ is ast.Attribute and (func.attr in _TENSOR_METHODS or func.attr == "cuda"):
                continue
            q = ctx.qualname(func) or (func.id if func.__class__ is ast.Name else None)
            if q in _INDEX_DRAWS:
                continue
            return False
        elif node.__class__ in (ast.For, ast.While, ast.With, ast.Try):
            return False
    return True


def getitem_reads_nothing(klass: ast.ClassDef | None) -> bool:
    """A dataset whose ``__getitem__`` hands back stored constants and the index (a prompt
    dataset for sampling): no call, no indexing into stored data, so no per-item tensor."""
    getitem = getitem_of(klass)
    if getitem is None:
        return False
    for node in ast.walk(getitem):
        if node.__class__ is ast.Call:
            return False
        if node.__class__ is ast.Subscript and node.ctx.__class__ is ast.Load:
            return False
    return True


_EXTERNAL_ROOTS = ("torch", "torchvision", "torchaudio", "torchtext", "datasets", "transformers")


def imported_class_name(ctx: Context, func: AST) -> str | None:
    """The name a called class was imported under in its own module (``from .data import
    Shards as S`` -> ``Shards``; ``data.Shards``/``pkg.data.Shards`` -> ``Shards``), when it comes
    from an import of this file that is not torch or another library listed here; else None."""
    if func.__class__ is ast.Name:
        if func.id in ctx.local_classes:
            return None
        for node in ctx.nodes.get(ast.ImportFrom, ()):
            for alias in node.names:
                if (alias.asname or alias.name) == func.id:
                    if not node.level and (node.module or "").split(".", 1)[0] in _EXTERNAL_ROOTS:
                        return None
                    return alias.name
        return None
    if func.__class__ is ast.Attribute:
        root = root_name(func)
        if root is None:
            return None
        q = ctx.qualname(func)
        if q is not None:
            return None if q.split(".", 1)[0] in _EXTERNAL_ROOTS else func.attr
        # a module imported relatively (from . import data; data.Shards(...))
        for node in ctx.nodes.get(ast.ImportFrom, ()):
            if node.level and any((a.asname or a.name) == root.id for a in node.names):
                return func.attr
    return None


def project_dataset(ctx: Context, expr: AST | None, use: AST):
    """The project facts (:class:`~torchwise.lint.project.DatasetFacts`) of the dataset class,
    defined in another module of the project, that ``expr`` is an instance of; None when the
    class is not evident or not the project's."""
    if expr is None or not ctx.project.datasets:
        return None
    if expr.__class__ is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
        expr = ctx.single_self_value(expr, use)
        if expr is None:
            return None
    call = producing_call(ctx, expr, use)
    if call is None:
        return _split_of(ctx, expr, use)
    return ctx.project.dataset(imported_class_name(ctx, call.func))


def _split_of(ctx: Context, expr: AST, use: AST):
    """``train_set, dev_set, test_set = mod.SpeechDataset.splits(config)``: an element of what a
    method called on a project dataset class returns (a classmethod that builds the splits)."""
    if expr.__class__ is not ast.Name:
        return None
    b = ctx.binding_at(expr.id, use)
    call = b.value if b is not None and b.kind == "unpack" else None
    if call.__class__ is not ast.Call or call.func.__class__ is not ast.Attribute or not call.func.attr[:1].islower():
        return None
    owner = call.func.value
    if owner.__class__ not in (ast.Name, ast.Attribute) or not (last_name(owner) or "")[:1].isupper():
        return None
    return ctx.project.dataset(imported_class_name(ctx, owner))


def demo_loader(ctx: Context, call: ast.Call) -> bool:
    """A loader bound to a name that is only ever looked at - ``next(iter(loader))`` to show one
    batch, ``len(loader)``, the name alone on a line of a notebook - never looped over or handed
    to a function: no batch of it reaches the GPU; or one built in the ``__main__`` smoke test
    of a library module (:func:`~torchwise.lint.semantics.files.in_demo_main`)."""
    if in_demo_main(ctx, call) and not _handed_to_mover(ctx, call):
        return True
    parent = ctx.parent(call)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    name = parent.targets[0].id
    scope = ctx.scope_of(call)
    first, last = (scope.body[0].lineno, scope.end_lineno or scope.lineno) if scope.__class__ is not ast.Module else (1, 1 << 30)
    uses = [n for n in ctx.nodes.get(ast.Name, ()) if n.id == name and n.ctx.__class__ is ast.Load
            and first <= n.lineno <= last and (scope.__class__ is ast.Module or ctx.contains(scope, n))]
    seen = False
    for use in uses:
        b = ctx.binding_at(name, use)
        if b is None or b.node is not parent and not _other_branch(ctx, parent, b.node, use):
            continue  # another binding of the name (or a parameter of the same name)
        seen = True
        holder = ctx.parent(use)
        if holder.__class__ in (ast.Expr, ast.Tuple) and (holder.__class__ is ast.Expr or ctx.parent(holder).__class__ is ast.Expr):
            continue  # shown in a notebook cell
        if holder.__class__ is ast.Call and last_name(holder.func) in ("len", "print") and use in holder.args:
            continue
        if holder.__class__ is ast.Call and last_name(holder.func) == "iter" and ctx.parent(holder).__class__ is ast.Call \
                and last_name(ctx.parent(holder).func) == "next":
            continue  # img, label = next(iter(loader))
        if holder.__class__ is ast.Call and last_name(holder.func) == "iter" and _old_next(ctx, holder):
            continue  # x, _ = iter(loader).next(): the Python 2 spelling
        if _dunder_next(ctx, holder):
            continue  # img, label = loader.__iter__().__next__()
        if holder.__class__ is ast.Call and last_name(holder.func) == "iter" and _only_stepped(ctx, ctx.parent(holder)):
            continue  # dataiter = iter(loader); images, labels = next(dataiter)
        if _takes_first_samples(ctx, use):
            continue  # for i, x in enumerate(loader): ...; if i == n - 1: break - a few samples, once
        return False
    return seen or _rebound_unread(ctx, parent, scope)


def _other_branch(ctx: Context, mine: AST, other: AST, use: AST) -> bool:
    """``other`` binds the name in another branch of an ``if``/``elif`` chain that holds ``mine``
    (``if args.data == 'cifar10': test_loader = ...`` / ``elif ...: test_loader = ...``): the use
    after the chain sees whichever branch ran, ``mine`` included."""
    if other.__class__ is not ast.Assign:
        return False
    for node in ctx.ancestors(mine):
        if node.__class__ is ast.If and ctx.contains(node, other):
            if ctx.contains(node, use):
                return False  # a use inside the chain sees its own branch's loader
            in_body = any(ctx.contains(s, mine) or s is mine for s in node.body)
            return in_body != any(ctx.contains(s, other) or s is other for s in node.body)
    return False


def _old_next(ctx: Context, call: ast.Call) -> bool:
    """``call`` is ``iter(loader)`` in ``iter(loader).next()``: one batch drawn."""
    step = ctx.parent(call)
    return step.__class__ is ast.Attribute and step.attr == "next" and ctx.parent(step).__class__ is ast.Call \
        and not ctx.parent(step).args


def _rebound_unread(ctx: Context, assign: ast.Assign, scope: AST) -> bool:
    """No use sees ``name = DataLoader(...)`` and a later statement of the same body binds the
    name again (``train_loader`` rebuilt over a ``random_split`` part before any loop): a dead
    store, the loader is never iterated (ruling R16)."""
    body = getattr(ctx.parent(assign), "body", None)
    if ctx.parent(assign) is not scope or not isinstance(body, list) or assign not in body:
        return False
    name = assign.targets[0].id
    return any(s.__class__ is ast.Assign and any(t.__class__ is ast.Name and t.id == name for t in s.targets)
               for s in body[body.index(assign) + 1:])


def _dunder_next(ctx: Context, holder: AST) -> bool:
    """``holder`` is ``loader.__iter__`` in ``loader.__iter__().__next__()``: one batch drawn."""
    if holder.__class__ is not ast.Attribute or holder.attr != "__iter__":
        return False
    call = ctx.parent(holder)
    step = ctx.parent(call) if call.__class__ is ast.Call and not call.args else None
    return step.__class__ is ast.Attribute and step.attr == "__next__" and ctx.parent(step).__class__ is ast.Call


def _handed_to_mover(ctx: Context, call: ast.Call) -> bool:
    """The loader, bound to a name, is handed to a function of this file that moves data to a
    device (``train(args, loader, generator, device)``, ``extract_features(loader, net,
    device)``): a script's ``__main__`` block that runs its own training, not a smoke test."""
    parent = ctx.parent(call)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    key = ("sem:handed-to-mover", id(call))
    if key in ctx._cache:
        return ctx._cache[key]
    name, found, tried = parent.targets[0].id, False, set()
    for use in ctx.nodes.get(ast.Name, ()):
        if use.id != name or use.ctx.__class__ is not ast.Load:
            continue
        holder = ctx.parent(use)
        if holder.__class__ is ast.keyword:
            holder = ctx.parent(holder)
        if holder.__class__ is ast.Call and holder.func.__class__ is ast.Name and holder.func.id not in tried:
            tried.add(holder.func.id)
            target = local_function(ctx, holder)
            if target is not None and target.__class__ is ast.FunctionDef and moves_to_device(ctx, target, follow_calls=0):
                found = True
                break
    ctx._cache[key] = found
    return found


def _takes_first_samples(ctx: Context, use: AST) -> bool:
    """``for i, x in enumerate(loader):`` outside any other loop, training nothing (no backward),
    that stops at ``if i == n - 1: break`` (or ``i >= n``): the first few samples taken once,
    to dump reference outputs before training."""
    holder = ctx.parent(use)
    if holder.__class__ is not ast.Call or last_name(holder.func) != "enumerate" or holder.args[:1] != [use]:
        return False
    loop = ctx.parent(holder)
    if loop.__class__ is not ast.For or loop.iter is not holder or ctx.enclosing_loops(loop):
        return False
    target = loop.target
    if target.__class__ is not ast.Tuple or not target.elts or target.elts[0].__class__ is not ast.Name:
        return False
    index = target.elts[0].id
    stops = False
    for node in ctx.walk_body(loop.body):
        if node.__class__ is ast.Call and last_name(node.func) == "backward":
            return False
        if node.__class__ is ast.If and node.body and node.body[0].__class__ is ast.Break \
                and node.test.__class__ is ast.Compare and node.test.left.__class__ is ast.Name \
                and node.test.left.id == index and node.test.ops[0].__class__ in (ast.Eq, ast.GtE, ast.Gt):
            stops = True
    return stops


def _only_stepped(ctx: Context, assign: AST) -> bool:
    """``it = iter(loader)`` whose name is only ever passed to ``next(it)`` (or ``it.next()``):
    a batch or two taken to look at - not when the iterator is made again in a loop (every epoch)
    or stepped in one: ``train_iter = iter(train_loader)`` per epoch, ``train_iter.next()`` per step."""
    if assign.__class__ is not ast.Assign or len(assign.targets) != 1 or assign.targets[0].__class__ is not ast.Name \
            or ctx.enclosing_loops(assign):
        return False
    name = assign.targets[0].id
    uses = [n for n in ctx.nodes.get(ast.Name, ()) if n.id == name and n.ctx.__class__ is ast.Load]
    for use in uses:
        if ctx.enclosing_loops(use):
            return False
        holder = ctx.parent(use)
        if holder.__class__ is ast.Call and last_name(holder.func) == "next" and use in holder.args:
            continue
        if holder.__class__ is ast.Attribute and holder.attr == "next":
            continue
        return False
    return True


_LOADER_BASES = ("DataLoader",)
