"""TW506: ``torch.log(1 + x)`` instead of ``torch.log1p(x)``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


def _is_one(node: ast.AST) -> bool:
    return node.__class__ is ast.Constant and type(node.value) in (int, float) and node.value == 1


# words of a name that counts something: a whole number >= 0, where log(1 + x) is already exact
_COUNT_WORDS = frozenset({"count", "counts", "cnt", "cnts", "num", "nums", "len", "lens", "length", "lengths",
                          "duration", "durations", "dur", "freq", "freqs", "frequency", "frequencies", "degree",
                          "degrees", "deg", "occurrence", "occurrences", "step", "steps", "epoch", "epochs", "token",
                          "tokens", "frame", "frames", "hits"})
_INTEGER_CASTS = frozenset({"long", "int", "short", "bincount", "count_nonzero", "numel"})
_FLOAT_CASTS = frozenset({"float", "double", "half", "type"})


_KEEP = frozenset({"clone", "detach", "contiguous"})
_TENSOR_MAKERS = frozenset({"tensor", "as_tensor", "FloatTensor", "DoubleTensor"})
# words of a name for integer-typed data, which a float cast before the log confirms (``X_int``)
_INTEGER_WORDS = frozenset({"int", "ints", "integer", "integers"})


def _float_made(node: ast.Call) -> bool:
    """``torch.tensor(x, dtype=torch.float)``, ``torch.FloatTensor(x)``: a float tensor made of ``x``."""
    name = node.func.attr if node.func.__class__ is ast.Attribute else getattr(node.func, "id", "")
    if name not in _TENSOR_MAKERS or len(node.args) != 1:
        return False
    return name.endswith("Tensor") or any(k.arg == "dtype" and "float" in ast.dump(k.value) for k in node.keywords)


def integer_valued(node: ast.AST, target: str = "") -> bool:
    """``x`` in ``log(1 + x)`` evidently holds whole counts: named for a count (``n_tokens``,
    ``lengths``: the last word; ``duration_targets.float()``: any word, with the cast to float that
    a count needs), or made by an integer cast or count (``.long()``, ``torch.bincount(...)``, ``len(...)``);
    or integer-typed data cast to float (``torch.tensor(X_int, dtype=torch.float)``,
    ``x_int.clone().detach().type(torch.float)``, or an element stored as ``X_int`` (``target``):
    ``X_int = torch.log(torch.tensor(batch[0], dtype=torch.float) + 1)``)."""
    cast = False
    while node.__class__ is ast.Call:
        if node.func.__class__ is ast.Attribute and node.func.attr in _FLOAT_CASTS | _KEEP:
            node, cast = node.func.value, cast or node.func.attr in _FLOAT_CASTS
        elif _float_made(node):
            node, cast = node.args[0], True
        else:
            break
    if node.__class__ is ast.Call:
        name = node.func.attr if node.func.__class__ is ast.Attribute else getattr(node.func, "id", "")
        return name in _INTEGER_CASTS or name == "len"
    name = node.attr if node.__class__ is ast.Attribute else node.id if node.__class__ is ast.Name else ""
    words = name.lower().strip("_").split("_")
    if name.lower() in ("n", "num", "cnt"):
        return True
    if cast and (any(w in _INTEGER_WORDS for w in words)
                 or node.__class__ is ast.Subscript and any(w in _INTEGER_WORDS for w in target.lower().strip("_").split("_"))):
        return True
    return any(w in _COUNT_WORDS for w in words) if cast else words[-1] in _COUNT_WORDS


def _stored_as(ctx: Context, call: ast.Call) -> str:
    """The name the log is assigned to (``X_int = torch.log(...)``), else ``""``."""
    parent = ctx.parent(call)
    if parent.__class__ is ast.Assign and len(parent.targets) == 1 and parent.targets[0].__class__ is ast.Name:
        return parent.targets[0].id
    return ""


class Log1p(Rule):
    code = "TW506"
    per_call = True  # a loss of precision matters only where the code runs (R5)
    name = "log-one-plus"
    triggers = ("log",)
    doc = """\
What it flags
  `torch.log(1 + x)` or `torch.log(x + 1)` with a literal 1, also the tensor-method form
  `(1 + sigma ** 2).log()` in a file that imports torch, and the in-place forms
  `torch.log_(1 + z)` and `(1 + z).log_()`. Not flagged: `x` that evidently
  holds whole counts (named for one, `torch.log(duration_targets.float() + 1)`, `n_tokens`, or
  made by `.long()`/`bincount`/`len`), nor integer-typed data cast to float
  (`torch.log(torch.tensor(X_int, dtype=torch.float) + 1)`, `x_int.clone().type(torch.float)`, or an
  element stored as integer features: `X_int = torch.log(torch.tensor(batch[0], dtype=torch.float) + 1)`):
  `1 + x` is exact for whole numbers, so log1p gains nothing.

Why it matters
  For small `x`, `1 + x` rounds away most of `x` before the logarithm is taken (in float32,
  `1 + 1e-8` is exactly 1), so the result loses its precision or becomes 0. `torch.log1p`
  computes the same value accurately.

Example
  y = torch.log(1 + x)                                 # TW506

Fix
  `torch.log1p(x)` (in place: `x.log1p_()`).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_named("log", "log_"):
            func = call.func
            if func.__class__ is not ast.Attribute or call.keywords:
                continue
            q = ctx.qualname(func)
            if q in ("torch.log", "torch.log_") and len(call.args) == 1:
                arg = call.args[0]
            elif q is None and not call.args and any(v.split(".", 1)[0] == "torch" for v in ctx.imports.values()):
                arg = func.value  # (1 + x).log(): the tensor method (NumPy arrays have none)
            else:
                continue
            if arg.__class__ is ast.BinOp and arg.op.__class__ is ast.Add and (_is_one(arg.left) or _is_one(arg.right)):
                if integer_valued(arg.right if _is_one(arg.left) else arg.left, _stored_as(ctx, call)):
                    continue  # log(1 + count): exact at 0, nothing lost for whole numbers
                fix = "torch.log1p(x)" if func.attr == "log" else "torch.log1p(x) (or x.log1p_() in place)"
                yield ctx.finding(self.code, call, f"torch.{func.attr}(1 + x) loses precision for small x; use {fix}",
                                  suggestion=fix)


RULE = Log1p()
