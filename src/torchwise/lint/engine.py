"""The analysis engine: one parse and one traversal per file, then cheap queries for the rules.

A :class:`Context` holds a parsed file and answers the questions rules ask:

* where is a node (1-based line/column, exact character offsets for edits);
* what does a name or attribute chain mean (``nn.CrossEntropyLoss`` -> ``torch.nn.CrossEntropyLoss``
  through ``import torch.nn as nn``, ``from torch import nn``, ``from ... import X as Y``);
* what was last bound to a name before a given use, in its function (or at module level),
  and what an instance was built from (``crit = nn.CrossEntropyLoss()``; ``self.bn = ...``);
* which function, class, loops, ``with`` blocks and ``if`` tests enclose a node.

Rules never walk the tree themselves: the traversal records parent links and an index of nodes
by type and of calls by the called name, so a rule that looks for ``torch.load`` touches only
the calls named ``load``. Only the standard library (``ast``, ``tokenize``) is used; torch is
never imported.
"""

from __future__ import annotations

import ast
import io
import re
from bisect import bisect_right
import tokenize
from dataclasses import dataclass
from typing import Iterable, Iterator

from torchwise.lint.project import NO_FACTS, ProjectFacts
from torchwise.lint.findings import Edit, Finding, Fix

AST = ast.AST
FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)
DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)
_SKIP_FIELDS = frozenset({"ctx", "op", "ops"})  # shared singleton nodes carry no information

_NEWLINE = re.compile(r"\r\n|\r|\n")
_NOQA = re.compile(r"#\s*noqa(?P<sep>\s*:\s*(?P<codes>[A-Za-z]+[0-9]*(?:[\s,]+[A-Za-z]+[0-9]*)*))?", re.I)

# Re-exports: several import paths name the same object; rules compare canonical names.
_CANONICAL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("torch.nn.modules.loss.", "torch.nn."),
    ("torch.nn.modules.conv.", "torch.nn."),
    ("torch.nn.modules.batchnorm.", "torch.nn."),
    ("torch.nn.modules.linear.", "torch.nn."),
    ("torch.nn.modules.module.", "torch.nn."),
    ("torch.nn.modules.container.", "torch.nn."),
    ("torch.nn.modules.activation.", "torch.nn."),
    ("torch.nn.modules.", "torch.nn."),
    ("torch.nn.parallel.data_parallel.DataParallel", "torch.nn.DataParallel"),
    ("torch.nn.parallel.DataParallel", "torch.nn.DataParallel"),
    ("torch.nn.parallel.distributed.", "torch.nn.parallel."),
    ("torch.utils.data.dataloader.", "torch.utils.data."),
    ("torch.utils.data.distributed.", "torch.utils.data."),
    ("torch.utils.data.sampler.", "torch.utils.data."),
    ("torch.serialization.load", "torch.load"),
    ("torch.serialization.save", "torch.save"),
    ("torch.cuda.random.", "torch.cuda."),
    ("torch.random.manual_seed", "torch.manual_seed"),
    ("torch.nn.init.", "torch.nn.init."),
    ("torch.multiprocessing.spawn.spawn", "torch.multiprocessing.spawn"),
)


# methods that return the module they are called on (``Net().to(device)`` is still a ``Net``)
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16",
                             "requires_grad_", "share_memory", "to_empty", "apply", "type"})


def canonical(qualname: str) -> str:
    """Map a re-exported dotted name onto the name rules compare against."""
    for prefix, repl in _CANONICAL_PREFIXES:
        if qualname.startswith(prefix):
            return repl + qualname[len(prefix):]
    return qualname


def last_name(node: AST | None) -> str | None:
    """The last identifier of a name, attribute chain or call: ``self.model.fc`` -> ``fc``."""
    while node is not None:
        cls = node.__class__
        if cls is ast.Name:
            return node.id
        if cls is ast.Attribute:
            return node.attr
        if cls is ast.Call:
            node = node.func
            continue
        return None
    return None


