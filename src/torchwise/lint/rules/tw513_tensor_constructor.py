"""TW513: the legacy tensor constructors, ``torch.Tensor(...)`` and the typed ones
(``torch.FloatTensor(...)``, ``torch.cuda.LongTensor(...)``...)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Edit, Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.starnames import star_qualname
from torchwise.lint.semantics.selfconstructors import self_alias

# typed legacy constructor -> the dtype it always makes
TYPED: dict[str, str] = {
    "FloatTensor": "torch.float32", "DoubleTensor": "torch.float64", "HalfTensor": "torch.float16",
    "BFloat16Tensor": "torch.bfloat16", "LongTensor": "torch.int64", "IntTensor": "torch.int32",
    "ShortTensor": "torch.int16", "CharTensor": "torch.int8", "ByteTensor": "torch.uint8", "BoolTensor": "torch.bool",
}
CONSTRUCTORS: dict[str, tuple[str | None, str]] = {"torch.Tensor": (None, "cpu")}
for _name, _dtype in TYPED.items():
    CONSTRUCTORS[f"torch.{_name}"] = (_dtype, "cpu")
    CONSTRUCTORS[f"torch.cuda.{_name}"] = (_dtype, "cuda")
# the typed sparse constructors: torch.sparse.FloatTensor(indices, values, size)
SPARSE: dict[str, str] = {f"torch.sparse.{n}": d for n, d in TYPED.items() if n not in ("BoolTensor", "BFloat16Tensor")}


def _numeric_literal(node: ast.AST) -> bool:
    """A list/tuple (nested) of number or bool constants, possibly negated: data, surely."""
    if node.__class__ in (ast.List, ast.Tuple):
        return all(_numeric_literal(e) for e in node.elts)
    if node.__class__ is ast.UnaryOp and node.op.__class__ in (ast.USub, ast.UAdd):
        return _numeric_literal(node.operand)
    return node.__class__ is ast.Constant and type(node.value) in (int, float, bool)


def _is_size(node: ast.AST) -> bool:
    """``3``, ``x.shape``, ``x.size()``: what the constructor reads as sizes when it is the only argument."""
    if node.__class__ is ast.Constant:
        return type(node.value) is int
    if node.__class__ is ast.Attribute:
        return node.attr == "shape"
    return node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr == "size" and not node.args


def _form(call: ast.Call) -> str | None:
    """``"sizes"`` or ``"data"`` when the arguments say for sure how the constructor reads them."""
    if call.keywords or any(a.__class__ is ast.Starred for a in call.args):
        return None
    if len(call.args) >= 2:
        return "sizes"  # several arguments are always sizes
    arg = call.args[0]
    if _is_size(arg):
        return "sizes"
    return "data" if _numeric_literal(arg) else None


def _module_alias(ctx: Context, call: ast.Call) -> str | None:
    """``self.tt = torch.cuda if cuda else torch``, then ``self.tt.FloatTensor(n)`` (also a local
    name): a typed constructor reached through a name that stands for the torch module (either
    branch of a conditional)."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.attr not in TYPED:
        return None
    holder = func.value
    if holder.__class__ is ast.Attribute and holder.value.__class__ is ast.Name and holder.value.id == "self":
        value = ctx.single_self_value(holder, call)
    elif holder.__class__ is ast.Name and holder.id not in ctx.imports:
        value = ctx.resolve(holder, call)
        value = None if value is holder else value
    else:
        return None
    options = [value.body, value.orelse] if value.__class__ is ast.IfExp else [value]
    modules = {ctx.qualname(option) for option in options if option is not None}
    for q in ("torch", "torch.cuda"):  # the CPU one first: its dtype is what the advice needs
        if q in modules:
            return f"{q}.{func.attr}"
    return None


