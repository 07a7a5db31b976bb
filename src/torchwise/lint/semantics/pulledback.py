"""Device tensors pulled to the host with ``.cpu()`` for an operation torch also runs on the device,
and sent back (TW205): ``labels = detections[:, -1].cpu().unique()``, then ``if prediction.is_cuda:
labels = labels.cuda()`` - two crossings and a synchronisation for work ``.unique()`` does where
the tensor is. Only torch's own tensor methods in between (a NumPy round trip is
:func:`~torchwise.lint.semantics.handoff.host_round_trip`'s), and only with evidence that the
tensor was on the device: it is computed there, or the move back sits under ``if x.is_cuda:``."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.devices import is_device_tensor
from torchwise.lint.semantics.handoff import unwrap_variable
from torchwise.lint.semantics.stored import stored_then_moved

# tensor methods that run on either device (what is done on the host between .cpu() and the move)
_DEVICE_OPS = frozenset({"unique", "sort", "argsort", "flip", "cumsum", "long", "int", "float", "bool", "half",
                         "view", "reshape", "flatten", "squeeze", "unsqueeze", "contiguous", "clone", "detach", "t"})


def pulled_back(ctx: Context, move: ast.Call) -> ast.Call | None:
    """The ``.cpu()`` call whose result ``move`` (a ``.cuda()``/``.to(device)``) sends back, right
    there or through the name it was stored under just before."""
    recv = unwrap_variable(move.func.value)
    if recv.__class__ is ast.Name:
        b = ctx.binding_at(recv.id, move)
        if b is None or b.kind != "assign" or not stored_then_moved(ctx, recv, move):
            return None
        recv = b.value
    ops = 0
    while recv.__class__ is ast.Call and recv.func.__class__ is ast.Attribute and recv.func.attr in _DEVICE_OPS \
            and not recv.keywords and len(recv.args) <= 1:
        recv, ops = recv.func.value, ops + 1
    if not ops or recv.__class__ is not ast.Call or recv.func.__class__ is not ast.Attribute or recv.func.attr != "cpu" \
            or recv.args or recv.keywords:
        return None  # a plain .cpu().cuda() is someone's choice of where to keep it; the op is the waste
    source = recv.func.value
    return recv if is_device_tensor(ctx, source, recv) or _under_cuda_test(ctx, move) else None


def _under_cuda_test(ctx: Context, node: AST) -> bool:
    """Inside the body of ``if x.is_cuda:``: the data is on the GPU when this runs."""
    return any(in_body and if_node.test.__class__ is ast.Attribute and if_node.test.attr == "is_cuda"
               for if_node, in_body in ctx.enclosing_ifs(node))
