"""TW116: stripping a ``module.`` prefix with ``k[7:]`` whether or not the key has it."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule

_STATE_WORDS = lazy_compile(r"state|dict|ckpt|checkpoint|weights|params|^sd$|^d$|model", re.I)


def _seven(node: ast.AST | None) -> bool:
    if node is None:
        return False
    if node.__class__ is ast.Constant and node.value == 7 and type(node.value) is int:
        return True
    # len("module.")
    return (
        node.__class__ is ast.Call and node.func.__class__ is ast.Name and node.func.id == "len"
        and len(node.args) == 1 and node.args[0].__class__ is ast.Constant and node.args[0].value == "module."
    )


def _key_source(ctx: Context, name: str, use: ast.AST) -> ast.AST | None:
    """The iterable a loop/comprehension variable ``name`` takes its values from."""
    b = ctx.binding_at(name, use)
    if b is None or b.kind != "for" or b.value is None:
        return None
    if b.index not in (-1, 0):
        return None
    return b.value


def _iterates_state_dict(ctx: Context, it: ast.AST) -> bool:
    if it.__class__ is ast.Call and it.func.__class__ is ast.Attribute and it.func.attr in ("items", "keys"):
        obj = it.func.value
    else:
        obj = it
    if obj.__class__ is ast.Call:
        n = last_name(obj.func)
        return n in ("state_dict", "load") or (ctx.qualname(obj.func) or "").endswith("torch.load")
    if obj.__class__ is ast.Subscript:
        key = obj.slice
        return key.__class__ is ast.Constant and isinstance(key.value, str) and bool(_STATE_WORDS.search(key.value))
    n = last_name(obj)
    return bool(n and _STATE_WORDS.search(n))


def _guarded(ctx: Context, node: ast.AST, name: str) -> bool:
    """Is there a ``startswith("module.")``-style test on the way to ``node``?"""
    tests: list[ast.AST] = [t for t, _ in ctx.enclosing_ifs(node)]
    for anc in ctx.ancestors(node):
        if anc.__class__ in (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp):
            for gen in anc.generators:
                tests.extend(gen.ifs)
        if anc.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
            break
    for t in tests:
        test = t.test if t.__class__ in (ast.If, ast.IfExp) else t
        if any(sub.__class__ is ast.Constant and isinstance(sub.value, str) and sub.value.startswith("module")
               for sub in ast.walk(test)) or (test.__class__ is ast.Name and _prefix_flag(ctx, test, node)):
            return True
    return False


def _names_module(test: ast.AST) -> bool:
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        return False  # `not k.startswith('module.')`: the keys lack the prefix
    return any(sub.__class__ is ast.Constant and isinstance(sub.value, str) and sub.value.startswith("module")
               for sub in ast.walk(test))


def _prefix_flag(ctx: Context, flag: ast.Name, use: ast.AST) -> bool:
    """``if undo_dp:`` where every true value the function gives the flag comes from a ``module.``
    test: ``undo_dp = True`` only in the branch of ``if keys[0].startswith('module.')``, or
    ``undo_dp = any(k.startswith('module.') for k in sd)`` - the strip runs only on prefixed keys."""
    chain = ctx.bindings(ctx.scope_of(use)).get(flag.id, [])
    truths = [b for b in chain if not (b.kind == "assign" and b.value.__class__ is ast.Constant and not b.value.value)]
    return bool(truths) and all(
        b.kind == "assign" and b.value is not None and (
            _names_module(b.value) or (b.value.__class__ is ast.Constant and b.value.value is True and any(
                i.__class__ is ast.If and inside and _names_module(i.test) for i, inside in ctx.enclosing_ifs(b.node))))
        for b in truths)


_WRAPPERS = frozenset({"AveragedModel", "DataParallel", "DistributedDataParallel"})
_COPIES = frozenset({"deepcopy", "copy", "dict", "OrderedDict"})


def _wrapper_state(ctx: Context, it: ast.AST, use: ast.AST) -> bool:
    """The keys come from ``w.state_dict()`` (also a copy of it, or a name bound to one) of a live
    ``AveragedModel``, ``DataParallel`` or ``DistributedDataParallel`` - built here, or a parameter
    annotated as one: the wrapper's own state dict has the prefix on every key."""
    obj = it.func.value if it.__class__ is ast.Call and it.func.__class__ is ast.Attribute and it.func.attr in ("items", "keys") else it
    for _ in range(3):
        if obj.__class__ is ast.Name:
            obj = ctx.resolve(obj, use)
        if obj.__class__ is ast.Call and last_name(obj.func) in _COPIES and len(obj.args) == 1:
            obj = obj.args[0]
            continue
        break
    if obj.__class__ is not ast.Call or obj.func.__class__ is not ast.Attribute or obj.func.attr != "state_dict":
        return False
    owner = obj.func.value
    if owner.__class__ is ast.Name:
        b = ctx.binding_at(owner.id, use)
        if b is not None and b.kind == "param" and b.node.annotation is not None:
            return last_name(b.node.annotation) in _WRAPPERS
        # every binding of the name wraps (not `if n_gpu > 1: model = DataParallel(model)`)
        chain = ctx.bindings(ctx.scope_of(use)).get(owner.id, [])
        return bool(chain) and all(c.kind == "assign" and _wraps(ctx, c.value, c.node) for c in chain)
    return _wraps(ctx, owner, use)


