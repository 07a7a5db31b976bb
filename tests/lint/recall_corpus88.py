"""The recall corpus, round 27 part A (TW207): text formatted from a device tensor every step
(a progress bar's postfix or description, a log line), NumPy arrays of a project helper handed to
a converter (not device reads), and a private method named only in a comment of a module that a
registry loads by a computed name (dead code, R5). Written in our own words, reduced to shapes,
with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 text formatted from a device tensor
# A GAN or detector loop that shows the step's loss in its progress bar: '%.4f' % loss,
# '{:.5f}'.format(loss) and f"{loss:.3f}" call the tensor's __format__/__float__, a host read.
FIND += [
    Shape("TW207", "progress-bar postfix %-formatted from the step's loss", d("""
        import torch
        from tqdm import trange
        def fit(net, opt, batches, device, steps):
            bar = trange(steps)
            for step in bar:
                x = next(batches).to(device)
                loss = net(x).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                bar.set_postfix(d_loss='%.4f' % loss)
    """), 11),
    Shape("TW207", "progress-bar description .format()-ed from the losses a model returned", d("""
        import torch
        from tqdm import tqdm
        def epoch(model, loader, opt):
            bar = tqdm(loader)
            for i, batch in enumerate(bar):
                cls_l, box_l = model([batch["img"].cuda(), batch["boxes"].cuda()])
                total = cls_l.mean() + box_l.mean()
                opt.zero_grad()
                total.backward()
                opt.step()
                bar.set_description(
                    "iter {}: cls {:.5f} total {:.5f}".format(i, cls_l, total))
    """), 11),
    Shape("TW207", "an f-string of the loss handed to a logger every step", d("""
        import logging
        import torch
        def run(net, opt, loader):
            for step, (x, y) in enumerate(loader):
                x, y = x.cuda(), y.cuda()
                loss = torch.nn.functional.mse_loss(net(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                logging.info(f"step {step}: {loss:.3f}")
    """), 10),
]
QUIET += [
    Shape("TW207", "look-alike: the postfix formats the learning rate and the step counter (host numbers)", d("""
        import torch
        from tqdm import trange
        def fit(net, opt, batches, device, steps):
            bar = trange(steps)
            for step in bar:
                loss = net(next(batches).to(device)).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                lr = opt.param_groups[0]["lr"]
                bar.set_postfix(lr='%.5f' % lr, it="%d" % step)
    """)),
    Shape("TW207", "look-alike: the loss is formatted only every hundredth step", d("""
        import torch
        from tqdm import trange
        def fit(net, opt, batches, device, steps):
            bar = trange(steps)
            for step in bar:
                loss = net(next(batches).to(device)).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 100 == 0:
                    bar.set_description("loss {:.4f}".format(loss))
    """)),
]

# ------------------------------------------------------------- TW207 NumPy data of a project helper
# An actor-critic agent turns replay actions into one-hot NumPy arrays with a helper of its utils
# module and hands them to a converter that builds a CUDA tensor from .tolist(): host data going
# to the device, not a device value read on the host.
_UTILS = """
    import numpy as np
    import torch
    def one_hot(index, n):
        out = np.zeros((len(index), n))
        out[np.arange(len(index)), index] = 1.0
        return out
    def as_var(x, cuda=True):
        maker = torch.cuda.FloatTensor if cuda else torch.FloatTensor
        return maker(np.array(x, dtype=np.float64).tolist())
"""
_AGENT = """
    import torch
    from tools import one_hot, as_var
    class Agent:
        def __init__(self, actor, opt, memory, n):
            self.actor, self.opt, self.memory, self.n = actor, opt, memory, n
            self.actor.cuda()
        def learn(self):
            batch = self.memory.sample(64)
            states = as_var(batch.states)
            actions = one_hot(batch.actions, self.n)
            actions_t = as_var(actions)
            self.opt.zero_grad()
            loss = -(self.actor(states) * actions_t).sum(1).mean()
            loss.backward()
            self.opt.step()
"""
PROJECTS += [
    ProjectShape("TW207", "look-alike: a NumPy one-hot of a utils helper handed to a converter building a CUDA tensor", {
        "tools.py": d(_UTILS),
        "agent.py": d(_AGENT),
    }),
]

# ------------------------------------------------------------- TW207 a private method named only in a comment
# A recommender whose models a registry imports by a computed name (no file imports the model's
# module by name): a private edge-dropout method whose only call is commented out never runs (R5).
_REGISTRY = """
    import importlib
    def build(name, conf):
        module = importlib.import_module("models." + name)
        return getattr(module, name)(conf)
"""
_MODEL = """
    import torch
    import torch.nn as nn
    class LightGraph(nn.Module):
        def __init__(self, adj, dim):
            super().__init__()
            self.adj = adj
            self.emb = nn.Parameter(torch.randn(adj.shape[0], dim))
        def forward(self):
            # adj = self._edge_drop(self.adj, 0.2)
            return torch.sparse.mm(self.adj, self.emb)
        def _edge_drop(self, x, rate):
            noise = 1 - rate
            noise += torch.rand(x._nnz()).to(x.device)
            keep = torch.floor(noise).type(torch.bool)
            idx = x._indices()[:, keep]
            val = x._values()[keep]
            return torch.sparse_coo_tensor(idx, val, x.shape).to(x.device)
"""
_TRAIN = """
    import torch
    from registry import build
    def main(conf):
        model = build(conf["model"], conf).cuda()
        opt = torch.optim.Adam(model.parameters())
        for _ in range(conf["epochs"]):
            loss = model().pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    if __name__ == "__main__":
        main({"model": "LightGraph", "epochs": 10})
"""
PROJECTS += [
    ProjectShape("TW207", "look-alike: a private dropout method of a registry-loaded model, its only call commented out", {
        "registry.py": d(_REGISTRY),
        "models/__init__.py": "",
        "models/LightGraph.py": d(_MODEL),
        "train.py": d(_TRAIN),
    }),
]
