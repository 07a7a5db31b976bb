"""Host casts of a loss function's tensors (TW207): ``float(loss_l2)`` / ``int(loss)`` read the
value on the host exactly as ``.item()`` does (``loss_dict['loss_l2'] = float(loss_l2)`` in a
coach's ``calc_loss``, ``float(diff)`` per sample in a criterion's ``forward``), and the tests
of the run's settings that a loss function's terms sit under (``if self.opts.l2_lambda > 0:``):
the same branch on every step, so a read there is as per-step as one outside any ``if``.

A cast is a read only where its operand is a tensor: a name bound to a host number
(``loss = 0.0``, ``total += float(x)``, ``n = len(batch)``, ``v = t.item()``: semantics.hostnumbers)
is no such operand."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

_CASTS = frozenset({"float", "int"})


def cast_operand(ctx: Context, call: ast.Call, kinds: frozenset[str] = _CASTS) -> AST | None:
    """``x`` of the builtin ``float(x)`` / ``int(x)`` (one operand, not a string or number literal)."""
    func = call.func
    if func.__class__ is not ast.Name or func.id not in kinds or len(call.args) != 1 or call.keywords:
        return None
    arg = call.args[0]
    if arg.__class__ in (ast.Constant, ast.JoinedStr) or ctx.binding_at(func.id, call) is not None:
        return None  # float("inf"); a function of the file named float
    return arg


def side_output(ctx: Context, operand: AST, use: AST) -> bool:
    """``sim`` of ``loss, sim, logs = self.id_loss(...)``: an unpacked name not named for a loss
    (what a loss function hands back beside its loss may be host numbers)."""
    if operand.__class__ is not ast.Name or "loss" in operand.id.lower():
        return False
    b = ctx.binding_at(operand.id, use)
    return b is not None and b.kind == "unpack"


def loss_named(value: AST | None) -> bool:
    """``percept_loss * w``: a value made from a name bound for a loss."""
    return value is not None and any(n.__class__ is ast.Name and "loss" in n.id.lower() for n in ast.walk(value))


def settings_value(value: AST | None) -> bool:
    """``self.opts.mse_weight * 2``: arithmetic of settings and literals alone, a host number."""
    return value is not None and value.__class__ is not ast.Name and all(
        n.__class__ not in (ast.Call, ast.Subscript) and (n.__class__ is not ast.Name or n.id == "self" or n.id in _OPTION_ROOTS)
        for n in ast.walk(value))


def settings_gated(ctx: Context, node: AST) -> bool:
    """Are the ``if`` tests around ``node`` in its function all tests of the run's settings, the same
    on every call (``if self.opts.id_lambda > 0:``, ``if self.use_aux and cfg.w > 0:``): attributes
    of ``self`` or of an options object compared with literals - no call, arithmetic, subscript or
    local value?"""
    return all(if_node.__class__ is ast.If and _settings_test(if_node.test) for if_node, _ in ctx.enclosing_ifs(node))


_NOT_SETTINGS = ("debug", "verbose", "log", "print", "show", "vis", "eval", "test", "train", "val", "infer")


def _settings_test(test: AST) -> bool:
    """(Not an opt-in switch for logs or debugging, nor the module's mode: ``if not self.training:``.)"""
    for n in ast.walk(test):
        cls = n.__class__
        if cls in (ast.Call, ast.BinOp, ast.Subscript, ast.Lambda) or cls is ast.Attribute and any(w in n.attr.lower() for w in _NOT_SETTINGS):
            return False
        if cls is ast.Name and n.id != "self" and not _option_root(n, test):
            return False
    return any(n.__class__ is ast.Attribute for n in ast.walk(test))


_OPTION_ROOTS = frozenset({"args", "opt", "opts", "cfg", "config", "hparams", "hp", "options", "params", "conf", "settings", "flags", "FLAGS"})


def _option_root(name: ast.Name, test: AST) -> bool:
    """``args`` of ``args.x``: the root of an attribute chain naming an options object."""
    return name.id in _OPTION_ROOTS and any(n.__class__ is ast.Attribute and n.value is name for n in ast.walk(test))
