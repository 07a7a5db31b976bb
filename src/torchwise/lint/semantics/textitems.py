"""Datasets whose items are text: ``__getitem__`` hands back only entries of lists of strings the
class read in ``__init__`` (``return self.names[i], self.countries[i]`` with ``self.names =
[row[0] for row in csv.reader(f)]``, ``self.lines = [x.strip() for x in f]``). The default collate
turns them into lists of strings: a batch holds no tensor, and ``pin_memory`` has nothing to pin
(the training loop builds its tensors from the strings)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name

# methods only strings have (a tensor or an array has none of them)
_STR_ONLY = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "casefold", "title", "capitalize", "zfill",
                       "ljust", "rjust", "swapcase"})
# methods strings share with other types (Tensor.split, Path.replace): a string only on a string
_STR_TOO = frozenset({"replace", "split", "rsplit", "format", "join", "center"})
# reading the lines of a text file
_LINE_READERS = frozenset({"readlines", "splitlines"})
# a list's in-place changes: something else may be added
_MUTATORS = frozenset({"append", "extend", "insert", "__setitem__"})


def getitem_yields_text(ctx: Context, klass: ast.ClassDef | None) -> bool:
    """Does every ``return`` of the class's ``__getitem__`` hand back only ``self.<list>[index]``
    entries (alone, or in a tuple or list) of lists of strings (see the module doc)?"""
    getitem = next((f for f in klass.body if f.__class__ is ast.FunctionDef and f.name == "__getitem__"), None) \
        if klass is not None else None
    if getitem is None or len(getitem.args.args) != 2:
        return False
    returns = [n.value for n in ctx.walk_body(getitem.body) if n.__class__ is ast.Return]
    if not returns:
        return False
    for value in returns:
        parts = value.elts if value.__class__ in (ast.Tuple, ast.List) else [value]
        for part in parts:
            if part.__class__ is not ast.Subscript or part.slice.__class__ is ast.Slice:
                return False
            held = part.value
            if held.__class__ is not ast.Attribute or held.value.__class__ is not ast.Name or held.value.id != "self" \
                    or not _text_list(ctx, klass, held.attr):
                return False
    return True


def _text_list(ctx: Context, klass: ast.ClassDef, attr: str) -> bool:
    """Every value the class assigns to ``self.<attr>`` is a list of strings, and nothing adds to it."""
    values = ctx.self_attr_values(klass, attr)
    if not values or not all(_strings(ctx, v) for v in values):
        return False
    for node in ast.walk(klass):
        target = None
        if node.__class__ is ast.AugAssign:
            target = node.target
        elif node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in _MUTATORS:
            target = node.func.value
        elif node.__class__ is ast.Subscript and node.ctx.__class__ is ast.Store:
            target = node.value
        if target is not None and target.__class__ is ast.Attribute and target.attr == attr \
                and target.value.__class__ is ast.Name and target.value.id == "self":
            return False
    return True


def _strings(ctx: Context, value: AST) -> bool:
    """A list of strings: a comprehension whose element is a string (a str method's result, a
    field of a CSV row, an f-string, ``str(...)``), the lines of a text file (``f.readlines()``,
    ``text.splitlines()``), or a list of string constants."""
    if value.__class__ is ast.ListComp:
        return _string(ctx, value.elt, value)
    if value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr in _LINE_READERS:
        return True
    if value.__class__ is ast.List:
        return bool(value.elts) and all(e.__class__ is ast.Constant and isinstance(e.value, str) for e in value.elts)
    return False


def _string(ctx: Context, expr: AST, comp: ast.ListComp) -> bool:
    """A string (or a list of strings): a method only strings have, a shared one called on a
    string (``x.strip().split("\\t")``, ``" ".join(words)``), ``str(...)``, an f-string, or a
    field of a CSV row the comprehension walks."""
    cls = expr.__class__
    if cls is ast.JoinedStr or cls is ast.Constant and isinstance(expr.value, str):
        return True
    if cls is ast.Call:
        func = expr.func
        if func.__class__ is ast.Name and func.id == "str":
            return True
        if func.__class__ is not ast.Attribute:
            return False
        return func.attr in _STR_ONLY or func.attr in _STR_TOO and _string(ctx, func.value, comp)
    if cls is ast.Subscript and expr.value.__class__ is ast.Name and expr.slice.__class__ is ast.Constant:
        gen = next((g for g in comp.generators if g.target.__class__ is ast.Name and g.target.id == expr.value.id), None)
        return gen is not None and _csv_rows(ctx, gen.iter, comp)
    return False


def _csv_rows(ctx: Context, it: AST, use: AST, depth: int = 3) -> bool:
    """Rows of a CSV reader: ``csv.reader(f)``, ``list(reader)``, or a name bound to one."""
    for _ in range(depth):
        it = ctx.resolve(it, use)
        if it.__class__ is ast.Call and last_name(it.func) == "list" and len(it.args) == 1:
            it = it.args[0]
            continue
        break
    it = ctx.resolve(it, use)
    return it.__class__ is ast.Call and (ctx.qualname(it.func) or "") == "csv.reader"


def prompt_dataset(ctx: Context, dataset: ast.AST | None, use: ast.AST) -> bool:
    """An instance of a ``*PromptDataset`` class (defined here or imported): text prompts to
    sample from, not tensors."""
    if dataset is None:
        return False
    built = ctx.constructed_from(ctx.resolve(dataset, use), use)
    if built is None:
        return False
    return built.rsplit(":", 1)[-1].rsplit(".", 1)[-1].lower().endswith(("promptdataset", "promptsdataset"))
