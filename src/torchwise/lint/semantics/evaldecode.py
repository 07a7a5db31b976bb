"""Autoregressive decoding for inference (TW104): a char-RNN's ``generate(decoder, prime_str)``,
a seq2seq model's ``translate(text)``. The function runs its networks in a loop that samples each
output on the host (``output.data.view(-1).div(t).exp()``, ``torch.multinomial``, ``chr(top_i)``)
and feeds the choice back as the next input; it returns text or host values and never
backpropagates. Its graph grows with every step and is thrown away.

Only a function named for decoding (``generate``, ``translate``, ``sample``, ``decode``,
``synthesize``, ``beam_search``, ``greedy_decode``), no method of an ``nn.Module`` (part of a
forward pass), with no backward pass, optimizer step or grad switch of its own, whose loop rebinds
an input of its network call and reads a result on the host (``.data``, ``.item()``, ``.cpu()``,
``.numpy()``, ``.tolist()``). Reported at the first network run of the function, unless every call
of it in the file is under no_grad.
"""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.models import is_module_instance

_DECODE_WORDS = ("generate", "generation", "translate", "sample", "sampling", "decode", "decoding", "synthesize", "beam",
                 "greedy")
_GRAD_WORDS = ("backward(", ".step(", "no_grad", "inference_mode", "set_grad_enabled", "enable_grad", "requires_grad", "autograd")
_HOST_ATTRS = frozenset({"data", "item", "cpu", "numpy", "tolist"})


def _decode_name(name: str) -> bool:
    return any(w.startswith(_DECODE_WORDS) for w in name.lower().strip("_").split("_"))


def _network_call(ctx: Context, node: ast.AST) -> bool:
    return node.__class__ is ast.Call and bool(node.args) and node.func.__class__ in (ast.Name, ast.Attribute) \
        and is_module_instance(ctx, node.func, node)


def _feeds_back(ctx: Context, loop: ast.AST) -> bool:
    """In ``loop``, a network call one of whose argument names the loop body rebinds, and a host
    read of some value (``.data``, ``.item()``...)."""
    body = [n for stmt in loop.body for n in ast.walk(stmt)]
    rebound = {t.id for n in body if n.__class__ in (ast.Assign, ast.AugAssign)
               for t in (n.targets if n.__class__ is ast.Assign else [n.target]) for t in ast.walk(t) if t.__class__ is ast.Name}
    fed = any(_network_call(ctx, n) and any(a.__class__ is ast.Name and a.id in rebound
                                            for arg in n.args for a in ast.walk(arg)) for n in body)
    return fed and any(n.__class__ is ast.Attribute and n.attr in _HOST_ATTRS for n in body)


def _returns_host_values(ctx: Context, func: ast.AST) -> bool:
    """Every value ``func`` returns is a name none of whose assignments in it runs a network or a
    torch function (the decoded text, a list of host values), or a constant."""
    body = list(ctx.walk_body(func.body))
    returns = [n.value for n in body if n.__class__ is ast.Return and n.value is not None]
    if not returns:
        return False
    names = []
    for value in returns:
        elts = value.elts if value.__class__ is ast.Tuple else [value]
        for e in elts:
            if e.__class__ is ast.Name:
                names.append(e.id)
            elif e.__class__ is not ast.Constant:
                return False
    for n in body:
        if n.__class__ in (ast.Assign, ast.AugAssign):
            targets = n.targets if n.__class__ is ast.Assign else [n.target]
            if any(t.__class__ is ast.Name and t.id in names for t in targets) and any(
                    _network_call(ctx, c) or (c.__class__ is ast.Call and (ctx.qualname(c.func) or "").startswith("torch."))
                    for c in ast.walk(n.value)):
                return False
    return True


def decoding_runs(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(call, message)``: the first network run of each decoding function (see the module doc)."""
    for func in ctx.nodes.get(ast.FunctionDef, ()):
        if not _decode_name(func.name) or any(w in ctx.text(func) for w in _GRAD_WORDS):
            continue
        owner = ctx.parent(func)
        if owner.__class__ is ast.ClassDef and any(b.startswith("torch.nn.") for b in ctx.local_class_bases(owner.name)):
            continue  # a module's method is part of some forward pass: its caller sets grad mode
        callers = ctx.calls_named(func.name)
        if callers and all(under_no_grad(ctx, c) for c in callers):
            continue
        if not _returns_host_values(ctx, func):
            continue  # it may hand network outputs to a loss
        loops = [n for n in ctx.walk_body(func.body) if n.__class__ in (ast.For, ast.While)]
        if not any(_feeds_back(ctx, loop) for loop in loops):
            continue
        first = next((n for n in ctx.walk_body(func.body) if _network_call(ctx, n) and not under_no_grad(ctx, n)), None)
        if first is not None:
            yield first, (f"{func.name}() decodes step by step with {ctx.text(first.func)} and autograd recording; "
                          "sampling needs no graph")
