"""The recall corpus, fifth round: the classes a first look at seven more fresh projects
(issue 22, fourth held-out set, now a tuning set) found missing or falsely reported - each written
in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists; the entries of one rule sit together.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW502
FIND += [
    Shape("TW502", "segmentation decoders: F.upsample to the skip connection's size", d("""
        import torch
        import torch.nn.functional as F
        def decode(center, enc4):
            return torch.cat([center, F.upsample(enc4, center.size()[2:], mode='bilinear')], 1)
    """), 4),
    Shape("TW502", "a refinement head: F.upsample_bilinear", d("""
        from torch.nn import functional as F
        def refine(brm, a, b):
            return brm(F.upsample_bilinear(a, b.size()[2:]) + b)
    """), 3),
    Shape("TW502", "F.upsample_nearest through the full module path", d("""
        import torch
        def up(x):
            return torch.nn.functional.upsample_nearest(x, scale_factor=2)
    """), 3),
    Shape("TW502", "a model module calls init.xavier_uniform on a name it never imports (a sibling module does)", d("""
        import torch
        import torch.nn as nn
        def conv_init(m):
            if m.__class__.__name__.find('Conv') != -1:
                init.xavier_uniform(m.weight, gain=2 ** 0.5)
    """), 5),
    Shape("TW502", "the same with init.constant on the bias", d("""
        import torch.nn as nn
        def conv_init(m):
            if isinstance(m, nn.Conv2d):
                init.constant(m.bias, 0)
    """), 4),
]
QUIET += [
    Shape("TW502", "the current spellings: F.interpolate, nn.Upsample, and init functions with the underscore", d("""
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.nn import init
        up = nn.Upsample(scale_factor=2, mode='nearest')
        def decode(x, skip):
            init.xavier_uniform_(skip)
            return F.interpolate(x, skip.size()[2:], mode='bilinear', align_corners=False)
    """)),
    Shape("TW502", "a project's own init module or object named init, and a file that never imports torch", d("""
        import torch
        import mylib.init as init
        def setup(m):
            init.xavier_uniform(m.weight)
    """)),
    Shape("TW502", "a parameter called init", d("""
        import torch
        def setup(m, init):
            init.constant(m.bias, 0)
    """)),
    Shape("TW502", "a star import may bind init", d("""
        import torch
        from mylib.weights import *
        def setup(m):
            init.normal(m.weight)
    """)),
    Shape("TW502", "a file that never imports torch", d("""
        import numpy as np
        def setup(m):
            init.normal(m.weight)
    """)),
    Shape("TW502", "an upsample method of the project's own object", d("""
        import torch
        def decode(self, x):
            return self.upsample(x) + self.decoder.upsample_bilinear(x)
    """)),
]
