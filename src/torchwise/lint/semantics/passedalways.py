"""Fallbacks for an argument that every call passes: ``if x_mask is None: x_mask = torch.ones(...)``
(or the ``else`` of ``if z is not None:``) in a function whose parameter defaults to None, when
every call of it in the project passes a value for that parameter - ``commons.squeeze(x, x_mask,
n)`` from the one module that uses it, ``self.vae.decode(state, z)`` and ``self.decode(state, z)``
for a VAE's ``decode(self, state, z=None)``. The fallback never runs (ruling R5 of issue 22).

Only where every call can be seen: a module-level function called by its name in its file and in
the modules importing it (a reference that is not a call - a callback - or a star import of the
module says nothing), or a method (not ``forward``/``__call__``, which a module's ``__call__``
reaches) called as ``something.name(...)`` in its file and in the modules importing it, whatever
the receiver (a method of another class with that name must pass the argument too), or the
``forward`` of a module class every instance of which its builder keeps as ``self.norm`` or in a
list of modules (``self.flows.append(ActNorm(c))``) and calls with the argument (``for f in
self.flows: x = f(x, x_mask)``). No call at all says nothing either (a library function's
callers are not in the project).
"""

from __future__ import annotations

import ast
import os

from torchwise.lint.engine import AST, Context, has_star_args
from torchwise.lint.semantics.callers import MAX_CALLER_FILES, imports_module, parsed_file, project_calls


def fallback_never_taken(ctx: Context, node: AST) -> bool:
    """``node`` lies in the ``P is None`` branch of a parameter ``P=None`` that every call of
    its function passes (see the module doc)."""
    func = ctx.function_of(node)
    if func is None or func.__class__ is ast.Lambda or func.decorator_list:
        return False
    for if_node, in_body in ctx.enclosing_ifs(node):
        param = _none_branch(if_node.test, in_body)
        if param is None or not _defaults_to_none(func, param):
            continue
        b = ctx.binding_at(param, if_node)
        if b is not None and b.kind == "param" and ctx.scope_of(if_node) is func and _always_passed(ctx, func, param):
            return True
    return False


def option_never_passed(ctx: Context, node: AST) -> bool:
    """``node`` lies in the body of ``if P is not None:`` (``if P != None:``) of a parameter
    ``P=None`` that no call of its function passes, and there are calls to see
    (``trainer.test(model, args, loader)`` of ``def test(model, args, loader, path=None)``,
    staticmethods too): the branch never runs (ruling R5 of issue 22)."""
    func = ctx.function_of(node)
    if func is None or func.__class__ is ast.Lambda or any(
            getattr(d, "id", None) not in ("staticmethod", "classmethod") for d in func.decorator_list):
        return False
    for if_node, in_body in ctx.enclosing_ifs(node):
        test = if_node.test
        if not in_body or test.__class__ is not ast.Compare or len(test.ops) != 1 or test.left.__class__ is not ast.Name \
                or test.ops[0].__class__ not in (ast.IsNot, ast.NotEq) \
                or test.comparators[0].__class__ is not ast.Constant or test.comparators[0].value is not None:
            continue
        param = test.left.id
        if not _defaults_to_none(func, param) or ctx.scope_of(if_node) is not func:
            continue
        b = ctx.binding_at(param, if_node)
        if b is None or b.kind != "param":
            continue
        key = ("neverpassed", id(func), param)
        found = ctx._cache.get(key)
        if found is None:
            found = ctx._cache[key] = _every_call_passes(ctx, func, param, _omits)
        if found:
            return True
    return False


def _omits(call: ast.Call, param: str, index: int | None) -> bool:
    """The call leaves ``param`` out (or passes None); False when it cannot be seen."""
    if has_star_args(call):
        return False
    for kw in call.keywords:
        if kw.arg == param:
            return kw.value.__class__ is ast.Constant and kw.value.value is None
    if index is not None and len(call.args) > index:
        value = call.args[index]
        return value.__class__ is ast.Constant and value.value is None
    return True


def _none_branch(test: AST, in_body: bool) -> str | None:
    """``P`` of ``if P is None:`` (its body) or ``if P is not None:`` (its ``else``)."""
    if test.__class__ is not ast.Compare or len(test.ops) != 1 or test.left.__class__ is not ast.Name:
        return None
    right = test.comparators[0]
    if right.__class__ is not ast.Constant or right.value is not None:
        return None
    op = test.ops[0].__class__
    return test.left.id if (op is ast.Is and in_body) or (op is ast.IsNot and not in_body) else None


def _defaults_to_none(func: AST, param: str) -> bool:
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return any(a.arg == param and d.__class__ is ast.Constant and d.value is None for a, d in pairs)


