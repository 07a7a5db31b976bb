"""Models that put themselves on the GPU (TW402): a class of the project whose constructor moves
its networks to CUDA - ``if torch.cuda.is_available(): self.img_enc.cuda()`` in
``VSEModel.__init__`` - so a script that builds one (``model = VSEModel(opt)``) and restores a
checkpoint into it (``model.load_state_dict(ckpt["model"])``) runs on the GPU, although the
script itself, an evaluation helper or a training script, names no device at all. The class may
live in another module of the project (:mod:`.projectlayers`)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.devices import device_move_target
from torchwise.lint.semantics.loadsites import restored_into
from torchwise.lint.semantics.projectlayers import project_class


def restores_self_moving_model(ctx: Context, load: ast.Call) -> bool:
    """``load`` is restored (``X.load_state_dict``) into a model bound in the same scope to a
    project class whose ``__init__`` moves it (or its parts) to the GPU."""
    if not ctx.project.targets_gpu:
        return False
    call = restored_into(ctx, load)
    receiver = call.func.value if call is not None and call.func.__class__ is ast.Attribute else None
    if receiver.__class__ is not ast.Name:
        return False
    bound = ctx.binding_at(receiver.id, call)
    value = bound.value if bound is not None and bound.kind == "assign" else None
    if value.__class__ is not ast.Call or value.func.__class__ not in (ast.Name, ast.Attribute):
        return False
    found = project_class(ctx, value.func)
    return found is not None and _moves_itself(*found)


def _moves_itself(where: Context, klass: ast.ClassDef) -> bool:
    key = ("selfmoving", id(klass))
    if key not in where._cache:
        init = next((i for i in klass.body if i.__class__ is ast.FunctionDef and i.name == "__init__"), None)
        where._cache[key] = init is not None and any(
            device_move_target(where, c) is not None and where.function_of(c) is init and _on_self(c.func.value)
            for c in where.calls_named("cuda", "to"))
    return where._cache[key]


def _on_self(expr: ast.AST) -> bool:
    """``self.img_enc`` / ``self``: the object's own networks, not a tensor argument."""
    while expr.__class__ is ast.Attribute:
        expr = expr.value
    return expr.__class__ is ast.Name and expr.id == "self"
