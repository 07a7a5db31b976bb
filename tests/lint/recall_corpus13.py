"""The recall corpus, round 9 part A: classes the ninth set (a tuning set since round 9) still
missed - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------------ TW209 BatchNorm subclass / held norm
# A tracker backbone that normalises with its own BatchNorm subclass (other eps/momentum), and a
# residual block whose norm layer is chosen by a string and then put in a Sequential by attribute.
_BN_SUBCLASS = d("""
    import torch.nn as nn
    class _Norm2d(nn.BatchNorm2d):
        def __init__(self, channels, eps=1e-6, momentum=0.05):
            super().__init__(channels, eps=eps, momentum=momentum)
    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 48, 7, 2),
                _Norm2d(48),
                nn.ReLU(inplace=True))
""")
FIND += [
    Shape("TW209", "a biased conv before the file's own BatchNorm2d subclass (other eps/momentum) in a Sequential",
          _BN_SUBCLASS, 9),
    Shape("TW209", "a subclass of a subclass, used in a forward pair self.bn(self.conv(x))", d("""
        import torch.nn as nn
        class TunedBN(nn.BatchNorm1d):
            pass
        class QuietBN(TunedBN):
            def __init__(self, n):
                super().__init__(n, momentum=0.01)
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(16, 32, 3)
                self.bn = QuietBN(32)
            def forward(self, x):
                return self.bn(self.conv(x))
    """), 10),
    Shape("TW209", "the norm chosen by a norm_fn string, held as self.norm_down and put after a biased conv in a Sequential", d("""
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, cin, cout, norm_fn="batch", stride=1):
                super().__init__()
                if norm_fn == "group":
                    self.norm_down = nn.GroupNorm(8, cout)
                elif norm_fn == "batch":
                    self.norm_down = nn.BatchNorm2d(cout)
                else:
                    self.norm_down = nn.Sequential()
                self.shortcut = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride), self.norm_down)
    """), 12),
]
QUIET += [
    Shape("TW209", "look-alike: a BatchNorm subclass with its own forward (may not normalise the conv's output)", d("""
        import torch.nn as nn
        class ScaledBN(nn.BatchNorm2d):
            def forward(self, x):
                return x * self.weight[None, :, None, None]
        block = nn.Sequential(nn.Conv2d(3, 8, 3), ScaledBN(8))
    """)),
    Shape("TW209", "look-alike: a subclass of InstanceNorm, and a conv with bias=False before the BN subclass", d("""
        import torch.nn as nn
        class _BN(nn.BatchNorm2d):
            pass
        class _IN(nn.InstanceNorm2d):
            pass
        a = nn.Sequential(nn.Conv2d(3, 8, 3), _IN(8))
        b = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), _BN(8))
    """)),
    Shape("TW209", "look-alike: the held norm is only ever a GroupNorm or an identity", d("""
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, cin, cout, norm_fn="group"):
                super().__init__()
                if norm_fn == "group":
                    self.norm_down = nn.GroupNorm(8, cout)
                else:
                    self.norm_down = nn.Identity()
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1), self.norm_down)
    """)),
]