def _alias_target(ctx: Context, call: ast.Call) -> str | None:
    """``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor; Tensor(n, 1)``: the
    constructor a local name stands for (either branch of a conditional)."""
    func = call.func
    if func.__class__ is not ast.Name or func.id in ctx.imports:
        return None
    value = ctx.resolve(func, call)
    if value is func or value is None:
        return None
    options = [value.body, value.orelse] if value.__class__ is ast.IfExp else [value]
    for option in options:
        q = ctx.qualname(option)
        if q in CONSTRUCTORS and q != "torch.Tensor":
            return q
    return None


def _picked_names(ctx: Context) -> tuple[str, ...]:
    """``tensor_type = torch.cuda.LongTensor if cuda else torch.LongTensor``: local names of any
    spelling bound to a choice between typed constructors (their calls go through
    :func:`_alias_target`)."""
    if "Tensor if " not in ctx.source:
        return ()
    names = []
    for node in ctx.nodes.get(ast.Assign, ()):
        value = node.value
        if value.__class__ is ast.IfExp and len(node.targets) == 1 and node.targets[0].__class__ is ast.Name \
                and all(ctx.qualname(v) in CONSTRUCTORS for v in (value.body, value.orelse)):
            names.append(node.targets[0].id)
    return tuple(names)


class TensorConstructor(Rule):
    code = "TW513"
    name = "legacy-tensor-constructor"
    triggers = ("Tensor(", "Tensor,", "Tensor if ")
    fixable = True
    doc = """\
What it flags
  A call with arguments of a legacy constructor: `torch.Tensor(...)`, the typed
  `torch.FloatTensor(...)`, `DoubleTensor`, `HalfTensor`, `BFloat16Tensor`, `LongTensor`,
  `IntTensor`, `ShortTensor`, `CharTensor`, `ByteTensor`, `BoolTensor`, their `torch.cuda.*`
  twins, the sparse ones (`torch.sparse.FloatTensor(indices, values, size)`: use
  `torch.sparse_coo_tensor`), and a local name that stands for one (`Tensor = torch.cuda.FloatTensor if cuda else
  torch.FloatTensor`, then `Tensor(n, 1)`; also under another name, `tensor_type =
  torch.cuda.LongTensor if cuda else torch.LongTensor`, then `tensor_type(ids)`), one reached through a name that stands for the
  torch module (`self.tt = torch.cuda if cuda else torch`, then `self.tt.FloatTensor(n)`), one
  kept on the object by its class or a base class of the project (`self.Tensor =
  torch.cuda.FloatTensor if self.gpu_ids else torch.Tensor` in a `BaseModel`, then
  `self.Tensor(n, c, h, w)` or `self.Tensor()` in a subclass of another module), one
  a star import of the project's own modules hands on (`LongTensor = torch.LongTensor` in a
  utilities module, then `from utils import *` and `LongTensor(perm)`; `torch.Tensor(x)` with
  `torch` itself from `from model import *`; reported without an automatic fix), and
  one applied to every item with `map(torch.LongTensor, zip(*batch))`, and one picked from a
  dict of them and called (`numpy_type_map[elem.dtype.name](values)` with `numpy_type_map =
  {'float64': torch.DoubleTensor, ...}`, the old DataLoader's collate kept in a project). Also a call with no
  argument, `torch.Tensor()` or `torch.LongTensor()` (an empty accumulator, or a template for
  `.new_tensor(...)`): `torch.empty(0, dtype=...)` says what it makes. The classes themselves,
  in annotations, `isinstance`, `.type(torch.cuda.FloatTensor)` or as a base class, are fine.

Why it matters
  These constructors guess what their arguments mean: `torch.FloatTensor(3, 4)` is an
  uninitialised 3x4 tensor full of leftover memory, `torch.FloatTensor([3, 4])` a two-element
  vector, and `torch.LongTensor(n)` either, depending on whether `n` is a number or a list.
  Uninitialised values that slip into a computation give irreproducible results.
  `torch.Tensor` also takes the global default float type rather than the data's. They are
  deprecated in favour of factories that say what they do.

Example
  w = torch.Tensor(out_features, in_features)          # TW513
  ids = torch.LongTensor([1, 2, 3])                    # TW513 (fixed automatically)

Fix
  `torch.empty(out, in)` (then initialise it), `torch.zeros(...)`, or `torch.tensor(data,
  dtype=...)` for values. `torchwise lint --fix` rewrites the typed constructors where the
  result is exactly the same: sizes (several arguments, an integer, `x.shape`, `x.size()`)
  become `torch.empty(..., dtype=..., device=...)` and a literal list of numbers becomes
  `torch.tensor([...], dtype=..., device=...)`. The fix keeps `device="cpu"` (or `"cuda"`)
  because these constructors ignore `torch.set_default_device`; drop it where the tensor
  should follow the default device; a typed constructor with no argument becomes
  `torch.empty(0, dtype=..., device=...)`. `torch.Tensor(sizes)` (and `torch.Tensor()`) becomes `torch.empty(sizes)` only
  with `--unsafe-fixes` (`torch.empty` follows a default device set elsewhere; the legacy
  constructor does not). Other arguments (a name, an array) are left to you: the constructor
  may read them as sizes or as data, and it aliases a tensor it is given.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_named("Tensor", *TYPED, *_picked_names(ctx)):
            q = ctx.qualname(call.func)
            starred = q is None and (q := star_qualname(ctx, call.func)) is not None  # LongTensor from `from utils import *`
            if not call.args and not call.keywords:
                if q in CONSTRUCTORS:
                    yield self._empty(ctx, call, q, fixable=not starred)
                elif q is None and (kept := self_alias(ctx, call)) is not None:
                    yield self._empty(ctx, call, kept, fixable=False)  # self.LR = self.Tensor()
                continue
            alias = None
            if q in SPARSE:
                yield ctx.finding(
                    self.code, call, f"{ctx.text(call.func)}(...) is a legacy typed sparse constructor",
                    suggestion=f"use torch.sparse_coo_tensor(indices, values, size, dtype={SPARSE[q]})", end_node=call.func)
                continue
            if q not in CONSTRUCTORS:
                alias = _alias_target(ctx, call) or _module_alias(ctx, call) or self_alias(ctx, call)
                if alias is None:
                    continue
            name = ctx.text(call.func) + "(...)" if alias is None else f"{ctx.text(call.func)}(...) ({alias})"
            if q == "torch.Tensor":
                message = "torch.Tensor(...) is the legacy constructor: sizes give uninitialised memory, data the default dtype"
            else:
                message = f"{name} is a legacy typed constructor: sizes give uninitialised memory, one argument may be read as data"
            yield ctx.finding(self.code, call, message, suggestion=self._suggestion(q or alias),
                              fix=self._fix(ctx, call, q) if alias is None and not starred else None, end_node=call.func)
        yield from self._mapped(ctx)
        if "Tensor," in ctx.source:
            yield from self._tabled(ctx)

    def _tabled(self, ctx: Context) -> Iterator[Finding]:
        """``numpy_type_map[elem.dtype.name](values)`` with ``numpy_type_map = {'float64':
        torch.DoubleTensor, ...}`` (the old DataLoader's collate, vendored): a typed constructor picked
        from a dict of them and called."""
        tables = set()
        for node in ctx.nodes.get(ast.Assign, ()):
            value = node.value
            if value.__class__ is ast.Dict and value.values and len(node.targets) == 1 \
                    and node.targets[0].__class__ is ast.Name and all(ctx.qualname(v) in CONSTRUCTORS for v in value.values):
                tables.add(node.targets[0].id)
        if not tables:
            return
        for call in ctx.nodes.get(ast.Call, ()):
            func = call.func
            if func.__class__ is ast.Subscript and func.value.__class__ is ast.Name and func.value.id in tables and call.args:
                yield ctx.finding(self.code, call, f"{ctx.text(func)}(...) calls a legacy typed constructor picked from "
                                  f"{func.value.id}: one argument may be read as sizes or as data",
                                  suggestion="map the dtype names to torch dtypes and call torch.tensor(values, dtype=...)",
                                  end_node=func)

    def _empty(self, ctx: Context, call: ast.Call, q: str, fixable: bool = True) -> Finding:
        """``torch.Tensor()``/``torch.LongTensor()`` with no argument: an empty tensor (an accumulator
        for ``torch.cat``, a template for ``.new_tensor``) that ``torch.empty(0, ...)`` names plainly."""
        dtype, device = CONSTRUCTORS[q]
        extra = (f", dtype={dtype}" if dtype else "") + (f', device="{device}"' if dtype else "")
        start, end = ctx.span(call)
        if dtype is None:
            fix = Fix("use torch.empty(0)", (Edit(start, end, "torch.empty(0)"),), safe=False,
                      why_unsafe="torch.empty follows torch.set_default_device (set anywhere in the program); torch.Tensor always made CPU tensors")
        else:
            fix = Fix(f"use torch.empty(0{extra})", (Edit(start, end, f"torch.empty(0{extra})"),))
        return ctx.finding(self.code, call, f"{ctx.text(call.func)}() is a legacy constructor (an empty tensor of a type it implies)",
                           suggestion=f"use torch.empty(0{extra}), or torch.tensor(data, ...) where it only serves as a template",
                           fix=fix if fixable else None, end_node=call.func)

    def _mapped(self, ctx: Context) -> Iterator[Finding]:
        """``map(torch.LongTensor, zip(*batch))``: the constructor applied to every item (a collate
        function's columns), each item read as data or as sizes depending on what it is."""
        for call in ctx.calls_named("map"):
            if call.func.__class__ is not ast.Name or len(call.args) < 2 or call.args[0].__class__ is not ast.Attribute:
                continue
            q = ctx.qualname(call.args[0])
            if q in CONSTRUCTORS:
                yield ctx.finding(
                    self.code, call.args[0],
                    f"map({ctx.text(call.args[0])}, ...) applies a legacy typed constructor to every item: a number is read as a size",
                    suggestion=f"map(lambda v: torch.tensor(v{', dtype=' + CONSTRUCTORS[q][0] if CONSTRUCTORS[q][0] else ''}), ...)")

    @staticmethod
    def _suggestion(q: str) -> str:
        dtype, device = CONSTRUCTORS[q]
        extra = (f", dtype={dtype}" if dtype else "") + (', device="cuda"' if device == "cuda" else "")
        return f"use torch.empty/zeros(sizes{extra}) or torch.tensor(data{extra or ', dtype=...'})"

    @staticmethod
    def _fix(ctx: Context, call: ast.Call, q: str) -> Fix | None:
        form = _form(call)
        if form is None:
            return None
        dtype, device = CONSTRUCTORS[q]
        start, _ = ctx.span(call.func)
        args_start, _ = ctx.span(call.args[0])
        _, args_end = ctx.span(call.args[-1])
        args = ctx.source[args_start:args_end]
        factory = "torch.empty" if form == "sizes" else "torch.tensor"
        if dtype is None:  # torch.Tensor: only sizes, and the default device may differ
            if form != "sizes":
                return None
            edit = Edit(start, args_start, factory + "(")
            return Fix("use torch.empty(sizes)", (edit,), safe=False,
                       why_unsafe="torch.empty follows torch.set_default_device (set anywhere in the program); torch.Tensor always made CPU tensors")
        _, end = ctx.span(call)
        text = f'{factory}({args}, dtype={dtype}, device="{device}")'
        return Fix(f"use {factory}(..., dtype={dtype})", (Edit(start, end, text),))


RULE = TensorConstructor()
