"""Loads that read back what the same run wrote, in the same process and onto the same device
(TW402, ruling R2): a ``torch.save`` of the same path (or file name, or file-name template)
earlier in the same scope, a save helper's target, the best checkpoint reloaded after a training
call, a path named afresh for the run (``uuid``), a path a helper of the file saves to and
returns, and a path a trainer object keeps (``trainer.snapshot_path``) read back after that
trainer's ``train()`` in the same scope."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, argument, last_name
from torchwise.lint.semantics.checkpoints import file_names, saved_on_host
from torchwise.lint.semantics.savefacts import save_index
from torchwise.lint.semantics.steps import training_calls
from torchwise.lint.semantics.values import local_function


# project helpers that save a model under a name they are given
_SAVE_HELPERS = ("save_model", "save_checkpoint", "save_state", "save_weights", "save_network")


def returned_by_saver(ctx: Context, load: ast.Call) -> bool | None:
    """``path = preprocess(dataset)`` where ``preprocess`` (a function of this file) saves to the
    path it returns: whether that save writes host data (None when the path does not come so);
    True also when that function trains (``best_path = self._train(...)``, saving the best state
    during its loop): the caller reloads what this process wrote on its device."""
    path = ctx.resolve(argument(load, "f", 0), load)
    if path is None or path.__class__ is not ast.Call:
        return None
    func = local_function(ctx, path)
    if func is None or func.__class__ is ast.Lambda:
        return None
    returned = {ctx.text(n.value) for n in ast.walk(func) if n.__class__ is ast.Return and n.value is not None}
    saves = [c for c in ctx.calls_to("torch.save") if ctx.function_of(c) is func and ctx.text(argument(c, "f", 1) or c) in returned]
    if saves and any(ctx.function_of(c) is func for c in training_calls(ctx)):
        return True  # `best = self._train(...)` saved the best model during its training and returns its path: this run's file
    return all(saved_on_host(ctx, c) for c in saves) if saves else None


def reload_in_process(ctx: Context, load: ast.Call, names: set[str]) -> bool:
    """The load reads back what this same run wrote on the same device: a ``torch.save`` of the
    same path (or file name) earlier in the same function or script, or - after the training
    loop of its function - a file the project saves (the best checkpoint an early-stopping
    helper wrote during training)."""
    scope = ctx.scope_of(load)
    path = argument(load, "f", 0)
    text = ctx.text(path) if path is not None else None
    opened = _opened(ctx, path)
    for save in ctx.calls_named("save", *_SAVE_HELPERS):
        if ctx.scope_of(save) is not scope or (save.lineno, save.col_offset) >= (load.lineno, load.col_offset):
            continue
        if ctx.qualname(save.func) == "torch.save":
            target = argument(save, "f", 1)
            if target is not None and (ctx.text(target) == text or names & file_names(ctx, target, save)
                                       or _same_template(target, path) or opened and _opened(ctx, target) == opened):
                return True
        elif names and any(names & file_names(ctx, a, save) for a in [*save.args, *(k.value for k in save.keywords)]):
            return True  # utils.save_model(model=m, target_dir="models", model_name="m.pth"), then this load
    if _best_after_training_call(ctx, load, scope, path):
        return True
    if not names:
        return False
    saved = set(save_index(ctx.project)) if ctx.project.save_files else set()
    if not names & saved:
        return False
    if scope.__class__ is ast.Module:  # a script that called its training function first (`train()` in its epoch loop)
        trainers = {ctx.function_of(c).name for c in training_calls(ctx) if ctx.function_of(c) is not None}
        return any(ctx.scope_of(c) is scope and c.lineno < load.lineno and local_function(ctx, c) is not None
                   for c in ctx.calls_named(*trainers)) if trainers else False
    return any(ctx.function_of(c) is scope and c.lineno < load.lineno for c in training_calls(ctx))


def fresh_name(ctx: Context, load: ast.Call) -> bool:
    """The load reads a path named afresh for this run (``checkpt_file = 'pretrained/' +
    uuid.uuid4().hex + '.pt'``) that this file saves to: no other run or machine wrote it, so
    it restores onto the device this run saved it from."""
    path = argument(load, "f", 0)
    if path is None or path.__class__ is not ast.Name:
        return False
    value = ctx.resolve(path, load)
    if value is None or not any(n.__class__ is ast.Call and (ctx.qualname(n.func) or "").startswith("uuid.")
                                for n in ast.walk(value)):
        return False
    return any(ctx.text(argument(save, "f", 1) or save) == path.id for save in ctx.calls_to("torch.save"))


_TRAINING_FUNCTIONS = frozenset({"train", "fit", "train_model", "train_and_evaluate", "run_training"})


def _best_after_training_call(ctx: Context, load: ast.Call, scope: ast.AST, path: ast.AST | None) -> bool:
    """``best_acc = train.train(train_iter, dev_iter, cnn, args)`` and then, in the same function,
    ``torch.load(best_path)`` where the path names the best checkpoint: the run reloads what its
    training just wrote, in the same process and on the same device."""
    if path is None:
        return False
    text = ctx.text(path)
    if path.__class__ is ast.Name:
        b = ctx.binding_at(path.id, load)
        text += " " + (ctx.text(b.value) if b is not None and b.value is not None else "")
    if "best" not in text.lower():
        return False
    return any(last_name(c.func) in _TRAINING_FUNCTIONS and ctx.scope_of(c) is scope and c.lineno < load.lineno
               for c in ctx.nodes.get(ast.Call, ()))


def _opened(ctx: Context, node: ast.AST | None) -> str | None:
    """The path text of a file object: ``open(name, "rb")``, or ``f`` bound by ``with open(name,
    "wb") as f:`` (``torch.save(model, f)`` there, ``torch.load(open(name, "rb"))`` later)."""
    if node is not None and node.__class__ is ast.Name:
        with_item = next((i for w in ctx.nodes.get(ast.With, ()) for i in w.items
                          if i.optional_vars.__class__ is ast.Name and i.optional_vars.id == node.id
                          and any(a is w for a in ctx.ancestors(node))), None)
        node = with_item.context_expr if with_item is not None else None
    if node is None or node.__class__ is not ast.Call or node.func.__class__ is not ast.Name or node.func.id != "open" \
            or not node.args:
        return None
    return ctx.text(node.args[0])


def _same_template(saved: ast.AST, loaded: ast.AST | None) -> bool:
    """``torch.save(m, '{}.pkl'.format(epoch))`` and later ``torch.load('{}.pkl'.format(best_epoch))``:
    the same file-name pattern filled in with the epoch to keep."""
    if loaded is None or saved.__class__ is not ast.Call or loaded.__class__ is not ast.Call:
        return False
    a, b = saved.func, loaded.func
    return a.__class__ is ast.Attribute and b.__class__ is ast.Attribute and a.attr == b.attr == "format" \
        and a.value.__class__ is ast.Constant and b.value.__class__ is ast.Constant and a.value.value == b.value.value


def trainer_attribute_reload(ctx: Context, load: ast.Call) -> bool:
    """``torch.load(trainer.snapshot_path)`` after ``trainer.train(args.epochs)`` in the same
    function or script: the path is an attribute of the object that trained in this process, and a
    module of the project saves to that attribute (``torch.save(self.model, self.snapshot_path)``)
    - the run reads back what its own training wrote, on the same device."""
    path = argument(load, "f", 0)
    if path is None or path.__class__ is not ast.Attribute or path.value.__class__ is not ast.Name:
        return False
    owner, attr = path.value.id, path.attr
    scope = ctx.scope_of(load)
    trained = any(c.func.__class__ is ast.Attribute and c.func.attr in _TRAINING_FUNCTIONS
                  and c.func.value.__class__ is ast.Name and c.func.value.id == owner
                  and ctx.scope_of(c) is scope and c.lineno < load.lineno for c in ctx.calls_named(*_TRAINING_FUNCTIONS))
    if not trained:
        return False
    texts = [t for _, t in ctx.project.save_files] if ctx.project.save_files else [ctx.source]
    return any(f"self.{attr}" in t for t in texts)
