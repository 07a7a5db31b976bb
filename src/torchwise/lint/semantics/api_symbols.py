"""Facts about PyTorch APIs that were removed, deprecated or are not public, for the TW5xx rules.

Each entry maps a dotted name to what to use instead. The lists follow PyTorch's release notes and
deprecation warnings (and cover the symbols TorchFix 0.7 checks); they are data, not code.
"""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, canonical
from torchwise.lint.semantics.files import in_compat_fallback

# removed from torch: calling them raises (name -> replacement advice)
REMOVED: dict[str, str] = {
    "torch.solve": "torch.linalg.solve(A, B) (note the swapped argument order)",
    "torch.symeig": "torch.linalg.eigh",
    "torch.matrix_rank": "torch.linalg.matrix_rank",
    "torch.lstsq": "torch.linalg.lstsq (note the swapped argument order)",
    "torch.eig": "torch.linalg.eig",
    # the LAPACK-named functions, renamed in PyTorch 1.0-1.2 and deleted in 1.2/1.3
    "torch.gesv": "torch.linalg.solve(A, B) (note the swapped argument order)",
    "torch.gels": "torch.linalg.lstsq(A, B) (note the swapped argument order)",
    "torch.potrf": "torch.linalg.cholesky (which returns the lower factor; potrf returned the upper one)",
    "torch.potrs": "torch.cholesky_solve",
    "torch.potri": "torch.cholesky_inverse",
    "torch.pstrf": "torch.linalg.cholesky",
    "torch.trtrs": "torch.linalg.solve_triangular (note the swapped argument order)",
    "torch.btrifact": "torch.linalg.lu_factor",
    "torch.btrifact_with_info": "torch.linalg.lu_factor_ex",
    "torch.btrisolve": "torch.linalg.lu_solve",
    "torch.btriunpack": "torch.lu_unpack",
    # the old FFT functions, deleted in PyTorch 1.8 (torch.fft became a module of NumPy-style functions)
    "torch.rfft": "torch.fft.rfft (or torch.fft.fft for onesided=False; signal_ndim becomes rfftn/fftn's dim)",
    "torch.irfft": "torch.fft.irfft (torch.fft.irfftn for several signal dimensions)",
    "torch.ifft": "torch.fft.ifft (torch.fft.ifftn for several signal dimensions; complex tensors, not a trailing pair)",
    "torch.autograd.gradcheck.zero_gradients": "x.grad = None (or x.grad.zero_()) on the input tensor",
    # torch.utils.serialization (Lua Torch .t7 files) was deleted in PyTorch 1.0
    "torch.utils.serialization.load_lua": "the torchfile package (torchfile.load) to read a Lua Torch .t7 file",
    # torch._six (Python 2 compatibility names) was deleted in PyTorch 2.0
    "torch._six.string_classes": "str",
    "torch._six.int_classes": "int",
    "torch._six.container_abcs": "collections.abc",
    "torch._six.inf": "math.inf (or torch.inf)",
    "torch._six.nan": "math.nan (or torch.nan)",
    "torch._six.PY3": "nothing: PyTorch runs on Python 3 only",
    "torch._six.PY37": "a sys.version_info test",
    "torch._six.istuple": "isinstance(x, tuple)",
    # torchvision's old transform names, deprecated since 0.2 and deleted in 0.12
    "torchvision.transforms.Scale": "torchvision.transforms.Resize",
    "torchvision.transforms.RandomSizedCrop": "torchvision.transforms.RandomResizedCrop",
    "torchvision.transforms.transforms.Scale": "torchvision.transforms.Resize",
    "torchvision.transforms.transforms.RandomSizedCrop": "torchvision.transforms.RandomResizedCrop",
}