def _position(ctx: Context, func: AST, param: str) -> int | None:
    names = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if param not in names:
        return None  # keyword-only
    index = names.index(param)
    method = ctx.parent(func).__class__ is ast.ClassDef and not any(
        getattr(d, "id", None) == "staticmethod" for d in func.decorator_list)
    return index - 1 if method else index


def _passes(call: ast.Call, param: str, index: int | None) -> bool:
    """The call passes a value other than None for ``param``; False when it cannot be seen."""
    if has_star_args(call):
        return False
    for kw in call.keywords:
        if kw.arg == param:
            return not (kw.value.__class__ is ast.Constant and kw.value.value is None)
    if index is not None and len(call.args) > index:
        value = call.args[index]
        return not (value.__class__ is ast.Constant and value.value is None)
    return False


def _always_passed(ctx: Context, func: AST, param: str) -> bool:
    key = ("passedalways", id(func), param)
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = _every_call_passes(ctx, func, param)
    return found


def _every_call_passes(ctx: Context, func: AST, param: str, passes=None) -> bool:
    owner = ctx.parent(func)
    method = owner.__class__ is ast.ClassDef
    if passes is not None and method and func.name == "forward":
        return False  # (a module's calls: only whether they all pass the argument is followed)
    passes = passes or _passes
    if method and func.name == "forward":
        return _module_calls_pass(ctx, owner, param, _position(ctx, func, param))
    if method and (func.name == "__call__" or func.name.startswith("__")):
        return False  # called by Python itself: the calls are not by name
    if not method and owner is not ctx.tree:
        return False  # a nested function: handed around more often than not
    index = _position(ctx, func, param)
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    contexts = [ctx]
    if ctx.project.files:
        others = [(p, t) for p, t in ctx.project.files if p != ctx.path and func.name in t and imports_module(t, stem)]
        if len(others) > MAX_CALLER_FILES or any(f"{stem} import *" in t for _, t in others):
            return False
        for path, text in others:
            other = parsed_file(ctx.project, path, text)
            if other is None:
                return False
            contexts.append(other)
    calls = 0
    for where in contexts:
        sites = _method_sites(where, func.name) if method else _function_sites(where, func, stem, where is ctx)
        if sites is None:
            return False
        for call in sites:
            if not passes(call, param, index):
                return False
        calls += len(sites)
    return calls > 0


def _method_sites(where: Context, name: str) -> list[ast.Call] | None:
    """Every ``x.name(...)`` call of the file; None when ``x.name`` is also used other than called
    (a bound method handed on)."""
    sites = []
    for node in where.nodes.get(ast.Attribute, ()):
        if node.attr != name:
            continue
        parent = where.parent(node)
        if parent.__class__ is not ast.Call or parent.func is not node:
            if node.ctx.__class__ is ast.Load:
                return None
            continue
        sites.append(parent)
    return sites


def _function_sites(where: Context, func: AST, stem: str, home: bool) -> list[ast.Call] | None:
    """The calls of the module-level function ``func`` in ``where`` (its own file when ``home``,
    else a module importing it: by its imported name or as ``stem.name``); None when the name is
    also used other than called there."""
    name = func.name
    sites = []
    for node in where.nodes.get(ast.Name, ()):
        if node.id != name or node.ctx.__class__ is not ast.Load:
            continue
        if not home and not _imported_from(where, name, stem):
            continue  # a name of its own in that module
        parent = where.parent(node)
        if parent.__class__ is not ast.Call or parent.func is not node:
            return None
        sites.append(parent)
    if not home:
        for node in where.nodes.get(ast.Attribute, ()):
            if node.attr != name or node.value.__class__ is not ast.Name:
                continue
            target = where.imports.get(node.value.id) or ""
            if node.value.id != stem and target.rsplit(".", 1)[-1] != stem:
                continue  # x.squeeze(1): a method of something else
            parent = where.parent(node)
            if parent.__class__ is not ast.Call or parent.func is not node:
                return None
            sites.append(parent)
    return sites


def _imported_from(where: Context, name: str, stem: str) -> bool:
    parts = (where.imports.get(name) or "").split(".")
    if len(parts) >= 2 and parts[-2] == stem:
        return True
    return any(node.level and (node.module or "").rsplit(".", 1)[-1] == stem and any(
        (a.asname or a.name) == name for a in node.names) for node in where.nodes.get(ast.ImportFrom, ()))


