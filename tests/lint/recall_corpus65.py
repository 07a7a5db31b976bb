"""The recall corpus, round 22 part B (sets 33/34): false classes of TW207, TW104 and TW208 -
reads lint took for device reads of every step, evaluation it took for graph-recording runs, and an
input's saliency gradient it took for parameters' gradients. Each written in our own words and reduced
to its shape; all must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 first passes only
QUIET += [
    Shape("TW207", "look-alike: .cpu() under `if step == 0:` of the loop's own range index (a first-step sample)", d("""
        import torch
        import torch.nn.functional as F


        def fit(net, feats, labels, steps):
            net = net.cuda()
            feats, labels = feats.cuda(), labels.cuda()
            opt = torch.optim.Adam(net.parameters(), lr=1e-3)
            for step in range(steps):
                opt.zero_grad()
                out = net(feats)
                loss = F.cross_entropy(out, labels)
                loss.backward()
                opt.step()
                if step == 0:
                    first = out.cpu().numpy()
            return first
    """)),
    Shape("TW207", "look-alike: predictions sampled under `if i < 3:` of an enumerate index", d("""
        import torch
        import torch.nn.functional as F


        def train_epoch(model, loader, opt):
            samples = []
            for i, (x, y) in enumerate(loader):
                x, y = x.cuda(), y.cuda()
                out = model(x)
                if i < 3:
                    samples += out.detach().cpu().tolist()
                loss = F.nll_loss(out, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            return samples
    """)),
    Shape("TW207", "look-alike: writer.add_scalar of param_groups[0]['lr'] of an optimizer kept on a moved module (a float)", d("""
        import torch
        from torch.utils.tensorboard import SummaryWriter


        def optimise(mask_net, target, iters, writer):
            mask_net = mask_net.cuda()
            mask_net.opt = torch.optim.SGD(mask_net.parameters(), lr=0.1)
            target = target.cuda()
            opt = torch.optim.SGD(mask_net.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.StepLR(opt, 10)
            for it in range(iters):
                opt.zero_grad()
                loss = (mask_net(target) - target).pow(2).mean()
                loss.backward()
                opt.step()
                sched.step()
                writer.add_scalar("train/lr", mask_net.opt.param_groups[0]["lr"], it)
    """)),
]

# ------------------------------------------------------------- TW207 CPU-built tensors
QUIET += [
    Shape("TW207", "look-alike: an alignment solved on host data (FloatTensor of NumPy, a Parameter of torch.ones) logged and printed each round", d("""
        import numpy as np
        import torch


        class Matcher:
            def __init__(self, net, writer):
                self.net = net.cuda()
                self.writer = writer

            def score(self, x):
                return self.net(x.cuda())

            def match(self, a_np, b_np, rounds):
                a = torch.FloatTensor(a_np)
                b = torch.FloatTensor(b_np)
                perm = torch.nn.Parameter(torch.ones(a.shape[0], b.shape[0]) / a.shape[0])
                opt = torch.optim.Adam([perm], lr=0.05)
                for r in range(rounds):
                    opt.zero_grad()
                    err = torch.norm(perm @ b - a)
                    err.backward()
                    opt.step()
                    self.writer.add_scalar("match/err", err, r)
                    print("round", r, err)
                return perm
    """)),
]

# ------------------------------------------------------------- TW208 held input saliency
QUIET += [
    Shape("TW208", "look-alike: a method turns on self.graph.requires_grad, zeroes and returns its gradient", d("""
        import torch


        class Saliency:
            def __init__(self, model, graph, feats):
                self.model = model
                self.graph = graph
                self.feats = feats

            def gradients(self, target):
                self.graph.requires_grad = True
                self.feats.requires_grad = True
                if self.graph.grad is not None:
                    self.graph.grad.zero_()
                    self.feats.grad.zero_()
                out = self.model(self.feats, self.graph)
                score = out[0, target]
                score.backward()
                return self.graph.grad, self.feats.grad
    """)),
]

# ------------------------------------------------------------- TW104 autograd off for good
QUIET += [
    Shape("TW104", "look-alike: set_grad_enabled(False) in the predictor's __init__, predict() runs the model", d("""
        import torch


        class Predictor:
            def __init__(self, net_cls, weights):
                self.model = net_cls()
                self.model.load_state_dict(torch.load(weights, map_location="cpu"))
                self.model.eval()
                torch.set_grad_enabled(False)

            def predict(self, tokens):
                batch = torch.tensor([tokens])
                logits = self.model(batch)
                return logits.softmax(-1).numpy()
    """)),
]

# ------------------------------------------------------------- TW104 parameter-free front end
QUIET += [
    Shape("TW104", "look-alike: a torchaudio MelSpectrogram subclass put in eval mode and run to draw a spectrogram", d("""
        import torch
        import torch.nn as nn
        from torchaudio.transforms import MelSpectrogram, AmplitudeToDB


        class LogMel(MelSpectrogram):
            def __init__(self, rate=16000):
                super().__init__(sample_rate=rate, n_mels=64)
                self.to_db = AmplitudeToDB()

            def forward(self, wav):
                return self.to_db(super().forward(wav))


        class Plotter:
            def __init__(self, model):
                self.model = model
                self.model.eval()
                self.front = LogMel()
                self.front.eval()

            def picture(self, wav):
                spec = self.front(torch.tensor(wav).float())
                return spec.numpy()
    """)),
]
