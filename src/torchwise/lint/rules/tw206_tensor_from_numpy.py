"""TW206: ``torch.tensor(ndarray)`` copies where ``from_numpy``/``as_tensor`` would share memory."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.files import in_demo_main

# numpy functions that return arrays (not scalars, not Python objects)
_NP_ARRAY_FUNCS = frozenset({
    "array", "asarray", "ascontiguousarray", "zeros", "ones", "empty", "full", "arange", "linspace",
    "load", "loadtxt", "genfromtxt", "fromfile", "frombuffer", "stack", "concatenate", "vstack", "hstack",
    "zeros_like", "ones_like", "empty_like", "full_like", "eye", "identity", "tile", "repeat", "where",
    "clip", "reshape", "transpose", "expand_dims", "squeeze",
})
_NP_RANDOM = frozenset({"rand", "randn", "randint", "random", "uniform", "normal", "choice", "permutation"})


def _assigned(ctx: Context, name: ast.Name, use: ast.AST | None) -> tuple[ast.AST, ast.AST] | None:
    """The value ``name`` was last assigned before ``use``, and the statement that did it."""
    b = ctx.binding_at(name.id, use or name)
    return (b.value, b.node) if b is not None and b.kind == "assign" else None


def is_ndarray(ctx: Context, expr: ast.AST | None, use: ast.AST | None = None, depth: int = 3) -> bool:
    """Does ``expr`` evidently hold a NumPy array?"""
    if expr is None or depth <= 0:
        return False
    if expr.__class__ is ast.Name:
        bound = _assigned(ctx, expr, use)
        return bound is not None and is_ndarray(ctx, *bound, depth - 1)
    if expr.__class__ is not ast.Call:
        return False
    q = ctx.qualname(expr.func)
    if q is not None:
        if q.startswith("numpy.random."):
            return q.rsplit(".", 1)[1] in _NP_RANDOM and bool(expr.args)
        return q.startswith("numpy.") and q.count(".") == 1 and q.split(".")[1] in _NP_ARRAY_FUNCS
    func = expr.func
    return func.__class__ is ast.Attribute and func.attr == "numpy" and not expr.args and last_name(func.value) != "np"


# OpenCV functions that return a new image array
_CV2_IMAGE_FUNCS = frozenset({
    "imread", "imdecode", "cvtColor", "resize", "warpAffine", "warpPerspective", "flip", "rotate", "copyMakeBorder",
    "GaussianBlur", "blur", "medianBlur", "merge", "remap", "normalize",
})


def is_decoded_image(ctx: Context, expr: ast.AST | None, use: ast.AST | None = None, depth: int = 3) -> bool:
    """Does ``expr`` hold an image array decoded or transformed per item: the result of an OpenCV
    image function (``cv2.imread``, ``cv2.cvtColor``, ``cv2.resize``...), or the ``["image"]`` of
    an albumentations pipeline called with ``image=`` in a file that converts with no ``ToTensor``
    (without one the pipeline returns a NumPy array)?"""
    if expr is None or depth <= 0:
        return False
    if expr.__class__ is ast.Name:
        bound = _assigned(ctx, expr, use)
        return bound is not None and is_decoded_image(ctx, *bound, depth - 1)
    if expr.__class__ is ast.Call:
        q = ctx.qualname(expr.func) or ""
        return q.startswith("cv2.") and q.count(".") == 1 and q[4:] in _CV2_IMAGE_FUNCS
    if expr.__class__ is ast.Subscript and expr.slice.__class__ is ast.Constant and expr.slice.value == "image":
        call = expr.value
        return (call.__class__ is ast.Call and any(k.arg == "image" for k in call.keywords)
                and ctx.imports_module("albumentations") and "ToTensor" not in ctx.source)
    return False


_BATCH_WORDS = ("batch", "getitem", "next", "collate", "sample")


def _per_batch(ctx: Context, call: ast.Call) -> bool:
    """In a loop, or in a function named for producing a batch or an item (``next_batch``,
    ``__getitem__``, ``collate_fn``): paid again for every batch, not once at set-up."""
    if ctx.enclosing_loops(call):
        return True
    func = ctx.function_of(call)
    return func is not None and func.__class__ is not ast.Lambda and any(w in func.name.lower() for w in _BATCH_WORDS)


def _numpy_astype(ctx: Context, expr: ast.AST) -> bool:
    """``buf.astype(np.int32)`` (a NumPy dtype, or its name as a string): a fresh array."""
    if expr.__class__ is not ast.Call or expr.func.__class__ is not ast.Attribute or expr.func.attr != "astype" or not expr.args:
        return False
    dtype = expr.args[0]
    return (ctx.qualname(dtype) or "").startswith("numpy.") or dtype.__class__ is ast.Constant and isinstance(dtype.value, str)


class TensorCopiesNdarray(Rule):
    code = "TW206"
    name = "tensor-copies-ndarray"
    triggers = ("numpy", "cv2", "albumentations")
    doc = """\
