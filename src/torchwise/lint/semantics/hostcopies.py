"""Calls handed host copies of the step's tensors (TW207): ``evaluate_node(ypred.cpu(), labels,
idx)`` scores the training forward's output on the host. Such a call runs no model pass of its own
on the device, so it is no evaluation that waits for the GPU anyway (a full-batch loop's
``test()``): its wait is the copy it is handed, which the rule reports."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, last_name

_TO_HOST = frozenset({"cpu", "numpy", "tolist", "item"})  # = devices.SYNC_METHODS (devices imports this module through steps)


def handed_host_copies(call: AST) -> bool:
    """Does ``call`` hand on a tensor copied to the host (``x.cpu()``, ``x.detach().cpu().numpy()``,
    ``x.data.cpu()``) - and no other tensor-like name it could run a model on?"""
    if call.__class__ is not ast.Call:
        return False
    args = [*call.args, *(k.value for k in call.keywords)]
    return any(host_copy(a) for a in args) and not any(_model_like(a) for a in args)


def host_copy(expr: AST) -> bool:
    """``x.cpu()``, ``x.detach().cpu().numpy()``, ``t.item()``: a copy already on the host (the read is
    that call, reported as such; a helper handed it reads a host value)."""
    return expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in _TO_HOST and not expr.args


def _model_like(arg: AST) -> bool:
    """``model``, ``self.net``, ``loader``: an argument the callee could run a forward pass with."""
    name = last_name(arg) if arg.__class__ in (ast.Name, ast.Attribute) else None
    return name is not None and any(w in name.lower() for w in ("model", "net", "loader", "encoder", "classifier"))
