"""The recall corpus, round 22 part D: classes of TW203-TW206 that the fresh sets 33/34 showed -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW206 an array built and copied in every forward
# A model's forward builds an all-zero attention mask with NumPy in the dtype it then asks
# torch.tensor for: built twice, every step.
FIND += [
    Shape("TW206", "forward builds a float32 zero mask with NumPy and copies it", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.width = width
            def forward(self, h):
                blank = torch.tensor(np.zeros((h.size(0), 1, self.width), dtype=np.float32), dtype=torch.float32)
                return h + blank.to(h.device)
    """), 9),
    Shape("TW206", "forward copies an array NumPy made in the dtype asked for (name bound first)", d("""
        import numpy as np
        import torch
        from torch import nn
        class Scorer(nn.Module):
            def forward_features(self, x):
                ids = np.array(x.shape, dtype=np.int64)
                sizes = torch.tensor(ids, dtype=torch.long)
                return x.view(-1) * sizes.sum()
    """), 7),
]
QUIET += [
    Shape("TW206", "look-alike: the same mask built once in __init__", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.blank = torch.tensor(np.zeros((1, 1, width), dtype=np.float32), dtype=torch.float32)
            def forward(self, h):
                return h + self.blank.to(h.device)
    """)),
    Shape("TW206", "look-alike: a plain class (no nn.Module) stacks rows and casts them", d("""
        import numpy as np
        import torch
        class Table:
            def forward(self, rows):
                return torch.tensor(np.stack(rows), dtype=torch.float32)
    """)),
]

# ------------------------------------------------------------- TW206 an array an object keeps on self, copied per batch
# A replay store or frame stack keeps its arrays as attributes made in __init__; its batch method
# copies a slice of them with torch.tensor every call.
FIND += [
    Shape("TW206", "batch method copies a slice of an array attribute made in __init__", d("""
        import numpy as np
        import torch
        class Store:
            def __init__(self, cap, dim):
                self.obs = np.zeros((cap, dim), dtype=np.float32)
                self.n = 0
            def next_batch(self, k):
                start = np.random.randint(0, self.n - k)
                return torch.tensor(self.obs[start:start + k])
    """), 9),
    Shape("TW206", "frame window attribute copied whole on every env step", d("""
        import numpy as np
        import torch
        class Frames:
            def __init__(self, k, h, w):
                self.buf = np.zeros((k, h, w), dtype=np.uint8)
            def play(self, env, steps):
                out = []
                for _ in range(steps):
                    self.buf[:-1] = self.buf[1:]
                    self.buf[-1] = env.step()
                    out.append(torch.tensor(self.buf[:, ::2]))
                return out
    """), 11),
]
QUIET += [
    Shape("TW206", "look-alike: the attribute is also set to a list elsewhere (not always an array)", d("""
        import numpy as np
        import torch
        class Store:
            def __init__(self, cap, dim):
                self.obs = np.zeros((cap, dim), dtype=np.float32)
            def clear(self):
                self.obs = []
            def next_batch(self, k):
                return torch.tensor(self.obs[0:k])
    """)),
    Shape("TW206", "look-alike: float64 replay arrays copied with a float32 dtype (the conversion copies anyway)", d("""
        import numpy as np
        import torch
        class Replay:
            def __init__(self, cap, dim):
                self.s = np.zeros((cap, dim))
            def sample(self, idx):
                return torch.tensor(self.s[idx], dtype=torch.float32)
    """)),
]

# ------------------------------------------------------------- TW205 noise drawn on the host into a device buffer
# A noisy linear layer registers its noise as buffers (they move with the model) and refills them
# with copy_ from torch.randn drawn on the CPU, every time the noise is resampled.
_NOISY = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class NoisyDense(nn.Module):
        def __init__(self, n_in, n_out):
            super().__init__()
            self.n_in, self.n_out = n_in, n_out
            self.mu = nn.Parameter(torch.zeros(n_out, n_in))
            self.sigma = nn.Parameter(torch.full((n_out, n_in), 0.1))
            self.register_buffer("eps", torch.zeros(n_out, n_in))
            self.resample()
        def _signed_root(self, n):
            z = torch.randn(n)
            return z.sign() * z.abs().sqrt()
        def resample(self):
            a = self._signed_root(self.n_in)
            b = self._signed_root(self.n_out)
            self.eps.copy_(torch.outer(b, a))
        def forward(self, x):
            return F.linear(x, self.mu + self.sigma * self.eps)
""")
FIND += [
    Shape("TW205", "noise helper's torch.randn copied into a buffer, resampled every forward", _NOISY.replace(
        "    def forward(self, x):\n", "    def forward(self, x):\n        if self.training:\n            self.resample()\n")
        + "net = NoisyDense(4, 2).cuda()\n", 13),
    Shape("TW205", "torch.randn copied straight into a buffer's .data by a per-step method", d("""
        import torch
        import torch.nn as nn
        class Jitter(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.register_buffer("noise", torch.zeros(n))
            def forward(self, x):
                self.noise.data.copy_(torch.randn(x.size(-1)))
                return x + self.noise
        model = Jitter(8).to("cuda")
    """), 8),
]
QUIET += [
    Shape("TW205", "look-alike: the noise is only drawn once, from __init__", _NOISY + "net = NoisyDense(4, 2).cuda()\n"),
    Shape("TW205", "look-alike: the buffer is refilled from a device tensor (a running mean)", d("""
        import torch
        import torch.nn as nn
        class Tracker(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.register_buffer("avg", torch.zeros(n))
            def forward(self, x):
                self.avg.copy_(x.mean(0))
                return x - self.avg
        model = Tracker(8).cuda()
    """)),
    Shape("TW205", "look-alike: one number drawn on the host indexes a device tensor (a plain integer index)", d("""
        import numpy as np
        import torch
        device = torch.device("cuda")
        class Agent:
            def __init__(self, net, n):
                self.net, self.n = net.to(device), n
            def act(self, s, eps):
                with torch.no_grad():
                    state = torch.FloatTensor(s.reshape(1, -1)).to(device)
                    q = self.net(state)
                    if np.random.rand() < eps:
                        a = np.random.randint(0, self.n)
                        chosen = q[0, a]
                    else:
                        a = q.argmax().item()
                        chosen = q[0, a]
                    return a, chosen
    """)),
]
PROJECTS += [
    ProjectShape("TW205", "noise resampled by an agent in another module every update", {
        "layers.py": _NOISY,
        "agent.py": d("""
            import torch
            from layers import NoisyDense
            class Agent:
                def __init__(self):
                    self.net = NoisyDense(4, 2).to("cuda")
                def update(self, batch):
                    self.net.resample()
                    return self.net(batch.to("cuda")).sum()
        """),
    }, (("layers.py", 13),)),
]

# ------------------------------------------------------------- TW205 a star-imported helper that moves what it is given
# A GAN trainer star-imports its utilities and wraps every fresh noise batch with a helper that
# moves it to the GPU when one is there: the noise is drawn on the host and copied every step.
_WRAP = d("""
    import torch
    from torch.autograd import Variable
    def as_var(t, grad=False):
        if torch.cuda.is_available():
            t = t.cuda()
        return Variable(t, requires_grad=grad)
""")
_GAN_STEP = d("""
    import torch
    from helpers import *
    def fit(G, D, loader, opt, zdim):
        probe = as_var(torch.randn(16, zdim))
        for x, _ in loader:
            x = as_var(x)
            z = as_var(torch.randn(x.size(0), zdim))
            loss = D(G(z)).mean() - D(x).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return G(probe)
""")
PROJECTS += [
    ProjectShape("TW205", "noise wrapped every step by a moving helper from `from helpers import *`", {
        "helpers.py": _WRAP, "train.py": _GAN_STEP,
    }, (("train.py", 7),)),
    ProjectShape("TW205", "look-alike: the star-imported helper only wraps, it moves nothing", {
        "helpers.py": _WRAP.replace("    if torch.cuda.is_available():\n        t = t.cuda()\n", ""), "train.py": _GAN_STEP,
    }),
    ProjectShape("TW205", "look-alike: the trainer defines its own as_var that keeps the tensor where it is", {
        "helpers.py": _WRAP,
        "train.py": _GAN_STEP.replace("from helpers import *\n", "from helpers import *\ndef as_var(t):\n    return t\n"),
    }),
]