def _wraps(ctx: Context, expr: ast.AST, use: ast.AST) -> bool:
    built = ctx.constructed_from(expr, use, depth=0)
    return built is not None and built.rsplit(".", 1)[-1] in _WRAPPERS


class ModulePrefixSlice(Rule):
    code = "TW116"
    per_call = True
    name = "module-prefix-slice"
    triggers = ("7:", "7 :", "module.")
    doc = """\
What it flags
  `key[7:]` (or `key[len("module.")]`) applied to the keys of a state dict - a loop or
  comprehension over `state_dict.items()`/`.keys()`, `checkpoint["model"]`, `torch.load(...)`
  - with no test that the key really starts with `module.`. Not flagged: a strip under a flag
  that only a `module.` test sets (`if keys[0].startswith('module.'): undo_dp = True`, then
  `if undo_dp: ... k[7:]`, or `undo_dp = any(k.startswith('module.') for k in sd)`); the keys of a live
  wrapper's own `state_dict()` (an `AveragedModel`, `DataParallel` or `DistributedDataParallel`
  built in the file, or a parameter annotated as one; also a copy of it), which all carry the
  prefix.

Why it matters
  The slice assumes every key carries the `module.` prefix that `DataParallel` and
  `DistributedDataParallel` add when saving. A checkpoint saved without a wrapper, or a mix,
  loses its first seven characters: `conv1.weight` becomes `weight`, loading fails with
  missing keys or, with `strict=False`, silently loads nothing.

Example
  new_sd = {k[7:]: v for k, v in state_dict.items()}       # TW116

Fix
  Strip only a real prefix: `k.removeprefix("module.")` (Python 3.9+), or
  `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "module.")`, or
  `torchwise.load_state_dict`, which handles the prefix either way.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for node in ctx.nodes.get(ast.Subscript, ()):
            sl = node.slice
            if sl.__class__ is not ast.Slice or sl.upper is not None or sl.step is not None or not _seven(sl.lower):
                continue
            if node.value.__class__ is not ast.Name:
                continue
            name = node.value.id
            it = _key_source(ctx, name, node)
            if it is None or not _iterates_state_dict(ctx, it):
                continue
            if _guarded(ctx, node, name):
                continue
            if _wrapper_state(ctx, it, node):
                continue  # a live DataParallel/DDP/AveragedModel's own state dict: every key has the prefix
            yield ctx.finding(
                self.code, node,
                f"{name}[7:] drops the first 7 characters of every key, also of keys without a 'module.' prefix",
                suggestion=f'strip only a real prefix: {name}.removeprefix("module.")',
            )


RULE = ModulePrefixSlice()
