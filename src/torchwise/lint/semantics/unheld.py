"""Loaders whose holders nothing reads (ruling R16 of issue 22: no batch of them is ever loaded):

- a name bound to the loader that nothing reads after it (the last statement of a smoke test,
  ``dataloader = DataLoader(...)`` built and never iterated), outside any loop;
- a list that loaders are appended to and that is never read but for its ``.append`` calls
  (``test_loader_list.append(test_loader)`` where only the validation list reaches the trainer);
- a ``self`` attribute a class unpacks from one of its own methods (``self.trainloader,
  self.validloader, self.testloader = self.train_val_test(...)``) that no module of the
  project ever reads (``.validloader`` appears only where it is stored).

Only beside other loaders of the file (a lone loader is a file's example or its API). Cheap text tests come first; the files of the project are parsed only when the attribute's
name occurs in them."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.loaderuses import exported


def unheld_loader(ctx: Context, call: ast.Call) -> bool:
    """Is the loader ``call`` builds held only where nothing reads it?"""
    parent = ctx.parent(call)
    if parent.__class__ is ast.Expr or ctx.source.count("Loader(") < 2:
        return False  # (only beside other loaders of the file: a lone loader is the file's example or its API)
    if parent.__class__ is ast.Call and parent.func.__class__ is ast.Attribute and parent.func.attr == "append" \
            and call in parent.args:
        return _write_only_list(ctx, parent)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    name = parent.targets[0].id
    if "locals()" in ctx.source or "vars()" in ctx.source:
        return False
    scope = ctx.scope_of(parent)
    reads = _reads_after(ctx, name, parent, scope)
    if reads is None:
        return False
    if not reads:
        return not ctx.enclosing_loops(parent) and not exported(ctx, parent, name) and _scope_is_plain(ctx, scope, name)
    if all(_appended_to_write_only(ctx, r) for r in reads):
        return True
    return _unread_self_attrs(ctx, parent, name, scope, reads)


def _reads_after(ctx: Context, name: str, assign: ast.Assign, scope: AST) -> list[ast.Name] | None:
    """Reads of ``name`` within ``scope`` (nested functions included) placed after ``assign``;
    None when one comes before it inside a loop that holds the assignment (the next pass reads it)."""
    out = []
    pos = (assign.lineno, assign.col_offset)
    loops = ctx.enclosing_loops(assign)
    for n in ctx.nodes.get(ast.Name, ()):
        if n.id != name or n.ctx.__class__ is not ast.Load or not (scope is ctx.tree or ctx.contains(scope, n)):
            continue
        if (n.lineno, n.col_offset) > pos or ctx.scope_of(n) is not scope:
            out.append(n)  # (a function defined before it may run after it: its reads count)
        elif any(ctx.contains(loop, n) for loop in loops):
            return None
    return out


def _scope_is_plain(ctx: Context, scope: AST, name: str) -> bool:
    """No ``global``/``nonlocal`` of the name in the scope (another function may read it)."""
    for n in ctx.walk_body(getattr(scope, "body", []), into_defs=True):
        if n.__class__ in (ast.Global, ast.Nonlocal) and name in n.names:
            return False
    return True


def _appended_to_write_only(ctx: Context, read: ast.Name) -> bool:
    holder = ctx.parent(read)
    return holder.__class__ is ast.Call and holder.func.__class__ is ast.Attribute and holder.func.attr == "append" \
        and read in holder.args and _write_only_list(ctx, holder)


def _write_only_list(ctx: Context, append: ast.Call) -> bool:
    """``lst.append(...)`` where ``lst`` (a local name bound to a list) is read nowhere in its scope
    but as the receiver of ``.append``."""
    lst = append.func.value
    if lst.__class__ is not ast.Name:
        return False
    scope = ctx.scope_of(append)
    if scope is ctx.tree and exported(ctx, append, lst.id) or not _scope_is_plain(ctx, scope, lst.id):
        return False
    for n in ctx.nodes.get(ast.Name, ()):
        if n.id != lst.id or n.ctx.__class__ is not ast.Load or not (scope is ctx.tree or ctx.contains(scope, n)):
            continue
        holder = ctx.parent(n)
        if not (holder.__class__ is ast.Attribute and holder.attr == "append" and ctx.parent(holder).__class__ is ast.Call):
            return False
    return True


def _unread_self_attrs(ctx: Context, assign: ast.Assign, name: str, scope: AST, reads: list[ast.Name]) -> bool:
    """``name`` is returned (alone or in a tuple) by a method whose every caller, ``self.method(...)``
    in its class, stores it into a ``self`` attribute that no module of the project reads."""
    klass = ctx.class_of(assign)
    if klass is None or scope.__class__ is not ast.FunctionDef or ctx.parent(scope) is not klass:
        return False
    index = None
    for r in reads:
        holder = ctx.parent(r)
        if holder.__class__ is ast.Return and ctx.scope_of(r) is scope:
            spot = -1
        elif holder.__class__ is ast.Tuple and ctx.parent(holder).__class__ is ast.Return and ctx.scope_of(r) is scope:
            spot = holder.elts.index(r)
        else:
            return False
        if index is not None and spot != index:
            return False
        index = spot
    method = scope.name
    texts = [(p, t) for p, t in ctx.project.files] or [(ctx.path, ctx.source)]
    if sum(t.count(f"{method}(") for _, t in texts) != ctx.source.count(f"{method}("):
        return False  # called from another module: its callers may hold it elsewhere
    attrs = []
    for site in ctx.calls_named(method):
        if site.func.__class__ is not ast.Attribute or site.func.value.__class__ is not ast.Name \
                or site.func.value.id != "self" or ctx.class_of(site) is not klass:
            return False
        holder = ctx.parent(site)
        if holder.__class__ is not ast.Assign or len(holder.targets) != 1:
            return False
        target = holder.targets[0]
        if index >= 0:
            if target.__class__ is not ast.Tuple or index >= len(target.elts):
                return False
            target = target.elts[index]
        if target.__class__ is not ast.Attribute or target.value.__class__ is not ast.Name or target.value.id != "self":
            return False
        attrs.append(target.attr)
    return bool(attrs) and all(_attr_never_read(ctx, a, texts) for a in attrs)


def _attr_never_read(ctx: Context, attr: str, texts: list[tuple[str, str]]) -> bool:
    """No file of the project reads ``.attr`` (or names it in a string: ``getattr(self, "attr")``)."""
    quoted = re.compile(r"""['"]%s['"]""" % re.escape(attr))
    for path, text in texts:
        if f".{attr}" not in text and attr not in text:
            continue
        if quoted.search(text):
            return False
        other = ctx if path == ctx.path else parsed_file(ctx.project, path, text)
        if other is None:
            return False
        for n in other.nodes.get(ast.Attribute, ()):
            if n.attr == attr and n.ctx.__class__ is not ast.Store:
                return False
    return True
