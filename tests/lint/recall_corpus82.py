"""The recall corpus, round 25 part D: classes sets 39-40 missed for TW209, TW507 and TW513 -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW507 exp(d) - d - 1
# The k3 estimator of a KL penalty (RLHF trainers) and Taylor remainders: the exp's own argument is
# subtracted before the 1, so the subtraction of 1 cancels like exp(x) - 1 does.
FIND += [
    Shape("TW507", "k3 KL estimator of a policy-gradient trainer: torch.exp(d) - d - 1", d("""
        import torch
        def penalty(ref_logp, logp):
            d = ref_logp - logp
            return torch.exp(d) - d - 1
    """), 4),
    Shape("TW507", "the same written with the difference spelled out twice and a float 1", d("""
        import torch
        def penalty(ref, cur, mask):
            return ((torch.exp(ref[mask] - cur) - (ref[mask] - cur) - 1.0) * mask).sum()
    """), 3),
    Shape("TW507", "the tensor-method form: (a - b).exp() - (a - b) - 1", d("""
        import torch
        def remainder(a, b):
            return (a - b).exp() - (a - b) - 1
    """), 3),
]
QUIET += [
    Shape("TW507", "look-alike: another value subtracted before the 1", d("""
        import torch
        def shifted(x, bias):
            return torch.exp(x) - bias - 1
    """)),
    Shape("TW507", "look-alike: NumPy's exp with its argument subtracted", d("""
        import numpy as np
        def remainder(x):
            return np.exp(x) - x - 1
    """)),
]

# ------------------------------------------------------------- TW513 a typed constructor chosen under any name
# A batching helper picks the CUDA or CPU typed constructor into a local name of its own and calls it.
FIND += [
    Shape("TW513", "tensor_type = torch.cuda.LongTensor if cuda else torch.LongTensor, then tensor_type(b, n)", d("""
        import torch
        def pad(rows, cuda, pad_id=0):
            tensor_type = torch.cuda.LongTensor if cuda else torch.LongTensor
            out = tensor_type(len(rows), max(len(r) for r in rows))
            out.fill_(pad_id)
            return out
    """), 4),
    Shape("TW513", "a float variant called on a flattened list", d("""
        import torch
        def targets(values, on_gpu):
            make = torch.cuda.FloatTensor if on_gpu else torch.FloatTensor
            return make(list(values))
    """), 4),
]
QUIET += [
    Shape("TW513", "look-alike: a dtype chosen by a conditional and passed to torch.zeros", d("""
        import torch
        def pad(rows, wide):
            kind = torch.long if wide else torch.int
            return torch.zeros(len(rows), 8, dtype=kind)
    """)),
    Shape("TW513", "look-alike: a factory chosen between torch.zeros and torch.ones", d("""
        import torch
        def start(n, empty):
            make = torch.zeros if empty else torch.ones
            return make(n, 4)
    """)),
]

# ------------------------------------------------------------- TW209 a vendored synchronized BatchNorm
# The vendored `sync_batchnorm` package (SynchronizedBatchNorm2d deriving from torch's private
# _BatchNorm through a class of its own, handed on by the package's __init__.py), imported under the
# name BatchNorm2d; a biased convolution feeds it in a block's forward.
_SYNC_BN = d("""
    import torch.nn.functional as F
    from torch.nn.modules.batchnorm import _BatchNorm
    class _SynchronizedBatchNorm(_BatchNorm):
        def forward(self, input):
            if not self.training:
                return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                    False, self.momentum, self.eps)
            return input
    class SynchronizedBatchNorm2d(_SynchronizedBatchNorm):
        def _check_input_dim(self, input):
            pass
    class SynchronizedBatchNorm1d(_SynchronizedBatchNorm):
        def _check_input_dim(self, input):
            pass
""")
_SYNC_INIT = "from .batchnorm import SynchronizedBatchNorm1d, SynchronizedBatchNorm2d\n"
_BLOCK = d("""
    from torch import nn
    import torch.nn.functional as F
    from sync_batchnorm import SynchronizedBatchNorm2d as BatchNorm2d
    class Down(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, kernel_size=3, padding=1)
            self.norm = BatchNorm2d(cout, affine=True)
        def forward(self, x):
            out = self.conv(x)
            out = self.norm(out)
            return F.relu(out)
""")
PROJECTS += [
    ProjectShape("TW209", "biased conv before the vendored SynchronizedBatchNorm2d, imported through the package", {
        "sync_batchnorm/__init__.py": _SYNC_INIT, "sync_batchnorm/batchnorm.py": _SYNC_BN, "modules/blocks.py": _BLOCK,
    }, (("modules/blocks.py", 7),)),
    ProjectShape("TW209", "look-alike: the same block with bias=False", {
        "sync_batchnorm/__init__.py": _SYNC_INIT, "sync_batchnorm/batchnorm.py": _SYNC_BN,
        "modules/blocks.py": _BLOCK.replace("padding=1)", "padding=1, bias=False)"),
    }),
    ProjectShape("TW209", "look-alike: a 1d synchronized BatchNorm after a 2d convolution", {
        "sync_batchnorm/__init__.py": _SYNC_INIT, "sync_batchnorm/batchnorm.py": _SYNC_BN,
        "modules/blocks.py": _BLOCK.replace("SynchronizedBatchNorm2d as", "SynchronizedBatchNorm1d as"),
    }),
]
