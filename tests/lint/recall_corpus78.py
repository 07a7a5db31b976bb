"""The recall corpus, round 24 part E: classes sets 37-38 showed on their first look for the dead
code analysis (blocks a script switches off by a constant) and TW102, TW108, TW501, TW502, TW509 -
each written in our own words and reduced to its shape, with look-alikes. ``recall_corpus.py`` adds
these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- dead code: blocks switched off by a constant
# A tutorial script runs one section at a time: `switch = 0` right before `if switch:`, set to 1
# before the next. A per-call rule's advice does not apply inside the block that never runs.
QUIET += [
    Shape("TW404", "look-alike: CUDA touched only inside a section switched off by `on = 0`", d("""
        import os
        import torch
        on = 0
        if on:
            dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        on = 1
        if on:
            os.environ["CUDA_VISIBLE_DEVICES"] = "0"
            print(torch.zeros(2))
    """)),
    Shape("TW404", "look-alike: the late setting itself sits in a section switched off by a constant", d("""
        import os
        import torch
        print(torch.cuda.device_count())
        section = False
        if section:
            os.environ.setdefault("CUDA_VISIBLE_DEVICES", "1")
    """)),
    Shape("TW201", "look-alike: DataParallel under a parallel flag computed from `gpus = 0`", d("""
        import torch
        from torch import nn
        gpus = 0  # 0 runs on the CPU
        multi = gpus > 1
        def build():
            net = nn.Sequential(nn.Linear(4, 4))
            if multi and torch.cuda.device_count() > 1:
                net = nn.DataParallel(net)
            return net
        if __name__ == "__main__":
            build()
    """)),
    Shape("TW101", "look-alike: a loss tensor appended in a demo block off by `demo = 0`", d("""
        import torch
        w = torch.ones(1, requires_grad=True)
        demo = 0
        if demo:
            history = []
            for step in range(10):
                loss = (w * 3 - 1) ** 2
                loss.backward()
                history.append(loss)
                w.data -= 0.1 * w.grad
                w.grad.zero_()
    """)),
    Shape("TW208", "look-alike: a manual gradient reset in a section off by `part = 0`, the next section on", d("""
        import torch
        x = torch.tensor([2.0], requires_grad=True)
        part = 0
        if part:
            for _ in range(5):
                y = x ** 2
                y.backward()
                x.data.sub_(0.1 * x.grad)
                x.grad.zero_()
        part = 1
        if part:
            print(x)
    """)),
]
FIND += [
    Shape("TW404", "look-alike: the same sections with the first switched on (`on = 1`) run CUDA first", d("""
        import os
        import torch
        on = 1
        if on:
            dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        on = 1
        if on:
            os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    """), 8),
    Shape("TW201", "look-alike: the switch is rebound in a loop around the test (another pass may see it on)", d("""
        import torch
        from torch import nn
        net = nn.Linear(4, 4)
        use_dp = 0
        for stage in range(2):
            if use_dp:
                net = nn.DataParallel(net)
            use_dp = 1
    """), 7),
    Shape("TW201", "look-alike: the switch is set in one branch only (the test may see either value)", d("""
        import sys
        import torch
        from torch import nn
        net = nn.Linear(4, 4)
        parallel = 0
        if len(sys.argv) > 1:
            parallel = 1
        if parallel:
            net = nn.DataParallel(net)
    """), 9),
    Shape("TW201", "look-alike: a count defaulted with `or 1` (`x or 1` may be any count the option gives)", d("""
        import torch
        from torch import nn
        def build(cfg):
            net = nn.Linear(4, 4)
            gpus = cfg.gpus or 1
            if gpus > 1:
                net = nn.DataParallel(net)
            return net
    """), 7),
]

# ------------------------------------------------------------- TW501 the FFT functions deleted in PyTorch 1.8
# A knowledge-graph embedding or a spectral layer written for PyTorch 1.x: circular correlation
# through torch.rfft/torch.ifft on a trailing real/imaginary pair.
FIND += [
    Shape("TW501", "circular correlation through torch.rfft with onesided=False", d("""
        import torch
        def correlate(a, b):
            fa = torch.rfft(a, signal_ndim=1, onesided=False)
            fb = torch.rfft(b, signal_ndim=1, onesided=False)
            return fa * fb
    """), 3),
    Shape("TW501", "inverse through torch.ifft of a product of spectra", d("""
        import torch as th
        def back(spec):
            return th.ifft(spec, 1)[..., 0]
    """), 3),
    Shape("TW501", "torch.irfft of a 2-D spectrum in a spectral pooling layer", d("""
        import torch
        from torch import nn
        class SpectralPool(nn.Module):
            def forward(self, x):
                f = torch.rfft(x, 2, onesided=True)
                return torch.irfft(f[..., :8, :8, :], 2, onesided=True)
    """), 6),
    Shape("TW501", "torch.fft called as the old function on an interleaved real/imaginary tensor", d("""
        import torch
        def spectrum(x):
            pair = torch.stack([x, torch.zeros_like(x)], -1)
            return torch.fft(pair, 1)
    """), 4),
]
QUIET += [
    Shape("TW501", "look-alike: the torch.fft module's functions (the 1.8 API)", d("""
        import torch
        from torch import fft
        def correlate(a, b):
            return torch.fft.irfft(torch.conj(torch.fft.rfft(a)) * fft.rfft(b), n=a.shape[-1])
    """)),
    Shape("TW501", "look-alike: the old call only in the branch of a version test", d("""
        import torch
        def spectrum(x):
            if torch.__version__ >= "1.8":
                return torch.fft.rfft(x)
            else:
                return torch.rfft(x, 1)
    """)),
    Shape("TW501", "look-alike: numpy's fft functions", d("""
        import numpy as np
        import torch
        def spectrum(x):
            return torch.from_numpy(np.fft.rfft(x.numpy()))
    """)),
]
