"""Draws from a random generator that make no run differ in what it computes (TW301): a draw
that only picks what to plot or show, one that only builds a name for the run's output
(``rand_suffix`` in an output folder's name), and one that picks the seed itself
(``args.manualSeed = random.randint(1, 10000)``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name


_DISPLAY_WORDS = ("plot", "show", "display", "visuali", "draw")


def display_only(ctx: Context, node: ast.AST) -> bool:
    """A draw whose result only picks what to show: every later use of the names it is bound to
    feeds a plotting call, or a loop whose body plots (``for path in random.sample(paths, k=3):
    pred_and_plot_image(...)``)."""
    stmt = ctx.statement_of(node)
    if stmt.__class__ is ast.For and ctx.contains(stmt.iter, node):
        return _plots(stmt.body)
    if stmt.__class__ is not ast.Assign:
        return False
    names = {n.id for t in stmt.targets for n in ast.walk(t) if n.__class__ is ast.Name}
    scope = ctx.scope_of(stmt)
    end = stmt.end_lineno or stmt.lineno
    uses = [n for n in ctx.nodes.get(ast.Name, ()) if n.id in names and n.ctx.__class__ is ast.Load and n.lineno > end
            and _own_scope(ctx, n) is scope]
    if not uses:
        return False
    for use in uses:
        holder = ctx.statement_of(use)
        if holder.__class__ is ast.For and ctx.contains(holder.iter, use):
            if not _plots(holder.body):
                return False
        elif not _plots([holder]):
            return False
    return True


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


def _own_scope(ctx: Context, node: ast.AST) -> ast.AST | None:
    """The nearest def, class, lambda or module around ``node`` (what ``walk_body`` stops at)."""
    return next((a for a in ctx.ancestors(node) if a.__class__ in _SCOPES), None)


def _plots(body: list[ast.stmt]) -> bool:
    """Does this code call something that plots or shows (``plt.imshow``, ``pred_and_plot_image``)?"""
    for stmt in body:
        for n in ast.walk(stmt):
            if n.__class__ is ast.Call and any(w in (last_name(n.func) or "").lower() for w in _DISPLAY_WORDS):
                return True
    return False


_NAMING_WORDS = ("dir", "path", "name", "file", "folder", "suffix", "prefix", "tag", "uuid")


def _naming(text: str) -> bool:
    """``output_dir``, ``rand_suffix``, ``run_id``: a name for a place or a run, by its words."""
    low = text.lower()
    return any(w in low for w in _NAMING_WORDS) or low == "id" or low.endswith("_id")
_PATH_CALLS = frozenset({"join", "makedirs", "mkdir", "Path"})


def names_only(ctx: Context, node: ast.AST) -> bool:
    """``rand_suffix = "".join(random.choices(string.ascii_letters + string.digits, k=3))`` whose only
    uses build a name (``output_dir += "_" + stamp + "_" + rand_suffix``, ``os.path.join(root,
    tag)``): a random name for the run's output, not a draw the run computes with."""
    stmt = ctx.statement_of(node)
    if stmt.__class__ is not ast.Assign:
        return False
    names = {n.id for t in stmt.targets for n in ast.walk(t) if n.__class__ is ast.Name}
    args = [*getattr(node, "args", []), *(k.value for k in getattr(node, "keywords", []))]
    if not names or not (any("string." in ctx.text(a) for a in args) or any(_naming(n) for n in names)):
        return False
    scope, end = ctx.scope_of(stmt), stmt.end_lineno or stmt.lineno
    uses = [n for n in ctx.nodes.get(ast.Name, ()) if n.id in names and n.ctx.__class__ is ast.Load and n.lineno > end
            and _own_scope(ctx, n) is scope]
    for use in uses:
        holder = ctx.statement_of(use)
        targets = holder.targets if holder.__class__ is ast.Assign else [holder.target] if holder.__class__ is ast.AugAssign else []
        if any(_naming(ctx.text(t)) for t in targets):
            continue
        if any(a.__class__ is ast.Call and last_name(a.func) in _PATH_CALLS for a in ctx.ancestors(use)):
            continue
        return False
    return bool(uses)


def draws_seed(ctx: Context, node: ast.AST) -> bool:
    """``args.manualSeed = random.randint(1, 10000)``: the draw picks the seed itself (stored under a
    name holding "seed"), which then seeds the generators in use; nothing else draws from it."""
    stmt = ctx.parent(node)
    return stmt.__class__ is ast.Assign and any("seed" in ctx.text(t).lower() for t in stmt.targets)


_WRITERS = frozenset({"to_csv", "dump", "save", "savetxt", "writerow", "writerows", "write", "to_json", "to_pickle"})


def cached_draw(ctx: Context, node: ast.AST) -> bool:
    """A draw that runs once, to make a file the project keeps: under ``if not os.path.exists(path):``
    (or ``isfile``) whose body writes a file (``open(path, "w")``, ``to_csv``, ``json.dump``,
    ``np.save``...): a shuffled split written to ``images.csv`` on the first run, then read back."""
    for if_node, in_body in ctx.enclosing_ifs(node):
        test = if_node.test
        if not in_body or test.__class__ is not ast.UnaryOp or test.op.__class__ is not ast.Not \
                or test.operand.__class__ is not ast.Call or last_name(test.operand.func) not in ("exists", "isfile"):
            continue
        for sub in (n for stmt in if_node.body for n in ast.walk(stmt)):
            if sub.__class__ is not ast.Call:
                continue
            name = last_name(sub.func)
            if name in _WRITERS or name == "open" and any(
                    a.__class__ is ast.Constant and isinstance(a.value, str) and "w" in a.value
                    for a in [*sub.args[1:], *(k.value for k in sub.keywords if k.arg == "mode")]):
                return True
    return False