# whole modules that were deleted: any import of them fails (module -> replacement advice)
REMOVED_MODULES: dict[str, str] = {
    # the cffi-based C extensions, deleted in PyTorch 1.0 (its __init__ only raises ImportError)
    "torch.utils.ffi": "torch.utils.cpp_extension (C++/CUDA extensions built with setuptools or load())",
    "torch.utils.serialization": "the torchfile package (torchfile.load) to read a Lua Torch .t7 file",
    "torch.utils.trainer": "a training loop of your own (or a library's trainer)",
    "torch.legacy": "the torch.nn modules",
    "torch._six": "the Python 3 built-ins and collections.abc",
    # the package of Python autograd Functions behind torch.nn before 0.4 (torch/nn/_functions/*.py);
    # torch.nn._functions is one small module now, without these submodules
    "torch.nn._functions.padding": "torch.nn.functional.pad (or nn.ConstantPad*d)",
    "torch.nn._functions.thnn": "the torch.nn.functional functions",
    "torch.nn._functions.rnn": "nn.LSTM/nn.GRU (or torch._VF through nn.RNNBase)",
    "torch.nn._functions.linear": "torch.nn.functional.linear / bilinear",
    "torch.nn._functions.dropout": "torch.nn.functional.dropout",
    "torch.nn._functions.vision": "torch.nn.functional.grid_sample / affine_grid",
    "torch.nn._functions.loss": "the torch.nn.functional losses",
    "torch.nn._functions.activation": "the torch.nn.functional activations",
    "torch.nn._functions.packing": "torch.nn.utils.rnn.pack_padded_sequence",
    "torch.nn._functions.conv": "torch.nn.functional.conv2d (and the other F.conv* functions)",
    # torchvision's re-export of the hub helpers (load_state_dict_from_url), gone in torchvision 0.10+
    "torchvision.models.utils": "torch.hub (from torch.hub import load_state_dict_from_url)",
    # the tensor kernels behind torchvision.transforms.functional, made private in 0.15 and gone in 0.17
    "torchvision.transforms.functional_tensor": "torchvision.transforms.functional (or transforms.v2.functional)",
}


def removed_module(name: str) -> str | None:
    """The deleted module that dotted ``name`` is or lies in, else None."""
    for module in REMOVED_MODULES:
        if name == module or name.startswith(module + "."):
            return module
    return None


