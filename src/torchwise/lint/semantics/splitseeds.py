"""Split seeds: a literal seed that fixes one reordering of the data for a train/test split
(``random.seed(1234); random.shuffle(ids); train, test = ids[:-n], ids[-n:]``), not a run's seeding."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, param_default
from torchwise.lint.semantics.callers import parsed_file

# seeding calls and the generator family each one seeds
SEEDERS = {
    "random.seed": "random",
    "numpy.random.seed": "numpy",
    "torch.manual_seed": "torch",
    "torch.cuda.manual_seed_all": "cuda",
    "torch.cuda.manual_seed": "cuda",
}

# draws that reorder or pick a subset: what a fixed train/test split is made with
_SPLIT_DRAWS = frozenset({"random.shuffle", "random.sample", "numpy.random.shuffle", "numpy.random.permutation",
                          "numpy.random.choice"})


def split_seed(ctx: Context, call: ast.Call, family: str) -> bool:
    """``random.seed(1234); random.shuffle(ids)``: a literal seed that fixes one reordering of the
    data for a train/test split - the next statement draws it from the same generator, the
    statements after it cut it into parts (``ids[-n:]``), and no other generator is seeded in
    the file. Also a dataset's ``__init__`` that seeds with a parameter defaulting to a literal
    (``random_seed=123``) and shuffles its own items (``random.shuffle(self.items)``): one fixed
    order for the split made from it. The split is reproducible on purpose; the run makes no attempt at reproducibility
    that an unseeded torch generator would break."""
    stmt = ctx.statement_of(call)
    body = getattr(ctx.parent(stmt), getattr(stmt, "_tw_field", ""), None)
    if not isinstance(body, list) or stmt not in body or body.index(stmt) + 1 >= len(body):
        return False
    if not call.args or call.args[0].__class__ is not ast.Constant and not _literal_default(ctx, call.args[0]):
        return False  # a seed handed in (per epoch, per run) is the run's seeding
    after = body[body.index(stmt) + 1]
    draws = [c for c in ast.walk(after) if c.__class__ is ast.Call and (ctx.qualname(c.func) or "") in _SPLIT_DRAWS
             and SEEDERS.get((ctx.qualname(c.func) or "").rsplit(".", 1)[0] + ".seed") == family]
    if not draws or not (_sliced_after(body[body.index(stmt) + 1:body.index(stmt) + 6], draws[0], after)
                         or _orders_own_items(ctx, draws[0])):
        return False
    return not any(
        SEEDERS.get(ctx.qualname(c.func) or "") not in (None, family) for name in ("seed", "manual_seed", "manual_seed_all")
        for c in ctx.calls_named(name))


def _literal_default(ctx: Context, seed: ast.AST) -> bool:
    """``random.seed(random_seed)`` in ``def __init__(self, root, random_seed=123)``: a parameter
    of ``__init__`` whose default is a literal number - the dataset's own fixed order."""
    func = ctx.function_of(seed)
    if seed.__class__ is not ast.Name or func is None or func.__class__ is not ast.FunctionDef or func.name != "__init__":
        return False
    value = param_default(func.args, seed.id)
    return value is not None and value.__class__ is ast.Constant and type(value.value) is int


def _orders_own_items(ctx: Context, draw: ast.Call) -> bool:
    """``random.shuffle(self.items)`` in ``__init__``: the dataset fixes the order of its own items
    once (the order its train/validation/test indices are cut from)."""
    func = ctx.function_of(draw)
    target = draw.args[0] if len(draw.args) == 1 else None
    return func is not None and func.__class__ is ast.FunctionDef and func.name == "__init__" and \
        target.__class__ is ast.Attribute and target.value.__class__ is ast.Name and target.value.id == "self"


def _sliced_after(stmts: list[ast.stmt], draw: ast.Call, first: ast.stmt) -> bool:
    """The drawn order is cut into parts in the statements that follow (``ids[-n:]``,
    ``perm[:k]``): a split."""
    names = {t.id for t in getattr(first, "targets", ()) if t.__class__ is ast.Name}
    if draw.args and draw.args[0].__class__ is ast.Name:
        names.add(draw.args[0].id)
    return any(n.__class__ is ast.Subscript and n.value.__class__ is ast.Name and n.value.id in names
               and n.slice.__class__ is ast.Slice for stmt in stmts for n in ast.walk(stmt))


def split_seeds_only(ctx: Context) -> bool:
    """Every seed of the project is such a split seed (its seeding files read once per process)."""
    key = ("tw301:split-seeds-only",)
    found = ctx.project.answers.get(key)
    if found is None:
        texts = dict(ctx.project.files)
        found = bool(ctx.project.seed_files)
        for path in ctx.project.seed_files:
            where = ctx if path == ctx.path else parsed_file(ctx.project, path, texts.get(path, ""))
            if where is None:
                found = False
                break
            seeds = [(c, SEEDERS.get(where.qualname(c.func) or "")) for name in ("seed", "manual_seed", "manual_seed_all")
                     for c in where.calls_named(name)]
            if not all(f is None or split_seed(where, c, f) for c, f in seeds):
                found = False
                break
        ctx.project.answers[key] = found
    return found
