"""The recall corpus, round 32 part D: per-step GPU rules on scripts whose only device is a CPU
constant (set 56: an RL tutorial's PPO script with ``device = 'cpu'`` and no accelerator named
anywhere). Such a script copies nothing to a GPU and waits for none: TW205 and TW207 stay quiet.
Look-alikes that must still be found: a device picked by ``torch.cuda.is_available()``, by a
command-line option, or a CPU-constant module whose functions another module calls.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

_HELPERS = """
    import numpy as np
    import torch
    import torch.nn as nn
    class Actor(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(n, 2)
        def forward(self, x):
            return self.fc(x)
    def log_prob(batch, actor, device):
        out = actor(torch.tensor(np.array([b.obs for b in batch], dtype=np.float32)).to(device))
        return -((out - torch.zeros(len(batch), 2).to(device)) ** 2).sum(1)
"""

# ------------------------------------------------------------- TW205/TW207 a script that only runs on the CPU
QUIET += [
    Shape("TW205", "look-alike: a PPO tutorial whose device is the constant 'cpu' (helpers take it as a parameter)", d(_HELPERS + """
    device = 'cpu'
    if __name__ == '__main__':
        actor = Actor(3).to(device)
        opt = torch.optim.Adam(actor.parameters())
        for it in range(1000):
            batch = collect()
            loss = -log_prob(batch, actor, device).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)),
    Shape("TW207", "look-alike: float() of the loss every step in a script on torch.device('cpu')", d(_HELPERS + """
    DEVICE = torch.device('cpu')
    def train(actor, opt, steps):
        for step in range(steps):
            batch = collect()
            loss = -log_prob(batch, actor, DEVICE).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(step, float(loss))
    if __name__ == '__main__':
        actor = Actor(4).to(DEVICE)
        train(actor, torch.optim.SGD(actor.parameters(), lr=0.1), 500)
    """)),
    Shape("TW205", "look-alike: zeros made with device='cpu' constant and copied in a CPU-only loop", d("""
        import torch
        dev = 'cpu'
        def run(model, opt, data):
            for x, y in data:
                h = torch.zeros(x.size(0), 8).to(dev)
                loss = ((model(x.to(dev), h) - y.to(dev)) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
]
FIND += [
    Shape("TW205", "a device picked by torch.cuda.is_available(), the same PPO helpers", d(_HELPERS + """
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    if __name__ == '__main__':
        actor = Actor(3).to(device)
        opt = torch.optim.Adam(actor.parameters())
        for it in range(1000):
            batch = collect()
            loss = -log_prob(batch, actor, device).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """), 12),
    Shape("TW207", "a CPU default that a --device option overrides", d("""
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument('--device', default='cpu')
        args = parser.parse_args()
        def train(model, opt, data):
            for x, y in data:
                loss = ((model(x.to(args.device)) - y.to(args.device)) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                print(loss.item())
    """), 12),
]
PROJECTS += [
    ProjectShape("TW205", "a module with a 'cpu' constant whose helper a GPU training script imports", {
        "helpers.py": d("""
            import torch
            device = 'cpu'
            def noise(x):
                return x + torch.randn(x.shape).to(device)
            def fresh(n, dev=device):
                return torch.zeros(n, 4).to(dev)
        """),
        "train.py": d("""
            import torch
            from helpers import fresh
            def main(model, opt, data):
                model.cuda()
                for x in data:
                    h = fresh(x.size(0), 'cuda')
                    loss = model(x.cuda(), h).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            if __name__ == '__main__':
                main(None, None, [])
        """),
    }, expect=(("helpers.py", 6),)),
]
