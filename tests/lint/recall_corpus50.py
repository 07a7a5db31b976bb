"""The recall corpus, round 18 part D: classes the twenty-fifth and twenty-sixth sets (the tuning sets
of round 18) still missed for TW402, TW203, TW204, TW103, TW104, TW109, TW404, TW405 and TW506 -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW506 the in-place logarithm
# A numerically careful inverse hyperbolic function that works on a double copy in place:
# `torch.log_(1 + z)` (the function form) or `(1 + z).log_()` (the method form).
FIND += [
    Shape("TW506", "torch.log_(1 + z) inside an autograd Function's forward", d("""
        import torch
        class Atanh(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                z = x.double()
                return (torch.log_(1 + z).sub_(torch.log_(1 - z))).mul_(0.5).to(x.dtype)
    """), 6),
    Shape("TW506", "(z + 1).log_() as a tensor method on a fresh sum", d("""
        import torch
        def softplus_inv(z):
            return (z + 1).log_()
    """), 3),
]
QUIET += [
    Shape("TW506", "look-alike: torch.log_ of a value that is not one plus something", d("""
        import torch
        def entropy(p):
            return -(p * torch.log_(p.clamp(min=1e-12))).sum()
    """)),
    Shape("TW506", "look-alike: log_ of one plus a count", d("""
        import torch
        def damp(counts):
            return (counts.float() + 1).log_()
    """)),
]