def root_name(node: AST | None) -> ast.Name | None:
    """The Name at the root of an attribute/call/subscript chain (``a`` in ``a.b(c)[0].d``)."""
    while node is not None:
        cls = node.__class__
        if cls is ast.Name:
            return node
        if cls is ast.Attribute or cls is ast.Subscript or cls is ast.Starred:
            node = node.value
        elif cls is ast.Call:
            node = node.func
        else:
            return None
    return None


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def argument(call: ast.Call, name: str, position: int | None = None) -> AST | None:
    """The value passed for parameter ``name`` (by keyword, or at ``position``), else None."""
    kw = keyword(call, name)
    if kw is not None:
        return kw.value
    if position is not None and len(call.args) > position:
        if not any(a.__class__ is ast.Starred for a in call.args[: position + 1]):
            return call.args[position]
    return None


def has_star_args(call: ast.Call) -> bool:
    """``f(*a)`` or ``f(**kw)``: arguments we cannot see."""
    return any(kw.arg is None for kw in call.keywords) or any(a.__class__ is ast.Starred for a in call.args)


def str_consts(node: AST) -> Iterator[str]:
    for sub in ast.walk(node):
        if sub.__class__ is ast.Constant and isinstance(sub.value, str):
            yield sub.value


@dataclass(frozen=True)
class Binding:
    """One binding of a name in a scope. ``pos`` is where it takes effect (line, column)."""

    name: str
    pos: tuple[int, int]
    kind: str  # assign | unpack | aug | for | with | param | def | class | import | except | walrus | global
    value: AST | None  # the bound expression (assign/unpack/with/for iter/walrus), else the node
    node: AST  # the statement or node that binds
    index: int = -1  # position in a tuple unpack


