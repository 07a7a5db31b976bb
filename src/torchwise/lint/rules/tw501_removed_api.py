"""TW501: calls or imports of functions PyTorch has removed."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.semantics.api_symbols import REMOVED, REMOVED_MODULES, removed_module, symbol_calls, symbol_imports
from torchwise.lint.semantics.files import in_compat_fallback
from torchwise.lint.semantics.iternext import loader_iterator_nexts
from torchwise.lint.engine import Context, canonical, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


class RemovedApi(Rule):
    code = "TW501"
    name = "removed-api"
    triggers = ("solve", "symeig", "matrix_rank", "lstsq", "eig", "zero_gradients", "_six", "load_lua", "Scale", "SizedCrop",
                "gesv", "gels", "potr", "pstrf", "trtrs", "btri", "ffi", "legacy", "trainer", "serialization", "fft", "nn._functions", "Function",
                "models.utils", "functional_tensor", ".next()")
    doc = """\
What it flags
  A call of, or `from ... import` of, a function that current PyTorch no longer has:
  `torch.solve`, `torch.symeig`, `torch.matrix_rank`, `torch.lstsq`, `torch.eig` (under any
  import alias; deleted in PyTorch 2.0), the LAPACK-named functions deleted in PyTorch 1.2/1.3
  (`torch.gesv`, `torch.gels`, `torch.potrf`, `torch.potrs`, `torch.potri`, `torch.pstrf`,
  `torch.trtrs`, `torch.btrifact`, `torch.btrifact_with_info`, `torch.btrisolve`,
  `torch.btriunpack`), the old FFT functions deleted in PyTorch 1.8 (`torch.rfft`, `torch.irfft`,
  `torch.ifft`, and `torch.fft(x, signal_ndim)` called as a function: `torch.fft` is now a
  module, whose `torch.fft.fft(...)` is not flagged) and their tensor-method forms (`A.potrf()`, `b.gesv(A)`: names no other
  common library uses as methods; not where the file defines a function or method of that
  name), `torch.autograd.gradcheck.zero_gradients`, and the names of `torch._six`
  (`string_classes`, `int_classes`, `container_abcs`, `inf`...; the module went in PyTorch 2.0),
  and `torch.utils.serialization.load_lua` (Lua Torch `.t7` files; gone since PyTorch 1.0); and
  torchvision's `transforms.Scale` and `transforms.RandomSizedCrop` (deprecated since 0.2,
  deleted in torchvision 0.12: `Resize`, `RandomResizedCrop`). A class or function of the
  project that happens to be called `Scale` is not torchvision's and is left alone.
  Any import of a module PyTorch deleted: `torch.utils.ffi` (`from torch.utils.ffi import
  create_extension`, the generated `_wrap_function` wrappers of old C extensions; gone in
  PyTorch 1.0, use `torch.utils.cpp_extension`), `torch.utils.serialization`,
  `torch.utils.trainer` and `torch.legacy` (gone in 1.0), `torch._six` (gone in 2.0), and the
  submodules of the pre-0.4 package `torch.nn._functions` (`from torch.nn._functions.padding
  import ConstantPad2d`, `.thnn`, `.rnn`, `.linear`...; `torch.nn._functions` is one small module
  now, and `from torch.nn._functions import SyncBatchNorm` still works and is not flagged), once
  per import line; and a name of such a module reached as an attribute of `torch`
  (`isinstance(root, torch._six.string_classes)`, `torch._six.inf`), once per statement.
  Also torchvision's `torchvision.models.utils` (`from torchvision.models.utils import
  load_state_dict_from_url`: the module went in torchvision 0.10; the function lives in
  `torch.hub`); `torchvision.models._utils` still exists and is not flagged. And
  `torchvision.transforms.functional_tensor` (gone in torchvision 0.17; use
  `torchvision.transforms.functional`); the private `transforms._functional_tensor` is not flagged.
  `load_lua(path)` called by its bare name after `from torch.utils.serialization import load_lua`
  (the call site, besides the import line).
  `it.next()` on an iterator of a DataLoader (`it = iter(train_loader)`, `self.val_it =
  iter(self.val_loader)`, `iter(loader).next()`, `loader.__iter__().next()`): the Python-2 alias
  went in PyTorch 1.13 (AttributeError); use `next(it)`. The loader must be evidently one: a
  `DataLoader(...)` built in the file, or a name that says "loader" in a project that defines no
  `next` method of its own. Not flagged: another object's `next()` (a data provider, a sampler, a
  prefetcher), `next(it)`, an iterator of a list or of `enumerate(...)`.
  A legacy autograd Function: a subclass of `torch.autograd.Function` whose `forward` is a plain
  method and which is used as an instance (it defines `__init__`, or the file calls
  `Pad(n)(x)`): calling an instance raises RuntimeError since PyTorch 1.5 (reported at the
  class). Not flagged: a static `forward(ctx, ...)`, or a non-static one only used through `.apply`.
  An import (or attribute use) inside `try:` whose `except` catches the ImportError (or AttributeError: a fallback
  for newer versions), in such an `except` (the old-version fallback), or in a branch gated on the torch version,
  is left alone.

Why it matters
  These were deprecated for several releases and then deleted; the line fails with an
  AttributeError or ImportError as soon as it runs on a current version, often deep into a job
  when the rarely used code path is reached.

Example
  x = torch.solve(b, A)                                # TW501
  resize = transforms.Scale(256)                       # TW501

Fix
  Use the `torch.linalg` function named in the finding (`torch.linalg.solve(A, b)`: the
  argument order differs, so rewrite it by hand).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call, q in symbol_calls(ctx, REMOVED):
            yield ctx.finding(self.code, call, f"{q} was removed from {_library(q)}; use {REMOVED[q]}",
                              suggestion=f"use {REMOVED[q]}", end_node=call.func)
        for node, alias, q in symbol_imports(ctx, REMOVED):
            if _import_guarded(ctx, node):
                continue  # try: from torch._six import inf / except ImportError: from torch import inf
            yield ctx.finding(self.code, node, f"import of {q}, which was removed from {_library(q)}; use {REMOVED[q]}",
                              suggestion=f"use {REMOVED[q]}")
        yield from _bare_lua_calls(self.code, ctx)
        yield from _method_forms(self.code, ctx)
        for call in loader_iterator_nexts(ctx):
            it = ctx.text(call.func.value)
            yield ctx.finding(self.code, call, f"{it}.next(): DataLoader iterators lost their Python-2 .next() alias "
                              "in PyTorch 1.13 (AttributeError); use next(...)", suggestion=f"use next({it})",
                              end_node=call.func)
        yield from _fft_called(self.code, ctx)
        yield from _module_imports(self.code, ctx)
        yield from _module_attributes(self.code, ctx)
        if "Function" in ctx.source:
            yield from _legacy_functions(self.code, ctx)


_FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
_STATIC = frozenset({"staticmethod", "classmethod"})


def _legacy_functions(code: str, ctx: Context) -> Iterator[Finding]:
    """``class Pad(Function)`` with ``__init__`` and a plain ``def forward(self, x)``, used as
    ``Pad(n)(x)``: the pre-0.4 style of autograd Function. Calling an instance raises RuntimeError
    since PyTorch 1.5. Told by a non-static ``forward`` plus instance state (``__init__``) or an
    instance made in the same file; a non-static ``forward(ctx, ...)`` used through ``.apply`` works
    and is left alone."""
    for cls in ctx.nodes.get(ast.ClassDef, ()):
        if not any(ctx.qualname(b) in _FUNCTION_BASES for b in cls.bases):
            continue
        methods = {d.name: d for d in cls.body if d.__class__ is ast.FunctionDef}
        forward = methods.get("forward")
        if forward is None or any(last_name(d) in _STATIC for d in forward.decorator_list):
            continue
        if "__init__" not in methods and not any(
                c.func.__class__ is ast.Name and ctx.parent(c).__class__ is ast.Call and ctx.parent(c).func is c
                for c in ctx.calls_named(cls.name)):
            continue
        yield ctx.finding(code, cls, f"{cls.name} is a legacy autograd Function (non-static forward, used as an instance): "
                          "calling an instance raises RuntimeError since PyTorch 1.5",
                          suggestion="make forward/backward @staticmethods taking ctx, and call "
                                     f"{cls.name}.apply(...)")


def _bare_lua_calls(code: str, ctx: Context) -> Iterator[Finding]:
    """``load_lua(path)`` after ``from torch.utils.serialization import load_lua``: the call site is
    where the ``.t7`` reader has to be replaced (the import line is reported as well)."""
    if "load_lua(" not in ctx.source:
        return
    for call in ctx.calls_named("load_lua"):
        if call.func.__class__ is ast.Name and ctx.qualname(call.func) == "torch.utils.serialization.load_lua" \
                and not in_compat_fallback(ctx, call):
            yield ctx.finding(code, call, "load_lua was removed from PyTorch 1.0; use "
                              f"{REMOVED['torch.utils.serialization.load_lua']}", end_node=call.func)


def _fft_called(code: str, ctx: Context) -> Iterator[Finding]:
    """``torch.fft(x, 2)``: the function PyTorch 1.8 replaced by the ``torch.fft`` module (calling
    the module fails); ``torch.fft.fft(x)`` and a version-gated old branch are left alone."""
    if "fft(" not in ctx.source:
        return
    for call in ctx.calls_named("fft"):
        if call.func.__class__ is ast.Attribute and ctx.qualname(call.func) == "torch.fft" and not in_compat_fallback(ctx, call):
            yield ctx.finding(code, call, "torch.fft(...) as a function was removed from PyTorch 1.8 (torch.fft is a module now); "
                              "use torch.fft.fft (torch.fft.fftn for several signal dimensions)",
                              suggestion="use torch.fft.fft / torch.fft.fftn", end_node=call.func)


# the last part of each deleted module's name (``torch._six`` -> ``_six``): attribute pre-filter
_MODULE_TAILS = frozenset(m.rsplit(".", 1)[-1] for m in REMOVED_MODULES)


def _module_attributes(code: str, ctx: Context) -> Iterator[Finding]:
    """``isinstance(root, torch._six.string_classes)``: a name of a deleted module reached as an
    attribute of an imported ``torch`` (the module is gone, so the attribute lookup fails), once per
    statement; a call already reported by name, a ``try:`` whose ``except`` catches the
    AttributeError and a version-gated branch are left alone."""
    seen: set[int] = set()
    for node in ctx.nodes.get(ast.Attribute, ()):
        if node.attr not in _MODULE_TAILS or node.value.__class__ not in (ast.Name, ast.Attribute):
            continue
        module = ctx.qualname(node)
        if module not in REMOVED_MODULES:
            continue
        use = ctx.parent(node)
        if use.__class__ is not ast.Attribute or use.value is not node:
            use = node
        parent = ctx.parent(use)
        if parent.__class__ is ast.Call and parent.func is use and ctx.qualname(use) in REMOVED:
            continue  # torch._six.something(...): reported as a call above
        stmt = ctx.statement_of(use)
        if id(stmt) in seen or _import_guarded(ctx, use, _ATTRIBUTE_ERRORS) or in_compat_fallback(ctx, use):
            continue
        seen.add(id(stmt))
        fix = REMOVED.get(ctx.qualname(use) or "") or REMOVED_MODULES[module]
        yield ctx.finding(code, use, f"{ctx.text(use)}: {module} was removed from {_library(module)}; use {fix}",
                          suggestion=f"use {fix}")


def _module_imports(code: str, ctx: Context) -> Iterator[Finding]:
    """``from torch.utils.ffi import create_extension``, ``import torch.legacy.nn``: an import of a
    deleted module (a line whose names are reported above is not reported again)."""
    for node in ctx.nodes.get(ast.ImportFrom, ()):
        if node.level or not node.module:
            continue
        module = removed_module(node.module) or next(
            (m for a in node.names if (m := removed_module(f"{node.module}.{a.name}"))), None)
        if module is None or any(canonical(f"{node.module}.{a.name}") in REMOVED for a in node.names):
            continue
        if not _import_guarded(ctx, node) and not in_compat_fallback(ctx, node):
            yield ctx.finding(code, node, f"import of {module}, which was removed from {_library(module)}; "
                              f"use {REMOVED_MODULES[module]}", suggestion=f"use {REMOVED_MODULES[module]}")
    for node in ctx.nodes.get(ast.Import, ()):
        module = next((m for a in node.names if (m := removed_module(a.name))), None)
        if module is not None and not _import_guarded(ctx, node) and not in_compat_fallback(ctx, node):
            yield ctx.finding(code, node, f"import of {module}, which was removed from {_library(module)}; "
                              f"use {REMOVED_MODULES[module]}", suggestion=f"use {REMOVED_MODULES[module]}")


# Tensor methods deleted with their functions: LAPACK names nothing else calls as a method
_LAPACK_METHODS = ("gesv", "gels", "potrf", "potrs", "potri", "pstrf", "trtrs", "btrifact", "btrifact_with_info",
                   "btrisolve", "btriunpack")


def _method_forms(code: str, ctx: Context) -> Iterator[Finding]:
    """``A.potrf()``, ``b.gesv(A)``: the method of a deleted function, on a value (not a module
    name: ``torch.gesv`` is reported above, ``scipy.linalg.lapack.dpotrf`` is another name), in a
    file that defines no function of that name."""
    for call in ctx.calls_named(*_LAPACK_METHODS):
        func = call.func
        if func.__class__ is not ast.Attribute or ctx.qualname(func) is not None:
            continue
        if func.value.__class__ is ast.Name and func.value.id in ctx.imports:
            continue
        if any(d.name == func.attr for d in ctx.nodes.get(ast.FunctionDef, ())):
            continue  # the project's own method of that name
        q = f"torch.{func.attr}"
        yield ctx.finding(code, call, f"Tensor.{func.attr} was removed from PyTorch; use {REMOVED[q]}",
                          suggestion=f"use {REMOVED[q]}", end_node=func)


def _library(q: str) -> str:
    return "torchvision" if q.startswith("torchvision.") else "PyTorch"


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
_ATTRIBUTE_ERRORS = _IMPORT_ERRORS | {"AttributeError"}


def _import_guarded(ctx: Context, node: ast.AST, errors: frozenset = _IMPORT_ERRORS) -> bool:
    """The import (or use) sits in the body of a ``try:`` whose handlers catch its error."""
    child = node
    for anc in ctx.ancestors(node):
        if anc.__class__ is ast.Try and child in anc.body:
            for h in anc.handlers:
                types = [] if h.type is None else h.type.elts if h.type.__class__ is ast.Tuple else [h.type]
                if h.type is None or any(last_name(t) in errors for t in types):
                    return True
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        child = anc
    return False


RULE = RemovedApi()
