"""Where names are bound: every binding of every name in one scope (a function or the module).

The def-use queries of :class:`~torchwise.lint.engine.context.Context` (``binding_at``,
``resolve``, ``constructed_from``) are built on the table :func:`collect_bindings` makes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator

from torchwise.lint.engine.nodes import AST, FUNCTION_TYPES, children, end, pos


@dataclass(frozen=True)
class Binding:
    """One binding of a name in a scope. ``pos`` is where it takes effect (line, column)."""

    name: str
    pos: tuple[int, int]
    kind: str  # assign | unpack | aug | for | with | param | def | class | import | except | walrus | global
    value: AST | None  # the bound expression (assign/unpack/with/for iter/walrus), else the node
    node: AST  # the statement or node that binds
    index: int = -1  # position in a tuple unpack


def target_names(target: AST) -> Iterator[tuple[ast.Name, int]]:
    """Names bound by an assignment target, with their index in a flat tuple unpack (else -1)."""
    if target.__class__ is ast.Name:
        yield target, -1
    elif target.__class__ in (ast.Tuple, ast.List):
        for i, elt in enumerate(target.elts):
            if elt.__class__ is ast.Name:
                yield elt, i
            elif elt.__class__ is ast.Starred and elt.value.__class__ is ast.Name:
                yield elt.value, -2
            else:
                for name, _ in target_names(elt):
                    yield name, -2


# node classes that bind a name in the scope they appear in
_BINDERS = frozenset({
    ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Import, ast.ImportFrom, ast.ExceptHandler,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
})


def _parameters(scope: AST) -> Iterator[Binding]:
    args = scope.args
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        yield Binding(a.arg, (0, 0), "param", a, a)
    if args.vararg:
        yield Binding(args.vararg.arg, (0, 0), "param", args.vararg, args.vararg)
    if args.kwarg:
        yield Binding(args.kwarg.arg, (0, 0), "param", args.kwarg, args.kwarg)


def _assignments(node: AST, cls: type) -> Iterator[Binding]:
    """Bindings made by an assignment-like statement or expression (not by defs and imports)."""
    if cls is ast.Assign:
        for t in node.targets:
            for name, idx in target_names(t):
                yield Binding(name.id, end(node), "assign" if idx == -1 else "unpack", node.value, node, idx)
    elif cls is ast.AnnAssign:
        if node.target.__class__ is ast.Name and node.value is not None:
            yield Binding(node.target.id, end(node), "assign", node.value, node)
    elif cls is ast.AugAssign:
        if node.target.__class__ is ast.Name:
            yield Binding(node.target.id, end(node), "aug", node.value, node)
    elif cls in (ast.For, ast.AsyncFor):
        for name, idx in target_names(node.target):
            yield Binding(name.id, end(node.iter), "for", node.iter, node, idx)
    elif cls in (ast.With, ast.AsyncWith):
        for item in node.items:
            if item.optional_vars is not None:
                for name, idx in target_names(item.optional_vars):
                    yield Binding(name.id, end(item.optional_vars), "with", item.context_expr, node, idx)
    elif cls is ast.NamedExpr:
        if node.target.__class__ is ast.Name:
            yield Binding(node.target.id, end(node), "walrus", node.value, node)
    elif cls in (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp):
        # the element expression comes first in the text but runs after the for clauses
        for gen in node.generators:
            for name, idx in target_names(gen.target):
                yield Binding(name.id, pos(node), "for", gen.iter, gen, idx)


def _bindings_of(node: AST, cls: type) -> Iterator[Binding]:
    """Every binding ``node`` itself makes in its scope (its children are visited separately)."""
    if cls in (ast.Import, ast.ImportFrom):
        for alias in node.names:
            bound = alias.asname or alias.name.split(".", 1)[0]
            yield Binding(bound, end(node), "import", None, node)
    elif cls is ast.ExceptHandler:
        if node.name:
            yield Binding(node.name, pos(node), "except", None, node)
    else:
        yield from _assignments(node, cls)
    if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        yield Binding(node.name, pos(node), "def" if cls is not ast.ClassDef else "class", None, node)


def file_bindings(nodes: dict[type, list[AST]]) -> dict[int, dict[str, list[Binding]]]:
    """``id(scope) -> name -> bindings`` for every scope of a file at once, made from the file's
    index of nodes by type (parent links set): each binding node is placed in the scope whose walk
    (:func:`collect_bindings`) meets it - no walk of the tree. Parameters are not included, and a
    scope's lists are not sorted yet (:func:`scope_table` does both for the scopes asked about)."""
    out: dict[int, dict[str, list[Binding]]] = {}
    for cls in _BINDERS:
        for node in nodes.get(cls, ()):
            scope = _walked_by(node)
            if scope is None:
                continue
            table = out.get(id(scope))
            if table is None:
                table = out[id(scope)] = {}
            for b in _bindings_of(node, cls):
                chain = table.get(b.name)
                if chain is None:
                    table[b.name] = [b]
                else:
                    chain.append(b)
    return out


def _walked_by(node: AST) -> AST | None:
    """The scope (function, lambda or module) whose walk meets ``node``: the body of a function
    or lambda, a decorator in the scope around its def; nothing meets a class body, the defaults
    and annotations of a def, or a lambda's defaults."""
    child = node
    anc = getattr(node, "_tw_parent", None)
    while anc is not None:
        cls = anc.__class__
        if cls is ast.FunctionDef or cls is ast.AsyncFunctionDef:
            field = getattr(child, "_tw_field", "")
            if field == "body":
                return anc
            if field != "decorator_list":
                return None
        elif cls is ast.ClassDef:
            if getattr(child, "_tw_field", "") != "decorator_list":
                return None
        elif cls is ast.Lambda:
            return anc if getattr(child, "_tw_field", "") == "body" else None
        elif cls is ast.Module:
            return anc
        child = anc
        anc = getattr(anc, "_tw_parent", None)
    return None


def scope_table(scope: AST, found: dict[str, list[Binding]] | None) -> dict[str, list[Binding]]:
    """What :func:`collect_bindings` gives for ``scope``, from its part of :func:`file_bindings`."""
    out: dict[str, list[Binding]] = {}
    if scope.__class__ in FUNCTION_TYPES:
        for b in _parameters(scope):
            out.setdefault(b.name, []).append(b)
    for name, chain in (found or {}).items():
        have = out.get(name)
        out[name] = have + chain if have is not None else list(chain)
    for chain in out.values():
        chain.sort(key=lambda b: b.pos)
    return out


def collect_bindings(scope: AST) -> dict[str, list[Binding]]:
    """Name -> its bindings in ``scope`` (nested functions and classes excluded), by position."""
    out: dict[str, list[Binding]] = {}
    if scope.__class__ is ast.Lambda:
        body: list[AST] = [scope.body]
    else:
        body = list(scope.body)
    if scope.__class__ in FUNCTION_TYPES:
        for b in _parameters(scope):
            out.setdefault(b.name, []).append(b)
    stack = body[::-1]
    while stack:
        node = stack.pop()
        cls = node.__class__
        if cls in _BINDERS:
            for b in _bindings_of(node, cls):
                out.setdefault(b.name, []).append(b)
        if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            # decorators and defaults run in this scope; the body does not
            stack.extend(reversed(node.decorator_list))
            continue
        if cls is ast.Lambda:
            continue
        stack.extend(children(node))
    for chain in out.values():
        chain.sort(key=lambda b: b.pos)
    return out
