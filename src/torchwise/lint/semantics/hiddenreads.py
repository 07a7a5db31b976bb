"""Host reads hidden in calls that do not look like reads (TW207): a gradient scaler's
``get_scale()`` and ``state_dict()["scale"]`` (both ``.item()`` of the scale tensor), and a
project getter returning a module's buffer on the host (``model.get_step()``:
:mod:`~torchwise.lint.semantics.getters`)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.getters import buffer_getter, getter_names

_SCALE_FIX = "read the scale once per log interval (it only changes when a step overflows)"
_GETTER_FIX = "keep a Python counter next to the buffer (or read it once per log interval)"


def hidden_reads(ctx: Context) -> list[tuple[AST, str, str, bool]]:
    """``(node, what, suggestion, after_synchronize)``: each hidden read of the file.
    ``after_synchronize``: reported where it is even after a ``torch.cuda.synchronize()`` (the
    read stays when the synchronize goes)."""
    out: list[tuple[AST, str, str, bool]] = [
        (node, f"{ctx.text(node)} (GradScaler.get_scale() reads the scale with .item())", _SCALE_FIX, True)
        for node in scale_reads(ctx)]
    names = getter_names(ctx.project) & ctx.calls_by_name.keys() if ctx.project.host_read_blocks else ()
    for name in names:
        for call in ctx.calls_by_name[name]:
            where = buffer_getter(ctx, call)
            if where:
                out.append((call, f"{ctx.text(call)} (it reads a buffer of the model on the host at {where})", _GETTER_FIX, False))
    return out


def scale_reads(ctx: Context) -> list[ast.AST]:
    """``scaler.get_scale()`` and ``scaler.state_dict()["scale"]`` of a ``GradScaler``: both read
    the scale tensor with ``.item()`` (documented: "this method incurs a CPU-GPU sync")."""
    if "scale" not in ctx.source or "scaler" not in ctx.source.lower():
        return []
    out: list[ast.AST] = []
    for call in ctx.calls_named("get_scale"):
        if not call.args and _scaler(ctx, call.func.value if call.func.__class__ is ast.Attribute else None, call):
            out.append(call)
    for call in ctx.calls_named("state_dict"):
        sub = ctx.parent(call)
        if call.args or sub.__class__ is not ast.Subscript or sub.value is not call or sub.slice.__class__ is not ast.Constant \
                or sub.slice.value != "scale":
            continue
        if _scaler(ctx, call.func.value if call.func.__class__ is ast.Attribute else None, call):
            out.append(sub)
    return out


def _scaler(ctx: Context, recv: AST | None, use: AST) -> bool:
    """A gradient scaler: built from ``GradScaler``, or a name or attribute called ``*scaler`` that
    is not built from another library's class."""
    if recv is None:
        return False
    built = ctx.constructed_from(recv, use)
    if built is not None and (built.endswith("GradScaler") or built.startswith(("torch.", "sklearn."))):
        return built.endswith("GradScaler")  # (a StandardScaler of scikit-learn is no gradient scaler)
    return (last_name(recv) or "").lower().endswith("scaler")  # also a project wrapper around one
