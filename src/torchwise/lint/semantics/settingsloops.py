"""Loops over settings, not over data: ``for res in RESOLUTIONS:`` (a list of constants written in
the file), ``for k in args.nb_knn:`` (numbers given on the command line). They run a handful of
times, once per setting - what they call runs once per setting, not per batch or item. Likewise a
comprehension over the model's structure (``[torch.zeros(...) for layer in model.layers]``): one item per layer, made when its statement runs."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, keyword, last_name

_PASS_THROUGH = frozenset({"sorted", "list", "tuple", "reversed", "enumerate", "set"})
_NUMBER_TYPES = frozenset({"int", "float"})


def settings_loop(ctx: Context, loop: AST) -> bool:
    """A ``for`` loop over constants written out (directly or through a name bound to them) or
    over a command-line option of numbers (``add_argument("--nb_knn", nargs="+", type=int)``)."""
    return loop.__class__ is ast.For and _settings(ctx, loop.iter, loop)


def _settings(ctx: Context, it: AST, use: AST) -> bool:
    for _ in range(3):  # RESOLUTIONS = list(Z_DIMS), Z_DIMS = {128: 120, 256: 140}
        while it.__class__ is ast.Call and it.func.__class__ is ast.Name and it.func.id in _PASS_THROUGH and it.args:
            it = it.args[0]
        if it.__class__ is not ast.Name:
            break
        b = ctx.binding_at(it.id, use)
        if b is None or b.kind != "assign" or b.value is None:
            break
        it, use = b.value, b.node
    if it.__class__ in (ast.List, ast.Tuple, ast.Set):
        return bool(it.elts) and all(_constant(e) for e in it.elts)
    if it.__class__ is ast.Dict:
        return bool(it.keys) and all(k is not None and _constant(k) for k in it.keys)
    if it.__class__ is ast.Attribute and it.value.__class__ is ast.Name:
        return _number_option(ctx, it.attr)
    return False


def _constant(node: AST) -> bool:
    if node.__class__ is ast.UnaryOp:
        node = node.operand
    if node.__class__ in (ast.Tuple, ast.List):
        return all(_constant(e) for e in node.elts)
    return node.__class__ is ast.Constant


def _number_option(ctx: Context, attr: str) -> bool:
    """``parser.add_argument("--attr", ..., type=int)`` (or a default that is a list of numbers) in this file."""
    if "add_argument" not in ctx.source:
        return False
    for call in ctx.calls_named("add_argument"):
        names = {a.value.lstrip("-").replace("-", "_") for a in call.args
                 if a.__class__ is ast.Constant and isinstance(a.value, str)}
        dest = keyword(call, "dest")
        if dest is not None and dest.value.__class__ is ast.Constant:
            names = {dest.value.value}
        if attr not in names:
            continue
        kind = keyword(call, "type")
        if kind is not None:
            return last_name(kind.value) in _NUMBER_TYPES
        default = keyword(call, "default")
        return default is not None and default.value.__class__ in (ast.List, ast.Tuple) and bool(default.value.elts) \
            and all(e.__class__ is ast.Constant and type(e.value) in (int, float) for e in default.value.elts)
    return False


# methods that list a model's parts
_PART_LISTS = frozenset({"parameters", "named_parameters", "modules", "named_modules", "children", "named_children"})
_PART_WORDS = ("layer", "block", "module", "head", "stage")


def settings_comprehension(ctx: Context, comps: list[AST]) -> bool:
    """Comprehensions (nested in one another) over the parts of a model (``model.module.layers``,
    ``self.blocks``, ``net.parameters()``), their other ``for``s over settings (:func:`settings_loop`'s
    kinds) or ``range(k)`` of a constant: one item per layer, made when the statement runs."""
    parts = False
    for comp, gen in [(c, g) for c in comps for g in c.generators]:
        it = gen.iter
        while it.__class__ is ast.Call and it.func.__class__ is ast.Name and it.func.id in _PASS_THROUGH and it.args:
            it = it.args[0]
        if it.__class__ is ast.Call and it.func.__class__ is ast.Name and it.func.id == "range":
            if not (len(it.args) == 1 and it.args[0].__class__ is ast.Constant and type(it.args[0].value) is int):
                return False
        elif it.__class__ is ast.Call and it.func.__class__ is ast.Attribute and it.func.attr in _PART_LISTS \
                or it.__class__ is ast.Attribute and any(w in it.attr.lower() for w in _PART_WORDS):
            parts = True
        elif not _settings(ctx, gen.iter, comp):
            return False
    return parts
