"""One traversal of a parsed file: parent links, an index of nodes by type and of calls by name,
the enclosing function/class/loops/ifs of a node, and what the file's imports make of a name.

Rules never walk the tree themselves: a rule that looks for ``torch.load`` touches only the
calls named ``load``.
"""

from __future__ import annotations

import ast
from typing import Iterable, Iterator

from torchwise.lint.engine.nodes import AST, DEF_TYPES, KEPT_FIELDS, LOOP_TYPES, SCOPE_TYPES, canonical, children, kept_fields, pos


class SyntaxTree:
    """A parsed module, indexed once (the base of :class:`~torchwise.lint.engine.context.Context`)."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.nodes: dict[type, list[AST]] = {}
        self._index()
        self._cache: dict = {}
        self.imports = self._collect_imports()
        self._import_aliases: dict[str, list[str]] | None = None

    # ------------------------------------------------------------------ traversal and index
    def _index(self) -> None:
        nodes = self.nodes
        tree = self.tree
        tree._tw_parent = None  # type: ignore[attr-defined]
        tree._tw_field = ""  # type: ignore[attr-defined]
        stack: list[AST] = [tree]
        pop, push = stack.pop, stack.append
        kept = KEPT_FIELDS
        while stack:
            node = pop()
            cls = node.__class__
            bucket = nodes.get(cls)
            if bucket is None:
                nodes[cls] = [node]
            else:
                bucket.append(node)
            fields = kept.get(cls)
            if fields is None:
                fields = kept_fields(cls)
            for fname in fields:
                value = getattr(node, fname, None)
                if value.__class__ is list:
                    for child in value:
                        if isinstance(child, AST):
                            child._tw_parent = node  # type: ignore[attr-defined]
                            child._tw_field = fname  # type: ignore[attr-defined]
                            push(child)
                elif isinstance(value, AST):
                    value._tw_parent = node  # type: ignore[attr-defined]
                    value._tw_field = fname  # type: ignore[attr-defined]
                    push(value)

    @property
    def calls_by_name(self) -> dict[str, list[ast.Call]]:
        """Calls indexed by the last identifier of the called expression (``a.b.load(...)`` -> load)."""
        found = self._cache.get("calls")
        if found is None:
            found = {}
            for call in self.nodes.get(ast.Call, ()):
                func = call.func
                cls = func.__class__
                if cls is ast.Attribute:
                    key = func.attr
                elif cls is ast.Name:
                    key = func.id
                else:
                    continue
                bucket = found.get(key)
                if bucket is None:
                    found[key] = [call]
                else:
                    bucket.append(call)
            for bucket in found.values():
                bucket.sort(key=pos)
            self._cache["calls"] = found
        return found

    def calls_named(self, *names: str) -> list[ast.Call]:
        """Calls whose called expression ends with one of ``names`` (method or function)."""
        by_name = self.calls_by_name
        if len(names) == 1:
            return list(by_name.get(names[0], ()))
        out: list[ast.Call] = []
        for n in names:
            out.extend(by_name.get(n, ()))
        out.sort(key=pos)
        return out

    def calls_to(self, *qualnames: str) -> list[ast.Call]:
        """Calls that resolve, through the file's imports, to one of these dotted names."""
        wanted = set(qualnames)
        keys: set[str] = {q.rsplit(".", 1)[-1] for q in wanted}
        aliases = self.import_aliases
        for q in wanted:
            for local in aliases.get(q, ()):
                keys.add(local)
            # a module imported under another name: ``import torch.nn.functional as F`` -> F.x
        out = []
        for call in self.calls_named(*keys):
            q = self.qualname(call.func)
            if q is not None and q in wanted:
                out.append(call)
        return out

    # ------------------------------------------------------------------ parents and context
    @staticmethod
    def parent(node: AST) -> AST | None:
        return getattr(node, "_tw_parent", None)

    @staticmethod
    def ancestors(node: AST) -> Iterator[AST]:
        node = getattr(node, "_tw_parent", None)
        while node is not None:
            yield node
            node = getattr(node, "_tw_parent", None)

    def scope_of(self, node: AST) -> AST:
        """The innermost function (or lambda) containing ``node``, else the module."""
        for anc in self.ancestors(node):
            if isinstance(anc, SCOPE_TYPES):
                return anc
        return self.tree

    def function_of(self, node: AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for anc in self.ancestors(node):
            if anc.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef):
                return anc  # type: ignore[return-value]
            if anc.__class__ is ast.Lambda:
                return None
        return None

    def class_of(self, node: AST) -> ast.ClassDef | None:
        """The class whose method contains ``node`` (the class of ``self``)."""
        func = self.function_of(node)
        if func is None:
            return None
        parent = self.parent(func)
        return parent if parent.__class__ is ast.ClassDef else None  # type: ignore[return-value]

    def enclosing_loops(self, node: AST) -> list[AST]:
        """Loops around ``node`` inside its own function, innermost first (bodies only)."""
        out = []
        child = node
        for anc in self.ancestors(node):
            if isinstance(anc, DEF_TYPES):
                break
            if anc.__class__ in LOOP_TYPES:
                # the iterable of a for loop and the test of a while loop run once per pass
                # too, but only the body counts as "inside" for our purposes.
                if getattr(child, "_tw_field", "") in ("body", "orelse"):
                    out.append(anc)
            child = anc
        return out

    def enclosing_ifs(self, node: AST) -> list[tuple[AST, bool]]:
        """``(if_or_ifexp, in_body)`` pairs around ``node`` within its function, innermost first."""
        out = []
        child = node
        for anc in self.ancestors(node):
            if isinstance(anc, DEF_TYPES):
                break
            cls = anc.__class__
            if cls is ast.If or cls is ast.IfExp:
                field = getattr(child, "_tw_field", "")
                if field == "body":
                    out.append((anc, True))
                elif field == "orelse":
                    out.append((anc, False))
            child = anc
        return out

    @staticmethod
    def walk_body(nodes: Iterable[AST], into_defs: bool = False) -> Iterator[AST]:
        """Every node under ``nodes``; nested functions/classes/lambdas are skipped unless asked."""
        stack = list(nodes)[::-1]
        while stack:
            node = stack.pop()
            yield node
            if not into_defs and isinstance(node, DEF_TYPES):
                continue
            stack.extend(reversed(children(node)))

    def contains(self, outer: AST, inner: AST) -> bool:
        for anc in self.ancestors(inner):
            if anc is outer:
                return True
        return False

    def statement_of(self, node: AST) -> ast.stmt:
        while not isinstance(node, ast.stmt):
            parent = self.parent(node)
            if parent is None:
                break
            node = parent
        return node  # type: ignore[return-value]

    # ------------------------------------------------------------------ imports and names
    def _collect_imports(self) -> dict[str, str]:
        names: dict[str, str] = {}
        for node in self.nodes.get(ast.Import, ()):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    names[top] = top
        for node in self.nodes.get(ast.ImportFrom, ()):
            if node.level or not node.module:
                continue
            for alias in node.names:
                if alias.name == "*":
                    continue
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        if "torch" not in names and any(a.name == "*" for n in self.nodes.get(ast.ImportFrom, ()) for a in n.names) \
                and any(q.startswith("torch.") for q in names.values()):
            names["torch"] = "torch"  # `from pkg import *` handing on its own `import torch` (the file imports from torch too)
        return names

    @property
    def import_aliases(self) -> dict[str, list[str]]:
        """Canonical dotted name -> local names bound to exactly it by an import."""
        if self._import_aliases is None:
            rev: dict[str, list[str]] = {}
            for local, q in self.imports.items():
                rev.setdefault(canonical(q), []).append(local)
            self._import_aliases = rev
        return self._import_aliases

    def qualname(self, node: AST | None) -> str | None:
        """Dotted canonical name of a Name/Attribute chain rooted at an import, else None."""
        parts: list[str] = []
        while node is not None and node.__class__ is ast.Attribute:
            parts.append(node.attr)
            node = node.value
        if node is None or node.__class__ is not ast.Name:
            return None
        base = self.imports.get(node.id)
        if base is None:
            return None
        if parts:
            parts.reverse()
            return canonical(base + "." + ".".join(parts))
        return canonical(base)

    def imports_module(self, name: str) -> bool:
        """Does the file import ``name`` or something inside it?"""
        return any(q == name or q.startswith(name + ".") for q in self.imports.values())
