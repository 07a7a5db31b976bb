"""Def-use queries on a file: what a name was last bound to before a use, what an expression was
built from (``crit = nn.CrossEntropyLoss()``; ``self.bn = ...``; a parameter every caller fills
with the same kind of object), and the classes the file defines.
"""

from __future__ import annotations

import ast
from bisect import bisect_right

from torchwise.lint.engine.bindings import Binding, file_bindings, scope_table
from torchwise.lint.engine.nodes import AST
from torchwise.lint.engine.tree import SyntaxTree

# methods that return the module they are called on (``Net().to(device)`` is still a ``Net``)
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16",
                             "requires_grad_", "share_memory", "to_empty", "apply", "type"})


class DataFlow(SyntaxTree):
    """:class:`SyntaxTree` plus the bindings of each scope and the queries built on them."""

    # ------------------------------------------------------------------ bindings (def-use)
    def bindings(self, scope: AST) -> dict[str, list[Binding]]:
        """Name -> bindings in ``scope`` (a function or the module), in order of effect."""
        key = ("bindings", id(scope))
        found = self._cache.get(key)
        if found is None:
            every = self._cache.get("bindings:file")
            if every is None:  # every scope's bindings in one pass over the index (no walk per scope)
                every = self._cache["bindings:file"] = file_bindings(self.nodes)
            found = scope_table(scope, every.get(id(scope)))
            self._cache[key] = found
        return found

    def _binding_positions(self, scope: AST) -> dict[str, list[tuple[int, int]]]:
        key = ("bindpos", id(scope))
        found = self._cache.get(key)
        if found is None:
            found = {name: [b.pos for b in chain] for name, chain in self.bindings(scope).items()}
            self._cache[key] = found
        return found

    def binding_at(self, name: str, use: AST) -> Binding | None:
        """The binding of ``name`` that a use at ``use`` most plausibly sees.

        The last binding before the use in the use's own scope; a name never bound in a
        function falls back to the module's last binding of it. Positions are textual, which
        is exact for straight-line code and a close approximation inside loops and branches.
        """
        scope = self.scope_of(use)
        pos = (use.lineno, use.col_offset)
        while True:
            chain = self.bindings(scope).get(name)
            if chain:
                i = bisect_right(self._binding_positions(scope)[name], pos)
                if i:
                    return chain[i - 1]
                if scope is not self.tree:
                    return None  # bound later in this function only: a local we cannot see yet
            if scope is self.tree:
                return None
            # free variable: the enclosing function's binding, else the module's
            outer = self.scope_of(scope)
            if outer is self.tree:
                chain = self.bindings(self.tree).get(name)
                return chain[-1] if chain else None
            scope = outer
            pos = (10**9, 0)

    def resolve(self, expr: AST | None, use: AST | None = None, depth: int = 4) -> AST | None:
        """Follow plain ``a = b`` assignments from a Name to the expression it was bound to."""
        while expr is not None and expr.__class__ is ast.Name and depth > 0:
            b = self.binding_at(expr.id, use or expr)
            if b is None or b.kind not in ("assign", "walrus") or b.value is None:
                return expr
            use = b.node
            expr = b.value
            depth -= 1
        return expr

    def self_attr_values(self, cls: ast.ClassDef, attr: str) -> list[AST]:
        """Values assigned to ``self.<attr>`` in the methods of ``cls``, also as the matching part of a
        tuple assignment (``self.a, self.b = a, b``)."""
        key = ("selfattrs", id(cls))
        table = self._cache.get(key)
        if table is None:
            table = {}
            for item in cls.body:
                if item.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef) or not item.args.args:
                    continue
                self_name = item.args.args[0].arg
                for node in self.walk_body(item.body):
                    if node.__class__ is ast.Assign:
                        targets = node.targets
                        value = node.value
                    elif node.__class__ is ast.AnnAssign and node.value is not None:
                        targets = [node.target]
                        value = node.value
                    else:
                        continue
                    for t in targets:
                        if t.__class__ is ast.Attribute and t.value.__class__ is ast.Name and t.value.id == self_name:
                            table.setdefault(t.attr, []).append(value)
                        elif t.__class__ is ast.Tuple and value.__class__ is ast.Tuple and len(t.elts) == len(value.elts):
                            for part, item_value in zip(t.elts, value.elts):  # self.a, self.b = a, b
                                if part.__class__ is ast.Attribute and part.value.__class__ is ast.Name and part.value.id == self_name:
                                    table.setdefault(part.attr, []).append(item_value)
            self._cache[key] = table
        return table.get(attr, [])

    def single_self_value(self, expr: ast.Attribute, use: AST) -> AST | None:
        """The one value assigned to ``self.<attr>`` (``expr``) in the class around ``use``; None
        outside a class or when the attribute is assigned other than exactly once."""
        cls = self.class_of(use)
        values = self.self_attr_values(cls, expr.attr) if cls is not None else []
        return values[0] if len(values) == 1 else None

    def init_self_value(self, expr: AST, use: AST) -> AST | None:
        """The one value assigned to ``self.<attr>`` (``expr``), when that assignment is made in
        ``__init__``: a value the object is built with and keeps. None otherwise."""
        if expr.__class__ is not ast.Attribute or expr.value.__class__ is not ast.Name or expr.value.id != "self":
            return None
        value = self.single_self_value(expr, use)
        func = self.function_of(value) if value is not None else None
        return value if func is not None and func.__class__ is not ast.Lambda and func.name == "__init__" else None

    def constructed_from(self, expr: AST | None, use: AST | None = None, depth: int = 2) -> str | None:
        """What class built the object ``expr`` refers to: a canonical dotted name, or
        ``"local:Name"`` for a class defined in this file; None when unknown.

        Follows names through assignments (``crit = nn.CrossEntropyLoss(); f = crit``),
        ``self.x`` through the assignments of the enclosing class, and a function's parameter
        through the calls of that function in this file when they all pass the same kind of
        object (``train(model, nn.CrossEntropyLoss())`` -> ``criterion`` in ``train``).
        """
        if expr is None:
            return None
        use = use or expr
        for _ in range(4):
            if expr.__class__ is ast.Name:
                b = self.binding_at(expr.id, use)
                if b is not None and b.kind == "param" and depth > 0:
                    return self._param_from_callers(b, depth - 1)
                if b is None or b.kind not in ("assign", "walrus") or b.value is None:
                    return None
                use, expr = b.node, b.value
                continue
            if (
                expr.__class__ is ast.Attribute
                and expr.value.__class__ is ast.Name
                and expr.value.id == "self"
            ):
                cls = self.class_of(use)
                if cls is None:
                    return None
                values = self.self_attr_values(cls, expr.attr)
                kinds = {self._call_target(v) for v in values}
                kinds.discard(None)
                return kinds.pop() if len(kinds) == 1 else None
            if (
                expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute
                and expr.func.attr in _SELF_RETURNING and self.qualname(expr.func) is None
            ):
                expr = expr.func.value  # Net().to(device), model.cuda().train(): the same module
                continue
            return self._call_target(expr)
        return None

    def _param_from_callers(self, binding: Binding, depth: int) -> str | None:
        """The class every call site in this file passes for this parameter, if it is one."""
        arg = binding.node
        func = self.parent(self.parent(arg)) if self.parent(arg) is not None else None
        if func is None or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
            return None
        params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
        method = self.parent(func).__class__ is ast.ClassDef and params and params[0] in ("self", "cls")
        try:
            index = params.index(binding.name)
        except ValueError:
            index = None  # keyword-only
        kinds: set[str | None] = set()
        calls = self.calls_named(func.name)
        if not calls or len(calls) > 20:
            return None
        for call in calls:
            value = None
            for kw in call.keywords:
                if kw.arg == binding.name:
                    value = kw.value
            if value is None and index is not None:
                pos = index - (1 if method and call.func.__class__ is ast.Attribute else 0)
                if 0 <= pos < len(call.args) and not any(a.__class__ is ast.Starred for a in call.args[: pos + 1]):
                    value = call.args[pos]
            if value is None:
                return None
            kinds.add(self.constructed_from(value, call, depth))
            if None in kinds or len(kinds) > 1:
                return None
        return kinds.pop() if len(kinds) == 1 else None

    def _call_target(self, expr: AST) -> str | None:
        if expr.__class__ is not ast.Call:
            return None
        q = self.qualname(expr.func)
        if q is not None:
            return q
        if expr.func.__class__ is ast.Name and expr.func.id in self.local_classes:
            return "local:" + expr.func.id
        return None

    @property
    def local_classes(self) -> dict[str, ast.ClassDef]:
        found = self._cache.get("classes")
        if found is None:
            found = {c.name: c for c in self.nodes.get(ast.ClassDef, ())}
            self._cache["classes"] = found
        return found

    def local_class_bases(self, name: str, depth: int = 6) -> set[str]:
        """Canonical names of every base class of a local class (through local bases)."""
        out: set[str] = set()
        todo = [name]
        seen: set[str] = set()
        while todo and depth > 0:
            depth -= 1
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            cls = self.local_classes.get(n)
            if cls is None:
                continue
            for base in cls.bases:
                q = self.qualname(base)
                if q is not None:
                    out.add(q)
                elif base.__class__ is ast.Name:
                    out.add("local:" + base.id)
                    todo.append(base.id)
        return out
