"""Reads of a device tensor element by element in a Python loop (TW207): ``predicted[i].item()``
for every phoneme of a length regulator, ``target = y[i].item()`` for every label of the batch,
``[c.item() for c in contexts]`` - one host sync per element, in code every step runs (a model's
forward pass and the methods it calls), where one ``.tolist()`` per batch, or a vectorised form
(``repeat_interleave``, an index tensor), would do. Tensors handed in that are often kept on
the host on purpose (``lengths`` for ``pack_padded_sequence``), NumPy arrays, and generation or
decoding methods (``sample``, ``beam_search``: their reads are the search's decisions) are left
alone."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.devices import is_device_tensor
from torchwise.lint.semantics.forwardpath import batch_function, runs_in_step
from torchwise.lint.semantics.forwardreads import from_inputs
from torchwise.lint.semantics.masks import on_host
from torchwise.lint.semantics.steps import hot_region_of

_CASTS = frozenset({"int", "float"})
# generation and decoding methods: their element reads are the decisions of a search or a draw
_DECODERS = ("sample", "generate", "infer", "synthes", "decode", "beam", "greedy", "recognize", "translate", "predict", "search")
_HOST_NAMES = ("len", "lens", "lengths", "length", "sizes", "numel", "cpu")


def element_reads(ctx: Context) -> list[tuple[ast.Call, AST]]:
    """``(read, function)`` for each such read in a function on the forward path of a step."""
    if ".item()" not in ctx.source and "int(" not in ctx.source and "float(" not in ctx.source:
        return []
    found = []
    for call in ctx.calls_named("item", *_CASTS):
        func = call.func
        if func.__class__ is ast.Attribute and func.attr == "item" and not call.args:
            element = func.value
        elif func.__class__ is ast.Name and func.id in _CASTS and len(call.args) == 1 and not call.keywords:
            element = call.args[0]
        else:
            continue
        tensor = _looped_tensor(ctx, element, call)
        if tensor is None or hot_region_of(ctx, call) is not None:
            continue
        where = batch_function(ctx, call)
        if where is not None and not where.name.lstrip("_").lower().startswith(_DECODERS) \
                and (ctx.parent(where).__class__ is not ast.ClassDef or runs_in_step(ctx, where)) \
                and _on_the_device(ctx, tensor, call, where):
            found.append((call, where))
    return found


def _looped_tensor(ctx: Context, element: AST, use: AST) -> AST | None:
    """``t`` when ``element`` is ``t[i]`` with ``i`` the variable of a loop around ``use``
    (``for i in range(len(t))``, ``for i, v in enumerate(...)``), or the variable of a loop or
    comprehension that iterates ``t`` itself (``for x in t``, ``enumerate(t)``)."""
    loop_vars = _loop_variables(ctx, use)
    if element.__class__ is ast.Subscript and element.slice.__class__ is ast.Name and element.slice.id in loop_vars:
        return element.value
    if element.__class__ is ast.Name:
        it = loop_vars.get(element.id)
        if it is not None and it.__class__ in (ast.Name, ast.Attribute, ast.Subscript):
            return it
    return None


def _loop_variables(ctx: Context, node: AST) -> dict[str, AST | None]:
    """The names the loops and comprehensions around ``node`` (in its function) bind, with the
    tensor each iterates when it iterates one directly (``for x in t``, ``enumerate(t)``'s second
    name), else None."""
    out: dict[str, AST | None] = {}
    for anc in ctx.ancestors(node):
        if anc.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef):
            break
        if anc.__class__ is ast.For:
            gens = [(anc.target, anc.iter)]
        elif anc.__class__ in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            gens = [(g.target, g.iter) for g in anc.generators]
        else:
            continue
        for target, it in gens:
            if target.__class__ is ast.Name:
                out.setdefault(target.id, it)
            elif target.__class__ is ast.Tuple and len(target.elts) == 2 and all(e.__class__ is ast.Name for e in target.elts):
                enum = it.__class__ is ast.Call and last_name(it.func) == "enumerate" and it.args
                out.setdefault(target.elts[0].id, None)
                out.setdefault(target.elts[1].id, it.args[0] if enum else None)
    return out


def _on_the_device(ctx: Context, tensor: AST, use: AST, func: AST) -> bool:
    name = (last_name(tensor) or "").lower()
    if any(name == h or name.endswith("_" + h) or name.startswith(h + "_") for h in _HOST_NAMES):
        return False  # lengths handed in for packing: often a host tensor on purpose
    if on_host(ctx, tensor, func) or _split_text(ctx, tensor, use):
        return False
    return is_device_tensor(ctx, tensor, use) or from_inputs(ctx, tensor, func)


def _split_text(ctx: Context, tensor: AST, use: AST) -> bool:
    """``gpus = config["gpu"].split(",")``: the pieces of a string, not a tensor."""
    b = ctx.binding_at(tensor.id, use) if tensor.__class__ is ast.Name else None
    value = b.value if b is not None and b.kind == "assign" else None
    return value.__class__ is ast.Call and last_name(value.func) in ("split", "rsplit", "splitlines") and all(
        a.__class__ is ast.Constant and isinstance(a.value, str) for a in value.args)


# calls whose arguments are sizes or counts: a tensor element there is read with __index__
_SIZE_CALLS = frozenset({"repeat", "expand", "view", "reshape", "new_zeros", "new_ones", "new_empty", "new_full", "zeros",
                         "ones", "empty", "full", "randn", "rand", "arange", "range", "narrow", "tile"})


def size_element_reads(ctx: Context) -> list[ast.Subscript]:
    """``x.repeat((counts[i], 1))`` for each ``i`` of a loop or comprehension: an element of a
    device tensor used as a size or count is read on the host (``__index__``), one wait per
    element (``torch.repeat_interleave(x, counts, dim=0)`` does it in one go). Candidates only:
    the caller asks whether they run every step."""
    if "[" not in ctx.source or not any(name in ctx.calls_by_name for name in _SIZE_CALLS):
        return []
    found = []
    for name in _SIZE_CALLS:
        for call in ctx.calls_by_name.get(name, ()):
            args = [a for arg in call.args for a in (arg.elts if arg.__class__ is ast.Tuple else (arg,))]
            for arg in args:
                if arg.__class__ is ast.Subscript and arg.slice.__class__ is ast.Name \
                        and arg.slice.id in _loop_variables(ctx, arg) and _looped_tensor(ctx, arg, arg) is not None:
                    func = ctx.function_of(arg)
                    if func is not None and _on_the_device(ctx, arg.value, arg, func):
                        found.append(arg)
    return found
