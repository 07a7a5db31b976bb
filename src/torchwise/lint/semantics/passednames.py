"""The file a load reads when its path is a parameter (TW402): ``torch.load(backbone_file)`` in
``PSPNet.__init__(self, ..., backbone_file, ...)`` reads what the file's calls pass
(``PSPNet(backbone_name="A0", backbone_file="A0-train.pth")``). A demo that saves its converted
model from the host and reads back that file still loads, through the parameter, the released
training weights - another file, which its own saves say nothing about."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, argument
from torchwise.lint.semantics.callers import caller_arguments
from torchwise.lint.semantics.checkpoints import file_names


def passed_file_names(ctx: Context, load: ast.Call) -> set[str]:
    """The file names this file's calls pass for the parameter ``load`` reads its path from
    (``None`` passed is no file); empty when the path is no parameter, or a call passes something
    whose name is unknown."""
    path = argument(load, "f", 0)
    func = ctx.function_of(load)
    if path.__class__ is not ast.Name or func is None or func.__class__ is not ast.FunctionDef:
        return set()
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if path.id not in params:
        return set()
    bound = ctx.binding_at(path.id, load)
    if bound is None or bound.kind != "param":
        return set()
    cls = ctx.parent(func) if func.name == "__init__" else None
    cls = cls if cls.__class__ is ast.ClassDef else None
    name = cls.name if cls is not None and func.name == "__init__" else func.name
    out: set[str] = set()
    for _, value, call in caller_arguments(ctx, func, path.id, name=name, shift="self"):
        if value is None or value.__class__ is ast.Constant and value.value is None:
            continue
        names = file_names(ctx, value, call)
        if not names:
            return set()
        out |= names
    return out


def passed_other_file(ctx: Context, load: ast.Call) -> bool:
    """The path is a parameter its callers here fill with files this file never saves
    (``PSPNet(backbone_file="A0-train.pth")``): its host-data saves say nothing of them."""
    passed = passed_file_names(ctx, load) if "torch.save" in ctx.source else set()
    return bool(passed) and not passed & {n for save in ctx.calls_to("torch.save")
                                          for n in file_names(ctx, argument(save, "f", 1), save)}
