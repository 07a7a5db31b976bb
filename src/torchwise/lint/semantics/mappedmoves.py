"""A structure of tensors moved to the device by mapping a move over it: ``nest.map(lambda t:
t.to(device), batch)``, ``_nested_map(features, lambda x: x.to(device) if isinstance(x,
torch.Tensor) else x)``, ``tree_map(lambda x: x.cuda(), batch)``. What such a call hands back holds
the device tensors (the mapping helper's own code is not read: the lambda says what it does)."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST


def maps_a_move(call: ast.Call, moves: Callable[[ast.Call], bool]) -> bool:
    """Is one argument of ``call`` a one-parameter lambda that moves its parameter to the device
    (``moves`` says which calls are moves to an accelerator), possibly only when it is a tensor
    (a conditional whose other arm hands the parameter back as it is)?"""
    for arg in call.args:
        if arg.__class__ is ast.Lambda and len(arg.args.args) == 1 and _moved(arg.body, arg.args.args[0].arg, moves):
            return True
    return False


def _moved(body: AST, param: str, moves: Callable[[ast.Call], bool]) -> bool:
    if body.__class__ is ast.IfExp:  # x.to(d) if isinstance(x, torch.Tensor) else x
        arms = (body.body, body.orelse)
        return any(_moved(a, param, moves) for a in arms) and all(
            _moved(a, param, moves) or a.__class__ is ast.Name and a.id == param for a in arms)
    if body.__class__ is not ast.Call or body.func.__class__ is not ast.Attribute:
        return False
    root = body.func.value
    while root.__class__ is ast.Call and root.func.__class__ is ast.Attribute:  # t.float().to(device)
        root = root.func.value
    return root.__class__ is ast.Name and root.id == param and moves(body)