def _module_calls_pass(ctx: Context, cls: ast.ClassDef, param: str, index: int | None) -> bool:
    """Every instance of the module class ``cls`` - built in this file or a module importing it -
    is kept by the class that builds it (``self.norm = ActNorm(c)``, ``self.flows.append(ActNorm(c))``,
    ``self.flows = nn.ModuleList([...])``) and every call of it there passes ``param``
    (``self.norm(x, x_mask)``, ``for f in self.flows: x = f(x, x_mask)``, ``for f in
    reversed(self.flows)``, also through a name bound to one of them)."""
    if ctx.parent(cls) is not ctx.tree:
        return False
    sites = [(ctx, c) for c in ctx.calls_named(cls.name) if c.func.__class__ is ast.Name]
    if ctx.project.files:
        sites += list(project_calls(ctx, cls.name))
    if not sites:
        return False
    for where, build in sites:
        holder = _holder(where, build)
        if holder is None or not _held_calls_pass(where, holder, param, index):
            return False
    return True


def _holder(where: Context, build: ast.Call) -> tuple[ast.ClassDef, str, bool] | None:
    """``(class, attribute, many)`` of ``self.attr = Cls(...)`` (one) or ``self.attr.append(Cls(...))``,
    ``self.attr = nn.ModuleList([Cls(...), ...])`` (many)."""
    parent = where.parent(build)
    many = False
    if parent.__class__ in (ast.List, ast.Tuple):
        parent = where.parent(parent)
        many = parent.__class__ is ast.Call and (where.qualname(parent.func) or "").endswith("ModuleList")
        if not many:
            return None
        parent = where.parent(parent)
    elif parent.__class__ is ast.Call and parent.func.__class__ is ast.Attribute and parent.func.attr == "append" \
            and build in parent.args:
        return _self_attr(where, parent.func.value, build)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1:
        return None
    found = _self_attr(where, parent.targets[0], build)
    return (found[0], found[1], many) if found is not None else None


def _self_attr(where: Context, target: AST, node: AST) -> tuple[ast.ClassDef, str, bool] | None:
    if target.__class__ is not ast.Attribute or target.value.__class__ is not ast.Name or target.value.id != "self":
        return None
    cls = where.class_of(node)
    return (cls, target.attr, True) if cls is not None else None


def _held_calls_pass(where: Context, holder: tuple[ast.ClassDef, str, bool], param: str, index: int | None) -> bool:
    """Every use of ``self.attr`` in the holding class is a call that passes ``param`` - or, for a
    list of modules, a loop over it (maybe ``reversed``, maybe through a name) whose variable is
    only called with ``param`` or used for its attributes."""
    cls, attr, many = holder
    calls = 0
    for node in ast.walk(cls):
        if node.__class__ is not ast.Attribute or node.attr != attr or node.value.__class__ is not ast.Name \
                or node.value.id != "self" or node.ctx.__class__ is not ast.Load:
            continue
        parent = where.parent(node)
        if parent.__class__ is ast.Call and parent.func is node:
            if many or not _passes(parent, param, index):
                return False
            calls += 1
            continue
        if parent.__class__ is ast.Attribute and parent.attr == "append":
            continue  # filling the list
        if not many:
            return False
        loops = _loops_over(where, node)
        if loops is None:
            return False
        for loop in loops:
            found = _loop_calls_pass(loop, param, index)
            if found is None:
                return False
            calls += found
    return calls > 0


def _loops_over(where: Context, node: AST) -> list[ast.For] | None:
    """The ``for`` loops that iterate over ``node`` (``self.flows``): directly, through ``reversed``,
    or through a name it is bound to (``flows = reversed(self.flows)``); None for any other use."""
    expr = node
    parent = where.parent(expr)
    while parent.__class__ is ast.Call and parent.func.__class__ is ast.Name and parent.func.id == "reversed" \
            or parent.__class__ is ast.IfExp and expr is not parent.test:
        expr, parent = parent, where.parent(parent)  # reversed(self.flows) if reverse else self.flows
    if parent.__class__ is ast.For and parent.iter is expr and parent.target.__class__ is ast.Name:
        return [parent]
    if parent.__class__ is ast.Assign and len(parent.targets) == 1 and parent.targets[0].__class__ is ast.Name:
        name = parent.targets[0].id
        func = where.function_of(parent)
        loops = [n for n in ast.walk(func) if n.__class__ is ast.For and n.iter.__class__ is ast.Name and n.iter.id == name
                 and n.target.__class__ is ast.Name] if func is not None else []
        return loops or None
    return None


def _loop_calls_pass(loop: ast.For, param: str, index: int | None) -> int | None:
    """How many calls of the loop variable the body makes, all passing ``param``; None when one
    does not or the variable goes anywhere else than a call or an attribute."""
    var = loop.target.id
    calls = 0
    parents = {id(c): p for p in ast.walk(loop) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(loop):
        if node.__class__ is not ast.Name or node.id != var or node is loop.target:
            continue
        parent = parents.get(id(node))
        if parent.__class__ is ast.Call and parent.func is node:
            if not _passes(parent, param, index):
                return None
            calls += 1
        elif parent.__class__ is not ast.Attribute:
            return None
    return calls
