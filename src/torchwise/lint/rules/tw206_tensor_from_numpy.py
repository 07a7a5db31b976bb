"""TW206: ``torch.tensor(ndarray)`` copies where ``from_numpy``/``as_tensor`` would share memory."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, keyword
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.arraydtypes import same_dtype
from torchwise.lint.semantics.files import in_demo_main
from torchwise.lint.semantics.peritem import BATCH_WORDS, per_item_function
from torchwise.lint.semantics.starnames import alias_calls
from torchwise.lint.semantics.steps import hot_loops
from torchwise.lint.semantics.setupcode import set_up_only
from torchwise.lint.semantics.decodedarrays import decoded_array
from torchwise.lint.semantics.ndarrays import ARRAY_METHODS, assigned_value, is_ndarray
from torchwise.lint.semantics.selfarrays import per_forward

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
        bound = assigned_value(ctx, expr, use)
        return bound is not None and is_decoded_image(ctx, *bound, depth - 1)
    if expr.__class__ is ast.Call:
        q = ctx.qualname(expr.func) or ""
        return q.startswith("cv2.") and q.count(".") == 1 and q[4:] in _CV2_IMAGE_FUNCS
    if expr.__class__ is ast.Subscript and expr.slice.__class__ is ast.Constant and expr.slice.value == "image":
        call = expr.value
        return (call.__class__ is ast.Call and any(k.arg == "image" for k in call.keywords)
                and ctx.imports_module("albumentations") and "ToTensor" not in ctx.source)
    return False


def _per_batch(ctx: Context, call: ast.Call) -> bool:
    """In a loop, or in a function named for producing a batch or an item (``next_batch``,
    ``__getitem__``, ``collate_fn``): paid again for every batch, not once at set-up."""
    if ctx.enclosing_loops(call) or per_forward(ctx, call):
        return True
    func = ctx.function_of(call)
    return func is not None and func.__class__ is not ast.Lambda and any(w in func.name.lower() for w in BATCH_WORDS)


def _dataset_build(ctx: Context, call: ast.Call) -> bool:
    """In a method of a Dataset class that is not its per-item path (``_process()`` looping over every
    molecule to build and save the dataset once): construction, not per item."""
    func = ctx.function_of(call)
    cls = ctx.parent(func) if func is not None else None
    return cls.__class__ is ast.ClassDef and any("Dataset" in b for b in [*ctx.local_class_bases(cls.name), cls.name]) \
        and per_item_function(ctx, call) is None


def _numpy_astype(ctx: Context, expr: ast.AST) -> bool:
    """``buf.astype(np.int32)`` (a NumPy dtype, or its name as a string): a fresh array."""
    if expr.__class__ is not ast.Call or expr.func.__class__ is not ast.Attribute or expr.func.attr != "astype" or not expr.args:
        return False
    dtype = expr.args[0]
    return (ctx.qualname(dtype) or "").startswith("numpy.") or dtype.__class__ is ast.Constant and isinstance(dtype.value, str)


class TensorCopiesNdarray(Rule):
    code = "TW206"
    per_call = True
    name = "tensor-copies-ndarray"
    triggers = ("numpy", "cv2", "albumentations", "vread(", "imread(", "import *")
    doc = """\
