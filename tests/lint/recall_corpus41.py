"""The recall corpus, round 16 part B (second tuner): TW207 classes the sets 21 and 22 (tuning sets
of round 16) still missed after recall_corpus38 - each written in our own words and reduced to its
shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 a model method that opens the step
# A GAN-style model splits its step in two methods: one zeroes the optimizers' gradients, computes
# the losses and hands them back with a log list of `.item()` values; another runs the backward
# passes. The trainer calls both every batch. The reads are reported in the method (one finding per
# read), not at the trainer's call.
_OPENER = d("""
    import torch
    import torch.nn as nn


    class Painter(nn.Module):
        def __init__(self, gen, disc, lr):
            super().__init__()
            self.gen, self.disc = gen, disc
            self.g_opt = torch.optim.Adam(gen.parameters(), lr=lr)
            self.d_opt = torch.optim.Adam(disc.parameters(), lr=lr)
            self.steps = 0

        def run_losses(self, img, hole):
            self.steps += 1
            self.g_opt.zero_grad()
            self.d_opt.zero_grad()
            fake = self.gen(img * (1 - hole))
            d_loss = 0
            d_loss += (self.disc(img).mean() - self.disc(fake.detach()).mean()).abs()
            adv_loss = -self.disc(fake).mean()
            rec_loss = (fake - img).abs().mean() * 10
            g_loss = adv_loss + rec_loss
            LOGS
            return fake, g_loss, d_loss, logs

        def apply(self, g_loss, d_loss):
            d_loss.backward()
            self.d_opt.step()
            g_loss.backward()
            self.g_opt.step()
""")
_OPENER_TRAIN = d("""
    import torch
    from painter import Painter
    from nets import Gen, Disc


    def train(loader, device):
        model = Painter(Gen(), Disc(), 1e-4).to(device)
        history = []
        for img, hole in loader:
            img, hole = img.to(device), hole.to(device)
            fake, g_loss, d_loss, logs = model.run_losses(img, hole)
            model.apply(g_loss, d_loss)
            history.append(logs)


    if __name__ == "__main__":
        train(make_loader(), torch.device("cuda"))
""")
_READS = 'logs = [("d", d_loss.item()), ("adv", adv_loss.item()), ("rec", rec_loss.item())]'
PROJECTS += [
    ProjectShape("TW207", ".item() of its losses in a model method that zeroes the gradients and returns the losses (reported at the reads)",
                 {"painter.py": _OPENER.replace("LOGS", _READS), "train.py": _OPENER_TRAIN},
                 (("painter.py", 23), ("painter.py", 23), ("painter.py", 23))),
    ProjectShape("TW207", "the same with one read per line into a dict",
                 {"painter.py": _OPENER.replace("LOGS", 'logs = {\n            "d": d_loss.item(),\n            "adv": adv_loss.item(),\n        }'),
                  "train.py": _OPENER_TRAIN},
                 (("painter.py", 24), ("painter.py", 25))),
    ProjectShape("TW207", "look-alike: the method keeps its logs on the device (.detach())",
                 {"painter.py": _OPENER.replace("LOGS", _READS.replace(".item()", ".detach()")), "train.py": _OPENER_TRAIN}),
    ProjectShape("TW207", "look-alike: the method reads its losses only every 100 steps",
                 {"painter.py": _OPENER.replace("LOGS", "logs = []\n        if self.steps % 100 == 0:\n            " + _READS.replace("logs = ", "logs = logs + ")),
                  "train.py": _OPENER_TRAIN}),
    ProjectShape("TW207", "look-alike: a CPU-only project",
                 {"painter.py": _OPENER.replace("LOGS", _READS), "train.py": _OPENER_TRAIN.replace(", device", "").replace(".to(device)", "").replace('torch.device("cuda")', "")}),
]

# ------------------------------------------------------------- TW207 the best-so-far test of a patience early stop
# A full-graph contrastive pretraining script compares each step's loss with the best so far,
# keeps a patience counter and breaks when it runs out (ruling R9: the algorithm's own stop needs
# the comparison on the host).
_PATIENCE = d("""
    import torch


    def pretrain(model, feats, adj, opt, patience, epochs):
        model = model.cuda()
        feats, adj = feats.cuda(), adj.cuda()
        wait, best = 0, 1e9
        for epoch in range(epochs):
            model.train()
            opt.zero_grad()
            loss = model.contrast(feats, adj)
            PRINT
            if loss < best:
                best = loss
                wait = 0
                torch.save(model.state_dict(), "best.pt")
            else:
                wait += 1
            STOP
            loss.backward()
            opt.step()
""")
QUIET += [
    Shape("TW207", "look-alike: the best-so-far test of a patience early stop (the algorithm's stop, R9)",
          _PATIENCE.replace("PRINT", "").replace("STOP", "if wait == patience:\n                break"), None),
    Shape("TW207", "look-alike: the same counting up a `bad_epochs` counter against a limit with >=",
          _PATIENCE.replace("PRINT", "").replace("wait", "bad_epochs").replace("STOP", "if bad_epochs >= patience:\n                break")
          .replace("loss < best", "best > loss"), None),
]

# ------------------------------------------------------------- TW207 gradients computed to be read (no training)
# A graph attack backpropagates a classifier's loss to the adjacency matrix and sorts the gradient
# with NumPy to choose the edges to flip. No optimizer
# step, no hand-written update anywhere: the gradient is what the loop is for (R1).
QUIET += [
    Shape("TW207", "look-alike: an attack loop reading the adjacency gradient for np.argsort (no optimizer anywhere)", d("""
        import numpy as np
        import torch


        def attack(model, graphs, labels, budget):
            model = model.cuda()
            flips = []
            for g, y in zip(graphs, labels):
                adj = g.adjacency().cuda().requires_grad_(True)
                model.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(g.features.cuda(), adj), y.cuda())
                loss.backward()
                grad = adj.grad.detach().cpu().numpy().ravel()
                flips.append(np.argsort(-grad)[:budget])
            return flips
    """), None),
]

# ------------------------------------------------------------- TW207 a log interval whose default is 1
# A dialogue-model fine-tuning script logs the loss under `(i + 1) % args.log_every == 0`, but the
# option defaults to 1 and nothing else in the project sets it: every run that does not pass the
# option reads the loss on every step.
_UNIT_LOG = d("""
    import argparse
    import torch


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, default=1e-4)
        parser.add_argument("--log_every", type=int, default=EVERY, help="steps between loss logs")
        args = parser.parse_args()
        model = build().cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
        for i, (ids, labels) in enumerate(loader()):
            loss = model(ids.cuda(), labels=labels.cuda()).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            if (i + 1) % args.log_every == 0:
                print("step", i + 1, "loss", loss.item())
""")
FIND += [
    Shape("TW207", "loss.item() under a modulo test of an option whose argparse default is 1", _UNIT_LOG.replace("EVERY", "1"), 18),
]
QUIET += [
    Shape("TW207", "look-alike: the same option defaulting to 50", _UNIT_LOG.replace("EVERY", "50"), None),
]
PROJECTS += [
    ProjectShape("TW207", "look-alike: default 1, but a launcher of the project passes --log_every",
                 {"train.py": _UNIT_LOG.replace("EVERY", "1"),
                  "launch.py": d("""
                      import subprocess
                      subprocess.run(["python", "train.py", "--log_every", "100"])
                  """)}),
]