# deprecated: still there, but warn and are slated for removal (name -> (replacement, exact alias?))
DEPRECATED: dict[str, tuple[str, bool]] = {
    "torch.qr": ("torch.linalg.qr", False),
    "torch.chain_matmul": ("torch.linalg.multi_dot", False),
    "torch.cholesky": ("torch.linalg.cholesky", False),
    "torch.ger": ("torch.outer", True),
    "torch.lu_solve": ("torch.linalg.lu_solve", False),
    "torch.norm": ("torch.linalg.vector_norm / torch.linalg.matrix_norm", False),
    "torch.range": ("torch.arange (which excludes the end point)", False),
    "torch.svd": ("torch.linalg.svd (returns V^H, not V)", False),
    "torch.triangular_solve": ("torch.linalg.solve_triangular", False),
    "torch.lu": ("torch.linalg.lu_factor", False),
    "torch.nn.UpsamplingNearest2d": ("torch.nn.Upsample(mode='nearest')", False),
    "torch.nn.UpsamplingBilinear2d": ("torch.nn.Upsample(mode='bilinear', align_corners=True)", False),
    "torch.testing.assert_allclose": ("torch.testing.assert_close", False),
    "torch.nn.utils.weight_norm": ("torch.nn.utils.parametrizations.weight_norm", False),
    # the module of the old weight norm: its function and the hook class whose apply() it calls
    "torch.nn.utils.weight_norm.weight_norm": ("torch.nn.utils.parametrizations.weight_norm", False),
    "torch.nn.utils.weight_norm.WeightNorm": ("torch.nn.utils.parametrizations.weight_norm", False),
    "torch.utils._pytree._register_pytree_node": ("torch.utils._pytree.register_pytree_node", False),
    "torch.backends.cuda.sdp_kernel": ("torch.nn.attention.sdpa_kernel", False),
    "torch.nn.NLLLoss2d": ("torch.nn.NLLLoss (it takes (N, C, H, W) inputs)", False),
    # the allocator's "cached" memory was renamed "reserved" (FutureWarning on each call)
    "torch.cuda.memory_cached": ("torch.cuda.memory_reserved", True),
    "torch.cuda.max_memory_cached": ("torch.cuda.max_memory_reserved", True),
    # (F.sigmoid/F.tanh warned until PyTorch 1.x; they are plain aliases again and warn no more)
    "torch.nn.functional.upsample": ("torch.nn.functional.interpolate", False),
    "torch.nn.functional.upsample_bilinear": ("torch.nn.functional.interpolate(mode='bilinear', align_corners=True)", False),
    "torch.nn.functional.upsample_nearest": ("torch.nn.functional.interpolate(mode='nearest')", False),
    "torch.nn.init.xavier_uniform": ("torch.nn.init.xavier_uniform_", True),
    "torch.nn.init.xavier_normal": ("torch.nn.init.xavier_normal_", True),
    "torch.nn.init.kaiming_uniform": ("torch.nn.init.kaiming_uniform_", True),
    "torch.nn.init.kaiming_normal": ("torch.nn.init.kaiming_normal_", True),
    "torch.nn.init.uniform": ("torch.nn.init.uniform_", True),
    "torch.nn.init.normal": ("torch.nn.init.normal_", True),
    "torch.nn.init.constant": ("torch.nn.init.constant_", True),
    "torch.nn.init.orthogonal": ("torch.nn.init.orthogonal_", True),
    "torch.nn.init.sparse": ("torch.nn.init.sparse_", True),
    "torch.nn.utils.clip_grad_norm": ("torch.nn.utils.clip_grad_norm_", True),
    "torch.nn.utils.clip_grad.clip_grad_norm": ("torch.nn.utils.clip_grad_norm_", True),
    "functorch.vmap": ("torch.func.vmap", True),
    "functorch.grad": ("torch.func.grad", True),
    "functorch.vjp": ("torch.func.vjp", True),
    "functorch.jvp": ("torch.func.jvp", True),
    "functorch.jacrev": ("torch.func.jacrev", True),
    "functorch.jacfwd": ("torch.func.jacfwd", True),
    "functorch.hessian": ("torch.func.hessian", True),
    "functorch.functionalize": ("torch.func.functionalize", True),
}

# private paths of public functions (private name -> public name, the same object)
NON_PUBLIC: dict[str, str] = {
    "torch.utils.data._utils.collate.default_collate": "torch.utils.data.default_collate",
    "torch.utils.data._utils.collate.default_convert": "torch.utils.data.default_convert",
    "torch.utils.data._utils.worker.get_worker_info": "torch.utils.data.get_worker_info",
    # torch/__init__.py re-exports these very objects under their public names
    "torch._ops.ops": "torch.ops",
    "torch._tensor.Tensor": "torch.Tensor",
    "torch._lowrank.svd_lowrank": "torch.svd_lowrank",
    "torch._lowrank.pca_lowrank": "torch.pca_lowrank",
}


# Both helpers skip the old-version branch of code written for several versions
# (``try: from torch.func import vmap`` / ``except ImportError: from functorch import vmap``).


def symbol_calls(ctx: Context, table: dict) -> Iterator[tuple[ast.Call, str]]:
    """Calls of any name in ``table`` through a module (``torch.solve(...)``), with the name.

    A bare name (``solve(...)`` after ``from torch import solve``) is left to the import line's
    finding, where the fix belongs."""
    for call in ctx.calls_to(*table):
        if call.func.__class__ is ast.Name or in_compat_fallback(ctx, call):
            continue
        q = ctx.qualname(call.func)
        if q in table:
            yield call, q


def symbol_imports(ctx: Context, table: dict) -> Iterator[tuple[ast.ImportFrom, ast.alias, str]]:
    """``from M import N`` lines that import a name of ``table`` (``M.N`` in it)."""
    for node in ctx.nodes.get(ast.ImportFrom, ()):
        if node.level or not node.module:
            continue
        for alias in node.names:
            q = canonical(f"{node.module}.{alias.name}")
            if q in table and not in_compat_fallback(ctx, node):
                yield node, alias, q
