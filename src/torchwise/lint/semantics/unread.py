"""Loaders nothing reads: a loader a helper builds and returns, whose callers in the project only
hand it to methods that never touch that argument (``model.evaluate(test_loader, d_path,
g_path)`` whose body samples noise and never names ``test_loader``), or never name it, or only
take its ``.dataset`` (``return model, test_loader.dataset``: a visualisation script that indexes
the dataset itself) - callers in other modules and in the helper's own file. No batch of it is
loaded (ruling R16 of issue 22)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import imports_module, module_stem, parsed_file
from torchwise.lint.semantics.values import local_function


def _returned_at(ctx: Context, call: ast.Call) -> tuple[AST, int] | None:
    """``(function, index)`` when ``name = DataLoader(...)`` is returned by its module-level
    function alone (index -1) or at ``index`` of a returned tuple."""
    parent = ctx.parent(call)
    func = ctx.function_of(call)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name \
            or func is None or func.__class__ is not ast.FunctionDef or ctx.parent(func) is not ctx.tree:
        return None
    name = parent.targets[0].id
    for node in ctx.walk_body(func.body):
        if node.__class__ is ast.Return and node.value is not None:
            if node.value.__class__ is ast.Name and node.value.id == name:
                return func, -1
            if node.value.__class__ is ast.Tuple:
                for i, e in enumerate(node.value.elts):
                    if e.__class__ is ast.Name and e.id == name:
                        return func, i
    return None


def never_read_loader(ctx: Context, call: ast.Call) -> bool:
    """The loader ``call`` builds is returned by a helper whose every caller in the project (at
    least one) binds it to a name that is only handed to methods that never read that argument."""
    found = _returned_at(ctx, call)
    if found is None or not ctx.project.files:
        return False
    func, index = found
    needle = f"{func.name}("
    callers = 0
    stem = module_stem(ctx.path)
    for path, text in ctx.project.files:
        if needle not in text or path != ctx.path and not imports_module(text, stem):
            continue  # (another module's own function of that name is another helper)
        other = ctx if path == ctx.path else parsed_file(ctx.project, path, text)
        if other is None:
            return False
        for site in other.calls_named(func.name):
            if other is ctx and (site.func.__class__ is not ast.Name or local_function(ctx, site) is not func):
                continue  # (in its own file: the plain calls of this very function)
            held = _bound_name(other, site, index)
            if held is None or not _only_handed_unread(ctx, other, held, other.parent(site)):
                return False
            callers += 1
    return callers > 0


def _bound_name(ctx: Context, site: ast.Call, index: int) -> str | None:
    parent = ctx.parent(site)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1:
        return None
    target = parent.targets[0]
    if index == -1:
        return target.id if target.__class__ is ast.Name else None
    if target.__class__ in (ast.Tuple, ast.List) and index < len(target.elts) and target.elts[index].__class__ is ast.Name:
        return target.elts[index].id
    return None


def _only_handed_unread(project_ctx: Context, ctx: Context, name: str, bound: AST) -> bool:
    """Every read of ``name`` as bound by ``bound`` in ``ctx`` is a positional argument of a
    method call (``model.evaluate(name, ...)``) whose definitions in the project all ignore that
    parameter."""
    reads = [n for n in ctx.nodes.get(ast.Name, ()) if n.id == name and n.ctx.__class__ is ast.Load
             and ctx.scope_of(n) is ctx.scope_of(bound)]
    uses = [n for n in reads if getattr(ctx.binding_at(name, n), "node", None) is bound]
    if not uses:
        # bound in one branch and again in the other (if crd: loaders = get_a(...) else: loaders =
        # get_b(...)): the later reads see the other binding by position, but may hold this one
        uses = reads
    for use in uses:
        holder = ctx.parent(use)
        if holder.__class__ is ast.Attribute and holder.attr == "dataset":
            continue  # test_loader.dataset: the dataset, indexed or measured by the caller itself
        if holder.__class__ is not ast.Call or use not in holder.args or holder.func.__class__ is not ast.Attribute:
            return False
        if not _param_unread(project_ctx, holder.func.attr, holder.args.index(use)):
            return False
    return True


def _param_unread(ctx: Context, method: str, index: int) -> bool:
    """Every ``def method(self, ...)`` of the project (at least one) never reads its parameter
    at ``index`` (after ``self``)."""
    needle = f"def {method}("
    seen = 0
    for path, text in ctx.project.files:
        if needle not in text:
            continue
        other = parsed_file(ctx.project, path, text)
        if other is None:
            return False
        for func in other.nodes.get(ast.FunctionDef, ()):
            if func.name != method:
                continue
            params = [a.arg for a in func.args.args]
            if params[:1] != ["self"] or index + 1 >= len(params):
                return False
            param = params[index + 1]
            if any(n.__class__ is ast.Name and n.id == param for stmt in func.body for n in ast.walk(stmt)):
                return False
            seen += 1
    return seen > 0