class Context:
    """A parsed file and the queries rules use. Built by :func:`build_context`."""

    def __init__(self, source: str, path: str, tree: ast.Module, project: ProjectFacts | None = None) -> None:
        self.source = source
        self.path = path
        self.tree = tree
        # facts about the rest of the project (see torchwise.lint.project); none for a lone file
        self.project: ProjectFacts = project if project is not None else NO_FACTS
        self.nodes: dict[type, list[AST]] = {}
        self._index()
        starts = [0]
        starts.extend(m.end() for m in _NEWLINE.finditer(source))
        starts.append(len(source))
        self._line_starts = starts
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
        skip = _SKIP_FIELDS
        while stack:
            node = pop()
            cls = node.__class__
            bucket = nodes.get(cls)
            if bucket is None:
                nodes[cls] = [node]
            else:
                bucket.append(node)
            for fname in node._fields:
                if fname in skip:
                    continue
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
                bucket.sort(key=_pos)
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
        out.sort(key=_pos)
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

    # ------------------------------------------------------------------ bindings (def-use)
    def bindings(self, scope: AST) -> dict[str, list[Binding]]:
        """Name -> bindings in ``scope`` (a function or the module), in order of effect."""
        key = ("bindings", id(scope))
        found = self._cache.get(key)
        if found is None:
            found = _collect_bindings(scope)
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
        """Values assigned to ``self.<attr>`` in the methods of ``cls``."""
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
            self._cache[key] = table
        return table.get(attr, [])

    def single_self_value(self, expr: ast.Attribute, use: AST) -> AST | None:
        """The one value assigned to ``self.<attr>`` (``expr``) in the class around ``use``; None
        outside a class or when the attribute is assigned other than exactly once."""
        cls = self.class_of(use)
        values = self.self_attr_values(cls, expr.attr) if cls is not None else []
        return values[0] if len(values) == 1 else None

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

    # ------------------------------------------------------------------ positions and edits
    def offset(self, line: int, col_bytes: int) -> int:
        """Character offset of (1-based line, UTF-8 byte column) as the ast reports them."""
        start = self._line_starts[line - 1]
        end = self._line_starts[line] if line < len(self._line_starts) else len(self.source)
        text = self.source[start:end]
        if text.isascii():
            return start + col_bytes
        return start + len(text.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))

    def char_col(self, line: int, col_bytes: int) -> int:
        return self.offset(line, col_bytes) - self._line_starts[line - 1]

    def span(self, node: AST) -> tuple[int, int]:
        """``(start, end)`` character offsets of ``node`` in the source."""
        return (
            self.offset(node.lineno, node.col_offset),
            self.offset(node.end_lineno, node.end_col_offset),
        )

    def text(self, node: AST) -> str:
        start, end = self.span(node)
        return self.source[start:end]

    def line_text(self, line: int) -> str:
        if line < 1 or line >= len(self._line_starts):
            return ""
        return self.source[self._line_starts[line - 1] : self._line_starts[line]].rstrip("\r\n")

    def replace(self, node: AST, text: str) -> Edit:
        start, end = self.span(node)
        return Edit(start, end, text)

    def replace_attr(self, node: ast.Attribute, new_attr: str) -> Edit | None:
        """Edit that renames the attribute of ``a.b`` (only ``b``), or None if it cannot be located."""
        end = self.offset(node.end_lineno, node.end_col_offset)
        start = end - len(node.attr)
        if self.source[start:end] != node.attr:
            return None
        return Edit(start, end, new_attr)

    def add_keyword(self, call: ast.Call, text: str) -> Edit | None:
        """Edit that appends the argument ``text`` (e.g. ``weights_only=True``) to ``call``."""
        items: list[AST] = list(call.args) + list(call.keywords)
        if items:
            last = max(items, key=lambda n: (n.end_lineno, n.end_col_offset))
            if len(call.args) == 1 and not call.keywords and call.args[0].__class__ is ast.GeneratorExp:
                inner = self.text(call.args[0])
                if not inner.startswith("("):
                    return None
            pos = self.offset(last.end_lineno, last.end_col_offset)
            return Edit(pos, pos, ", " + text)
        end = self.offset(call.end_lineno, call.end_col_offset)
        if self.source[end - 1 : end] != ")":
            return None
        func_end = self.offset(call.func.end_lineno, call.func.end_col_offset)
        between = self.source[func_end : end - 1]
        if between.strip() != "(":
            return None  # comments or line breaks inside empty parentheses: leave them alone
        return Edit(end - 1, end - 1, text)

    def finding(
        self,
        code: str,
        node: AST,
        message: str,
        suggestion: str | None = None,
        fix: Fix | None = None,
        end_node: AST | None = None,
    ) -> Finding:
        end_node = end_node or node
        line = node.lineno
        end_line = end_node.end_lineno or line
        stmt = self.statement_of(node)
        if isinstance(stmt, ast.stmt):
            header = _header_end(stmt)
            lines = tuple(sorted({line, end_line, header}))
        else:
            lines = (line, end_line)
        return Finding(
            path=self.path,
            line=line,
            col=self.char_col(line, node.col_offset) + 1,
            code=code,
            message=message,
            end_line=end_line,
            end_col=self.char_col(end_line, end_node.end_col_offset or 0) + 1,
            suggestion=suggestion,
            fix=fix,
            noqa_lines=lines,
        )

    # ------------------------------------------------------------------ noqa comments
    def noqa(self, line: int) -> frozenset[str] | None:
        """Codes suppressed on ``line``: None (no noqa), empty set (bare ``# noqa``: all), or codes."""
        table = self._cache.get("noqa")
        if table is None:
            table = self._noqa_table()
            self._cache["noqa"] = table
        return table.get(line)

    def _noqa_table(self) -> dict[int, frozenset[str]]:
        table: dict[int, frozenset[str]] = {}
        if "noqa" not in self.source.lower():
            return table
        comments: list[tuple[int, str]] = []
        try:
            tokens = tokenize.generate_tokens(io.StringIO(self.source).readline)
            for tok in tokens:
                if tok.type == tokenize.COMMENT:
                    comments.append((tok.start[0], tok.string))
        except (tokenize.TokenError, SyntaxError, ValueError, IndentationError):
            comments = [(i, self.line_text(i)) for i in range(1, len(self._line_starts))]
        for line, comment in comments:
            m = _NOQA.search(comment)
            if m is None:
                continue
            codes = m.group("codes")
            if codes:
                table[line] = frozenset(c.upper() for c in re.split(r"[\s,]+", codes) if c)
            elif m.group("sep"):
                continue  # "# noqa:" followed by nothing we understand: not a blanket noqa
            else:
                table[line] = frozenset()
        return table

    def suppressed(self, finding: Finding) -> bool:
        for line in finding.noqa_lines or {finding.line, finding.end_line}:
            codes = self.noqa(line)
            if codes is None:
                continue
            if not codes or any(finding.code.startswith(c) for c in codes):
                return True
        return False


