"""The recall corpus, round 19 part B: TW205 classes the sets 27 and 28 missed - each written in our
own words and reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds
these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW205 a CPU part appended to a list that is joined and moved
# Multi-agent learners give every agent's input its one-hot id: the parts are appended to a list,
# joined with torch.cat and the join is moved - here, or by the caller of a helper that returns it.
FIND += [
    Shape("TW205", "agent-id one-hot appended to the input parts, joined and moved under a flag", d("""
        import torch
        class Actor:
            def __init__(self, net, n, use_gpu):
                self.net, self.n, self.use_gpu = net, n, use_gpu
            def act(self, obs):
                parts = []
                parts.append(obs)
                parts.append(torch.eye(self.n))
                x = torch.cat([p for p in parts], dim=1)
                if self.use_gpu:
                    x = x.cuda()
                return self.net(x)
    """), 8),
    Shape("TW205", "a helper returns two joins, unpacked and moved per time step by its caller", d("""
        import torch
        class Learner:
            def __init__(self, k, dev):
                self.k, self.dev = k, dev
            def _features(self, batch, t):
                cur, nxt = [], []
                cur.append(batch["s"][:, t])
                nxt.append(batch["s2"][:, t])
                nxt.append(torch.zeros(batch["s"].shape[0], self.k, self.k))
                cur = torch.cat([c.reshape(-1, c.shape[-1]) for c in cur], dim=1)
                nxt = torch.cat([c.reshape(-1, c.shape[-1]) for c in nxt], dim=1)
                return cur, nxt
            def update(self, batch, steps):
                for t in range(steps):
                    a, b = self._features(batch, t)
                    a = a.to(self.dev)
                    b = b.to(self.dev)
    """), 9),
    Shape("TW205", "a mask built from 1 - eye, reshaped and multiplied into an appended part, joined by a helper", d("""
        import torch
        class Critic:
            def __init__(self, n, m, gpu):
                self.n, self.m, self.gpu = n, m, gpu
            def _inputs(self, acts):
                parts = list()
                others = 1 - torch.eye(self.n)
                others = others.view(-1, 1).repeat(1, self.m).view(self.n, -1)
                parts.append(acts * others.unsqueeze(0))
                return torch.cat(parts, dim=-1)
            def value(self, acts):
                x = self._inputs(acts)
                if self.gpu:
                    x = x.cuda()
                return x.sum()
    """), 7),
]
QUIET += [
    Shape("TW205", "look-alike: the appended one-hot is made on the device already", d("""
        import torch
        class Actor:
            def __init__(self, net, n, dev):
                self.net, self.n, self.dev = net, n, dev
            def act(self, obs):
                parts = []
                parts.append(obs)
                parts.append(torch.eye(self.n, device=self.dev))
                x = torch.cat([p for p in parts], dim=1)
                x = x.to(self.dev)
                return self.net(x)
    """)),
    Shape("TW205", "look-alike: the joined parts stay on the host (a NumPy feature row)", d("""
        import torch
        def features(obs, n):
            parts = []
            parts.append(obs)
            parts.append(torch.eye(n))
            x = torch.cat(parts, dim=1)
            return x.numpy()
    """)),
    Shape("TW205", "look-alike: each part is moved by itself in the join, not the join", d("""
        import torch
        def features(obs, dev):
            parts = []
            parts.append(obs)
            parts.append(obs * 2)
            x = torch.cat([p.to(dev) for p in parts], dim=1)
            return x.to(dev)
    """)),
    Shape("TW205", "look-alike: the list is used on the host before the join is moved", d("""
        import torch
        def features(obs, n, dev):
            parts = []
            parts.append(torch.eye(n))
            x = torch.cat(parts, dim=1)
            print(x.shape)
            return x.to(dev)
    """)),
]

# ------------------------------------------------------------- TW205 a state reset to a CPU tensor by a method, moved where it is used
# Recurrent agents keep their hidden state on self; a method resets it with torch.zeros every
# training step (or episode) and the step moves it with `self.h = self.h.cuda()`.
FIND += [
    Shape("TW205", "init_hidden resets the state with torch.zeros; the training step stores it back moved", d("""
        import torch
        class Trainer:
            def __init__(self, net, hidden, use_cuda):
                self.net, self.hidden, self.use_cuda = net, hidden, use_cuda
                self.opt = torch.optim.Adam(net.parameters())
                self.h = None
            def init_hidden(self, b):
                self.h = torch.zeros(b, self.hidden)
            def learn(self, x):
                self.init_hidden(x.shape[0])
                if self.use_cuda:
                    self.h = self.h.cuda()
                out, self.h = self.net(x, self.h)
                loss = out.pow(2).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
    """), 8),
]
QUIET += [
    Shape("TW205", "look-alike: the state is reset only in __init__ and moved once, stored back", d("""
        import torch
        class Runner:
            def __init__(self, net, b, hidden):
                self.net = net
                self.h = torch.zeros(b, hidden)
            def step(self, x):
                self.h = self.h.cuda()
                out, self.h = self.net(x, self.h)
                return out
    """)),
    Shape("TW205", "look-alike: the reset makes the state on the device", d("""
        import torch
        class Trainer:
            def __init__(self, net, dev):
                self.net, self.dev = net, dev
            def init_hidden(self, b):
                self.h = torch.zeros(b, 8, device=self.dev)
            def run(self, x):
                self.init_hidden(x.shape[0])
                self.h = self.h.to(self.dev)
                return self.net(x, self.h)
    """)),
]

# ------------------------------------------------------------- TW205 a mask reshaped in a chain before the move; a byte() cast
FIND += [
    Shape("TW205", "1 - eye mask reshaped by a chain of views under its own name, moved in forward", d("""
        import torch
        import torch.nn as nn
        class Comm(nn.Module):
            def __init__(self, n, d, gpu):
                super().__init__()
                self.n, self.d, self.gpu = n, d, gpu
            def forward(self, h):
                mask = 1 - torch.eye(self.n)
                mask = mask.view(-1, 1).repeat(1, self.d).view(self.n, -1)
                if self.gpu:
                    mask = mask.cuda()
                return h * mask
    """), 11),
    Shape("TW205", "a factory cast with .byte() before .cuda() in a forward pass", d("""
        import torch
        import torch.nn as nn
        class Cluster(nn.Module):
            def forward(self, seeds):
                free = torch.ones(seeds.shape[0]).byte().cuda()
                return seeds * free
    """), 5),
]
QUIET += [
    Shape("TW205", "look-alike: the reshaped mask is used on the host before the move", d("""
        import torch
        import torch.nn as nn
        class Comm(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.n, self.d = n, d
            def forward(self, h):
                mask = 1 - torch.eye(self.n)
                mask = mask.view(-1, 1).repeat(1, self.d)
                print(mask.sum())
                mask = mask.cuda()
                return h * mask
    """)),
]