What it flags
  `torch.tensor(a)` (also through a module-level alias, `tensor = torch.tensor`, of the file or
  star-imported from a project module) where `a` evidently is a NumPy array: the result of a
  NumPy array function (`np.array`, `np.load`, `np.zeros`, `np.random.rand(...)`...), of
  `.numpy()`, or a name bound to one of these; where it is paid per batch (see below), also an
  array method's result on one (`mels = np.stack(windows).astype(np.float32)` in a collate
  function), a slice of one or arithmetic on one (`flat[at:at + n]`, `total / size`), a parameter
  every caller - in the file and in the modules importing it, one at least - hands such an array
  (`_write_back(net, np.zeros_like(flat))`), an attribute every store of which in its class is
  such an array (`self.obs = np.zeros((cap, d))` in `__init__`, then `torch.tensor(self.obs[i:j])`),
  and the result of a helper of the project - of the
  file, the module it is imported from, or a module the file star-imports (`from utils import *`)
  - every `return` of which is one (`target = gt_creator(...)`, then `t.tensor(target)` every
  batch; not in a Dataset's methods other than its per-item path: a `_process()` building the
  dataset once). Also `torch.tensor(a.astype(np.int32), dtype=torch.long)` (a
  NumPy dtype, or its name as a string), with or without a dtype: `astype` already made a copy,
  and `torch.tensor` makes a second one - where that is paid per batch (in a loop, in the `forward`
  of an `nn.Module`, or in a
  function named for a batch or an item: `next_batch()`, `__getitem__`, `collate_fn`; a one-off
  load at set-up is left alone). Also a video or image a file decoder returned (`skvideo.io.vread`,
  `imageio.imread`/`mimread`), a clip sliced or a frame picked from it, copied per item (the
  no-transform arm of `if self.transform:` sees the slice made before the `if`). Also an image decoded or transformed per item and copied
  there: `torch.tensor(image)` in `__getitem__` (or a loop) where `image` comes from an OpenCV
  image function (`cv2.imread`, `cv2.cvtColor`, `cv2.resize`...) or is the `["image"]` of an
  albumentations pipeline called with `image=` in a file without `ToTensor` (such a pipeline
  returns a NumPy array). Not flagged: such an image converted once at set-up, or a file whose
  pipeline ends in `ToTensorV2` (the value is a tensor). Not
  flagged: `torch.tensor(a, dtype=...)` or `device=...` on a plain array (the conversion or the
  device copy copies anyway) - except an array NumPy builds in the call itself only to be
  copied, for every item: in `__getitem__`, a collate or batch function, a transform's
  `__call__`, a helper one of them calls (in the file, or from another module of the project:
  a graph-building function a transform calls per sample), a training loop, or the `forward` of an
  `nn.Module` (`torch.tensor(np.zeros(s, dtype=np.float32), dtype=torch.float32)` every step). Flagged there
  when building it in NumPy is evidently wasted: a maker torch has too (`torch.tensor(np.ones(n).reshape(-1, 1),
  dtype=torch.float)`: `torch.ones(n, 1)`), an array of a literal list (`np.array([0, 0, 1])`),
  or any array asked for in the dtype NumPy already gives Python ints or floats
  (`torch.tensor(np.array(edges).T, dtype=torch.long)`: `torch.as_tensor` takes it without a
  copy). Flagged there too: an array whose element type the code states (`dtype=` of the NumPy
  call that made it, or `.astype(...)`) and asks for again (`data = np.array(group["data"],
  dtype="f")`, then `torch.tensor(data, dtype=torch.float)`): the conversion changes nothing, the
  copy is all that happens. Left alone there: `np.array(rows)` cast to `torch.float` (one
  conversion either way), a helper only set-up code calls (a `process()` that builds the whole dataset once), a branch
  the per-item callers never take (`if labels:` on a parameter they leave at `None`), and a
  transform only its module's `__main__` self-test builds.
  One-time set-up is left alone (the copy is paid once): module-level code outside loops, a
  function named for set-up (`__init__`, `create_mlp` drawing initial weights in a loop over
  layers, `build_*`, `load_*`...), the code before or after the training loop of a function that
  runs it, and a helper every caller of which is one of these (a noise schedule `get_sigmas(config)`
  that a model's `__init__` and a runner's `train()` call before their loops; also through a
  package's `__init__.py`, `from . import get_sigmas`).
  Linted with its project, code that nothing runs is left alone: a function or class
  nothing calls or names (not even a config, a shell script or a notebook), and a left-over module
  that no file imports, runs or names beside siblings the project does import.

Why it matters
  `torch.tensor` always copies its input. For a large array that is a full extra allocation
  and memcpy on the host, often inside the data pipeline where it is paid for every sample.
  `torch.from_numpy` and `torch.as_tensor` wrap the same memory without copying.

Example
  def __getitem__(self, i):
      return torch.tensor(np.load(self.paths[i]))    # TW206

Fix
  `torch.from_numpy(a)` (or `torch.as_tensor(a)`, which also accepts `dtype`/`device`). Both
  share memory with the array: if the code later modifies the array in place and relies on
  the tensor not changing, keep the copy (`torch.from_numpy(a).clone()` makes it explicit).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        images = ctx.imports_module("cv2") or ctx.imports_module("albumentations")
        decoders = "vread(" in ctx.source or "imread(" in ctx.source
        if not ctx.imports_module("numpy") and ".numpy()" not in ctx.source and not images and not decoders \
                and "import *" not in ctx.source:
            return  # (a star import may hand on a helper that returns arrays)
        for call in [*ctx.calls_to("torch.tensor"), *alias_calls(ctx, "torch.tensor")]:
            if not call.args or any(k.arg is None for k in call.keywords):
                continue
            arg = call.args[0]
            if _numpy_astype(ctx, arg) and _per_batch(ctx, call):
                yield ctx.finding(self.code, call, "torch.tensor() copies the array that .astype() just copied: two copies "
                                  "per call where one would do", suggestion="cast once: torch.from_numpy(a.astype(np.int64)), "
                                  "or torch.from_numpy(a).to(torch.long)", end_node=call.func)
                continue
            plain = is_ndarray(ctx, arg, call) or images and _per_batch(ctx, call) and is_decoded_image(ctx, arg, call) \
                or decoders and _per_batch(ctx, call) and decoded_array(ctx, arg, call)  # a clip sliced from vread(path)
            if not plain and not is_ndarray(ctx, arg, call, methods=True):
                continue
            if any(k.arg in ("dtype", "device") for k in call.keywords):
                # a dtype change or a device copy copies anyway - but an array NumPy builds right
                # there only to be copied, per item, is built twice
                if keyword(call, "device") is None and _built_for_copy(ctx, call, arg) and _repeated(ctx, call):
                    yield ctx.finding(self.code, call, "torch.tensor() copies an array NumPy builds here only for it, for "
                                      "every item: the data is built twice", suggestion="build the tensor with torch "
                                      "directly (torch.tensor(list, dtype=...), torch.ones(...)), or wrap the array with "
                                      "torch.as_tensor(..., dtype=...), which copies only to change the dtype",
                                      end_node=call.func)
                elif keyword(call, "device") is None and same_dtype(ctx, arg, keyword(call, "dtype").value, call) \
                        and _repeated(ctx, call):
                    yield ctx.finding(self.code, call, "torch.tensor() copies an array that already has the dtype asked "
                                      "for, for every item: the conversion changes nothing", suggestion="use "
                                      "torch.from_numpy(a) (or torch.as_tensor(a)), which shares the array's memory",
                                      end_node=call.func)
                continue
            if not plain and (not _per_batch(ctx, call) or _dataset_build(ctx, call)):
                continue  # np.stack(rows).astype(np.float32) copied once at set-up; a dataset's _process() loop
            if set_up_only(ctx, call):
                continue  # one-time set-up: a noise schedule built in __init__, weights drawn in create_mlp()
            if in_demo_main(ctx, call):
                continue  # made-up inputs of a library module's smoke test: a copy of a few numbers
            yield ctx.finding(
                self.code, call,
                "torch.tensor() copies the NumPy array; from_numpy()/as_tensor() would share its memory",
                suggestion="use torch.from_numpy(a) or torch.as_tensor(a)",
                end_node=call.func,
            )


# NumPy makers torch has a twin of (torch.ones, torch.arange...): build the tensor directly
_MAKERS = frozenset({"ones", "zeros", "full", "empty", "arange", "linspace", "eye", "identity"})
# torch dtypes a NumPy array of Python ints or floats already has: as_tensor takes it as it is
_NUMPY_DEFAULTS = frozenset({"torch.long", "torch.int64", "torch.float64", "torch.double"})


def _built_for_copy(ctx: Context, call: ast.Call, arg: ast.AST) -> bool:
    """``torch.tensor(<array NumPy builds right there>, dtype=...)`` where building it in NumPy is
    evidently wasted: a maker torch has too (``np.ones(n).reshape(-1, 1)``: ``torch.ones(n, 1)``),
    an array of a literal list (``np.array([0, 0, 1])``: ``torch.tensor([0, 0, 1], dtype=...)``), or
    any other array (``np.array(edges).T``) when the dtype asked for is the one NumPy gives Python
    ints or floats (``torch.long``, ``torch.float64``), which ``torch.as_tensor`` takes without a copy.
    (``np.array(rows)`` cast to ``torch.float``: one conversion either way, left alone.)"""
    while True:  # through .T, .reshape(...), .astype(...) to the NumPy call
        if arg.__class__ is ast.Attribute and arg.attr == "T":
            arg = arg.value
        elif arg.__class__ is ast.Call and arg.func.__class__ is ast.Attribute and arg.func.attr in ARRAY_METHODS \
                and ctx.qualname(arg.func) is None:
            arg = arg.func.value
        else:
            break
    q = ctx.qualname(arg.func) if arg.__class__ is ast.Call else None
    if q is None or not q.startswith("numpy.") or not is_ndarray(ctx, arg):
        return False  # a name (its dtype is unknown), a tensor's .numpy()
    if q.count(".") == 1 and q[6:] in _MAKERS:
        return True
    if q in ("numpy.array", "numpy.asarray") and arg.args and _literal(arg.args[0]):
        return True
    dtype = keyword(call, "dtype")
    return dtype is not None and ctx.qualname(dtype.value) in _NUMPY_DEFAULTS


def _literal(node: ast.AST) -> bool:
    """A list or tuple written out of number constants (nested too)."""
    if node.__class__ in (ast.List, ast.Tuple):
        return bool(node.elts) and all(_literal(e) for e in node.elts)
    return node.__class__ is ast.Constant and isinstance(node.value, (int, float)) or (
        node.__class__ is ast.UnaryOp and node.operand.__class__ is ast.Constant)


def _repeated(ctx: Context, call: ast.Call) -> bool:
    """Run for every item or batch (:func:`per_item_function`), in a training loop, or in the
    ``forward`` of an ``nn.Module`` (every step; its ``__main__`` smoke test and dead code aside)."""
    if per_item_function(ctx, call) is not None or per_forward(ctx, call):
        return True
    hot = hot_loops(ctx)
    return any(id(loop) in hot for loop in ctx.enclosing_loops(call))


RULE = TensorCopiesNdarray()