def _header_end(stmt: ast.stmt) -> int:
    """Last line of a statement's header: the whole simple statement, or up to the colon of a
    compound one (``for x in (...):`` spanning lines)."""
    if not hasattr(stmt, "body"):
        return stmt.end_lineno or stmt.lineno
    parts: list[AST] = []
    for name in ("test", "iter", "target", "items", "args", "returns", "bases", "keywords", "subject"):
        value = getattr(stmt, name, None)
        if isinstance(value, list):
            parts.extend(v for v in value if isinstance(v, AST))
        elif isinstance(value, AST):
            parts.append(value)
    ends = [getattr(p, "end_lineno", None) or getattr(getattr(p, "optional_vars", None) or getattr(p, "context_expr", None), "end_lineno", None) for p in parts]
    ends = [e for e in ends if e]
    return max(ends) if ends else stmt.lineno


def children(node: AST) -> list[AST]:
    """Child nodes (like ``ast.iter_child_nodes``, faster, without the shared context singletons)."""
    out: list[AST] = []
    for fname in node._fields:
        if fname in _SKIP_FIELDS:
            continue
        value = getattr(node, fname, None)
        if value.__class__ is list:
            for child in value:
                if isinstance(child, AST):
                    out.append(child)
        elif isinstance(value, AST):
            out.append(value)
    return out


def _pos(node: AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _end(node: AST) -> tuple[int, int]:
    return (node.end_lineno or 0, node.end_col_offset or 0)


def _target_names(target: AST) -> Iterator[tuple[ast.Name, int]]:
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
                for name, _ in _target_names(elt):
                    yield name, -2


def _collect_bindings(scope: AST) -> dict[str, list[Binding]]:
    out: dict[str, list[Binding]] = {}

    def add(name: str, pos: tuple[int, int], kind: str, value: AST | None, node: AST, index: int = -1) -> None:
        out.setdefault(name, []).append(Binding(name, pos, kind, value, node, index))

    if scope.__class__ is ast.Module:
        body: list[AST] = list(scope.body)
    elif scope.__class__ is ast.Lambda:
        body = [scope.body]
    else:
        body = list(scope.body)
    if scope.__class__ in FUNCTION_TYPES:
        args = scope.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            add(a.arg, (0, 0), "param", a, a)
        if args.vararg:
            add(args.vararg.arg, (0, 0), "param", args.vararg, args.vararg)
        if args.kwarg:
            add(args.kwarg.arg, (0, 0), "param", args.kwarg, args.kwarg)

    stack = body[::-1]
    while stack:
        node = stack.pop()
        cls = node.__class__
        if cls is ast.Assign:
            for t in node.targets:
                for name, idx in _target_names(t):
                    kind = "assign" if idx == -1 else "unpack"
                    add(name.id, _end(node), kind, node.value, node, idx)
        elif cls is ast.AnnAssign:
            if node.target.__class__ is ast.Name and node.value is not None:
                add(node.target.id, _end(node), "assign", node.value, node)
        elif cls is ast.AugAssign:
            if node.target.__class__ is ast.Name:
                add(node.target.id, _end(node), "aug", node.value, node)
        elif cls in (ast.For, ast.AsyncFor):
            for name, idx in _target_names(node.target):
                add(name.id, _end(node.iter), "for", node.iter, node, idx)
        elif cls in (ast.With, ast.AsyncWith):
            for item in node.items:
                if item.optional_vars is not None:
                    for name, idx in _target_names(item.optional_vars):
                        add(name.id, _end(item.optional_vars), "with", item.context_expr, node, idx)
        elif cls is ast.NamedExpr:
            if node.target.__class__ is ast.Name:
                add(node.target.id, _end(node), "walrus", node.value, node)
        elif cls in (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp):
            # the element expression comes first in the text but runs after the for clauses
            for gen in node.generators:
                for name, idx in _target_names(gen.target):
                    add(name.id, _pos(node), "for", gen.iter, gen, idx)
        elif cls in (ast.Import, ast.ImportFrom):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".", 1)[0]
                add(bound, _end(node), "import", None, node)
        elif cls is ast.ExceptHandler and node.name:
            add(node.name, _pos(node), "except", None, node)
        if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            add(node.name, _pos(node), "def" if cls is not ast.ClassDef else "class", None, node)
            # decorators and defaults run in this scope; the body does not
            stack.extend(reversed(node.decorator_list))
            continue
        if cls is ast.Lambda:
            continue
        stack.extend(children(node))
    for chain in out.values():
        chain.sort(key=lambda b: b.pos)
    return out


def parse(source: str, path: str) -> ast.Module:
    return ast.parse(source, filename=path)


def build_context(source: str, path: str, tree: ast.Module | None = None) -> Context:
    return Context(source, path, tree if tree is not None else parse(source, path))
