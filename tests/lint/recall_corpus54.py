"""The recall corpus, round 19 part D: classes the twenty-seventh and twenty-eighth sets (the tuning
sets of round 19) still missed or reported falsely - each written in our own words and reduced to
its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW502 calls through a name a `from` import binds
# A VQA model wraps every linear layer in the old weight norm, imported by name from its module or
# from the package; each call warns (the import line is reported too).
FIND += [
    Shape("TW502", "weight_norm imported from its module, called on each linear layer of an MLP", d("""
        import torch.nn as nn
        from torch.nn.utils.weight_norm import weight_norm
        class Head(nn.Module):
            def __init__(self, sizes):
                super().__init__()
                blocks = []
                for a, b in zip(sizes, sizes[1:]):
                    blocks.append(weight_norm(nn.Linear(a, b), dim=None))
                self.body = nn.Sequential(*blocks)
    """), 8),
    Shape("TW502", "weight_norm imported from nn.utils under another name, called for a vocoder conv", d("""
        from torch import nn
        from torch.nn.utils import weight_norm as wn
        class Post(nn.Module):
            def __init__(self, ch):
                super().__init__()
                self.conv = wn(nn.Conv1d(ch, 1, 7, padding=3))
    """), 6),
    Shape("TW502", "an nn.init function without the underscore imported by name, called in an init helper", d("""
        import torch.nn as nn
        from torch.nn.init import kaiming_normal
        def init_weights(net):
            for m in net.modules():
                if isinstance(m, nn.Conv2d):
                    kaiming_normal(m.weight)
    """), 6),
]
QUIET += [
    Shape("TW502", "look-alike: the parametrizations weight norm called by name", d("""
        import torch.nn as nn
        from torch.nn.utils.parametrizations import weight_norm
        layer = weight_norm(nn.Linear(4, 4))
    """)),
]
# the import line is reported (with its fix), the calls of a name bound again are not
PROJECTS += [
    ProjectShape("TW502", "look-alike: the file defines its own weight_norm after importing torch's", {"net.py": d("""
        import torch.nn as nn
        from torch.nn.utils import weight_norm
        def weight_norm(module):
            return module
        layer = weight_norm(nn.Linear(4, 4))
    """)}, (("net.py", 2),)),
    ProjectShape("TW502", "look-alike: a local variable of the same name holds a project helper", {"net.py": d("""
        import torch.nn as nn
        from torch.nn.utils import weight_norm
        from mynorm import spectral
        def build(kind):
            weight_norm = spectral if kind == "sn" else (lambda m: m)
            return weight_norm(nn.Linear(4, 4))
    """)}, (("net.py", 2),)),
]

# ------------------------------------------------------------- TW501 an import of a module PyTorch deleted
# A style-transfer or graph project ships an old cffi CUDA extension: its build script imports
# create_extension and the generated package imports _wrap_function, both from torch.utils.ffi.
FIND += [
    Shape("TW501", "build script of an old cffi extension", d("""
        import os
        import torch
        from torch.utils.ffi import create_extension
        here = os.path.dirname(__file__)
        ext = create_extension("_ext.lib", headers=["src/lib.h"], sources=["src/lib.c"], with_cuda=torch.cuda.is_available())
        if __name__ == "__main__":
            ext.build()
    """), 3),
    Shape("TW501", "generated wrapper package of a cffi extension", d("""
        from torch.utils.ffi import _wrap_function
        from ._kernels import lib as _lib, ffi as _ffi
        __all__ = []
        for _name in dir(_lib):
            globals()[_name] = _wrap_function(getattr(_lib, _name), _ffi)
    """, ), 1, "_ext/kernels/__init__.py"),
    Shape("TW501", "the ffi module imported from torch.utils", d("""
        from torch.utils import ffi
        extension = ffi.create_extension("roi", headers=[], sources=[])
    """), 1),
    Shape("TW501", "old Lua-style modules of torch.legacy", d("""
        import torch
        import torch.legacy.nn as lnn
        block = lnn.SpatialConvolution(3, 16, 3, 3)
    """), 2),
]
QUIET += [
    Shape("TW501", "look-alike: cffi itself and a project module named ffi", d("""
        from cffi import FFI
        from .ffi import load_kernels
        from utils.ffi import wrap
        builder = FFI()
    """)),
    Shape("TW501", "look-alike: the cpp_extension replacement", d("""
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension
        ext = CUDAExtension("roi", ["roi.cpp", "roi_kernel.cu"])
    """)),
    Shape("TW501", "look-alike: torch._six imported under a try that falls back", d("""
        try:
            from torch._six import with_metaclass
        except ImportError:
            from six import with_metaclass
    """)),
]

# ------------------------------------------------------------- TW511 a deeper torchvision submodule under its own name
# A face detector imports torchvision's detection helpers and its private model utilities as
# `import torchvision.models.X as X`: the same binding as `from torchvision.models import X`.
FIND += [
    Shape("TW511", "the detection backbone helpers imported under their own name", d("""
        import torch.nn as nn
        import torchvision.models.detection.backbone_utils as backbone_utils
        class Detector(nn.Module):
            pass
    """), 2),
    Shape("TW511", "torchvision's model utilities imported under their own name", d("""
        import torchvision.models._utils as _utils
        def body(backbone):
            return _utils.IntermediateLayerGetter(backbone, {"layer2": 1, "layer3": 2})
    """), 1),
    Shape("TW511", "torchvision.ops imported as ops", d("""
        import torch
        import torchvision.ops as ops
        keep = ops.nms(torch.rand(4, 4), torch.rand(4), 0.5)
    """), 2),
]
QUIET += [
    Shape("TW511", "look-alike: submodules bound to other names (the set-15/25 ruling)", d("""
        import torchvision.utils as vutils
        import torchvision.datasets as dset
        import torchvision.models.detection.backbone_utils as bb
        import torchvision.transforms.functional as TF
    """)),
    Shape("TW511", "look-alike: the from form and a plain dotted import", d("""
        import torchvision.models.detection
        from torchvision.models import _utils
        from torchvision.models.detection import backbone_utils
    """)),
]
