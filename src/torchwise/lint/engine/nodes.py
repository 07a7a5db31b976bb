"""Node utilities the whole engine shares: node kinds, children, names of calls and arguments.

Pure functions on ``ast`` nodes; they know nothing of a file or its imports.
"""

from __future__ import annotations

import ast
from typing import Iterator

AST = ast.AST
FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)
DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)
SKIP_FIELDS = frozenset({"ctx", "op", "ops"})  # shared singleton nodes carry no information


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
    ("torch.nn.parallel.data_parallel.data_parallel", "torch.nn.parallel.data_parallel"),
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
    if position is not None and 0 <= position < len(call.args):  # (a method's `self` asked by position: -1)
        if not any(a.__class__ is ast.Starred for a in call.args[: position + 1]):
            return call.args[position]
    return None


def param_default(params: ast.arguments, name: str) -> AST | None:
    """The default value of parameter ``name`` (positional or keyword-only), None when it has none."""
    positional = [*params.posonlyargs, *params.args]
    for a, d in zip(positional[::-1], params.defaults[::-1]):
        if a.arg == name:
            return d
    for a, d in zip(params.kwonlyargs, params.kw_defaults):
        if a.arg == name:
            return d
    return None


def has_star_args(call: ast.Call) -> bool:
    """``f(*a)`` or ``f(**kw)``: arguments we cannot see."""
    return any(kw.arg is None for kw in call.keywords) or any(a.__class__ is ast.Starred for a in call.args)


def str_consts(node: AST) -> Iterator[str]:
    for sub in ast.walk(node):
        if sub.__class__ is ast.Constant and isinstance(sub.value, str):
            yield sub.value


# node class -> its fields less SKIP_FIELDS, in order (so the walks test no field name per node)
KEPT_FIELDS: dict[type, tuple[str, ...]] = {}


def kept_fields(cls: type) -> tuple[str, ...]:
    """``cls._fields`` without :data:`SKIP_FIELDS` (remembered per class)."""
    found = KEPT_FIELDS.get(cls)
    if found is None:
        found = KEPT_FIELDS[cls] = tuple(f for f in cls._fields if f not in SKIP_FIELDS)
    return found


def children(node: AST) -> list[AST]:
    """Child nodes (like ``ast.iter_child_nodes``, faster, without the shared context singletons)."""
    out: list[AST] = []
    fields = KEPT_FIELDS.get(node.__class__)
    if fields is None:
        fields = kept_fields(node.__class__)
    for fname in fields:
        value = getattr(node, fname, None)
        if value.__class__ is list:
            for child in value:
                if isinstance(child, AST):
                    out.append(child)
        elif isinstance(value, AST):
            out.append(value)
    return out


def pos(node: AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def end(node: AST) -> tuple[int, int]:
    return (node.end_lineno or 0, node.end_col_offset or 0)
