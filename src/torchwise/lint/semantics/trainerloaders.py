"""A loader handed to a trainer class of the project (for TW203): the trainer moves its batches to
the device (``BERTTrainer(bert, ..., train_dataloader=train_data_loader)``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name

_FRAMEWORKS = ("pytorch_lightning", "lightning", "transformers", "accelerate", "catalyst", "ignite", "fastai", "keras")


# a trainer class chosen by the config: trainer_class = initialize_config(config["trainer"])
_TRAINER_CLASSES = frozenset({"trainer_class", "trainer_cls"})


def handed_to_trainer(ctx: Context, call: ast.Call) -> bool:
    """The loader is handed to a trainer class of the project (``BERTTrainer(bert, ...,
    train_dataloader=train_data_loader)``, defined in another module, or ``trainer_class(...)``
    chosen by the config) in a project that targets a GPU: the trainer moves its batches to the
    device. (A framework's trainer is left alone.)"""
    parent = ctx.parent(call)
    if parent.__class__ is ast.IfExp:
        parent = ctx.parent(parent)  # loader = DataLoader(...) if test_dataset is not None else None
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name \
            or not ctx.project.targets_gpu:
        return False
    name = parent.targets[0].id
    for use in ctx.nodes.get(ast.Name, ()):
        if use.id != name or use.ctx.__class__ is not ast.Load:
            continue
        user = ctx.parent(use)
        if user.__class__ is ast.keyword:
            user = ctx.parent(user)
        callee = last_name(user.func) if user.__class__ is ast.Call else None
        if callee and (callee.endswith("Trainer") or callee.lower() in _TRAINER_CLASSES) \
                and not (ctx.qualname(user.func) or "").startswith(_FRAMEWORKS):
            return True
    return False