What it flags
  `torch.tensor(a)` where `a` evidently is a NumPy array: the result of a NumPy array
  function (`np.array`, `np.load`, `np.zeros`, `np.random.rand(...)`...), of `.numpy()`, or a
  name bound to one of these. Also `torch.tensor(a.astype(np.int32), dtype=torch.long)` (a
  NumPy dtype, or its name as a string), with or without a dtype: `astype` already made a copy,
  and `torch.tensor` makes a second one - where that is paid per batch (in a loop, or in a
  function named for a batch or an item: `next_batch()`, `__getitem__`, `collate_fn`; a one-off
  load at set-up is left alone). Also an image decoded or transformed per item and copied
  there: `torch.tensor(image)` in `__getitem__` (or a loop) where `image` comes from an OpenCV
  image function (`cv2.imread`, `cv2.cvtColor`, `cv2.resize`...) or is the `["image"]` of an
  albumentations pipeline called with `image=` in a file without `ToTensor` (such a pipeline
  returns a NumPy array). Not flagged: such an image converted once at set-up, or a file whose
  pipeline ends in `ToTensorV2` (the value is a tensor). Not
  flagged: `torch.tensor(a, dtype=...)` or `device=...` on a plain array (the conversion or the
  device copy copies anyway).

Why it matters
  `torch.tensor` always copies its input. For a large array that is a full extra allocation
  and memcpy on the host, often inside the data pipeline where it is paid for every sample.
  `torch.from_numpy` and `torch.as_tensor` wrap the same memory without copying.

Example
  x = torch.tensor(np.load("features.npy"))          # TW206

Fix
  `torch.from_numpy(a)` (or `torch.as_tensor(a)`, which also accepts `dtype`/`device`). Both
  share memory with the array: if the code later modifies the array in place and relies on
  the tensor not changing, keep the copy (`torch.from_numpy(a).clone()` makes it explicit).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        images = ctx.imports_module("cv2") or ctx.imports_module("albumentations")
        if not ctx.imports_module("numpy") and ".numpy()" not in ctx.source and not images:
            return
        for call in ctx.calls_to("torch.tensor"):
            if call.args and _numpy_astype(ctx, call.args[0]) and not any(k.arg is None for k in call.keywords) \
                    and _per_batch(ctx, call):
                yield ctx.finding(self.code, call, "torch.tensor() copies the array that .astype() just copied: two copies "
                                  "per call where one would do", suggestion="cast once: torch.from_numpy(a.astype(np.int64)), "
                                  "or torch.from_numpy(a).to(torch.long)", end_node=call.func)
                continue
            if not call.args or not (is_ndarray(ctx, call.args[0], call) or images and _per_batch(ctx, call)
                                     and is_decoded_image(ctx, call.args[0], call)):
                continue
            if any(k.arg in ("dtype", "device") or k.arg is None for k in call.keywords):
                continue  # a dtype change or a device copy copies anyway: nothing to share
            if in_demo_main(ctx, call):
                continue  # made-up inputs of a library module's smoke test: a copy of a few numbers
            yield ctx.finding(
                self.code, call,
                "torch.tensor() copies the NumPy array; from_numpy()/as_tensor() would share its memory",
                suggestion="use torch.from_numpy(a) or torch.as_tensor(a)",
                end_node=call.func,
            )


RULE = TensorCopiesNdarray()
