"""The recall corpus, round 31 part B: TW207's host casts in the losses of every training step
(``float(loss_l2)`` in a trainer's loss method, ``float(sim)`` per sample in a criterion's
``forward``: the same read as ``.item()``) and a batch timer's ``torch.cuda.synchronize()`` whose
only reads after it run under a log interval. Each written in our own words and reduced to its
shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 float() of the loss terms in a trainer's loss method
# An image-translation trainer sums weighted loss terms in a method (`compute_loss`), each under a
# test of its weight option, and records every term in a dict with `float(term)` for the logs; the
# training loop calls it every step. (Seen in an encoder-for-GAN-inversion coach, set 49; the same
# logging dict recurs in style-transfer and super-resolution trainers.)
_TRAINER = d("""
    import torch
    import torch.nn.functional as F
    class Trainer:
        def __init__(self, opts, net, percept):
            self.opts = opts
            self.net = net.to("cuda")
            self.percept = percept
            self.opt = torch.optim.Adam(net.parameters())
        def compute_loss(self, src, tgt, out):
            logs = {}
            total = 0.0
            if self.opts.mse_weight > 0:
                mse_term = F.mse_loss(out, tgt)
                logs["mse"] = float(mse_term)
                total = mse_term * self.opts.mse_weight
            if self.opts.percept_weight > 0 and self.opts.use_percept:
                percept_loss = self.percept(out, tgt)
                logs["percept"] = float(percept_loss)
                total += percept_loss * self.opts.percept_weight
            logs["total"] = float(total)
            return total, logs
        def fit(self, loader):
            for src, tgt in loader:
                src, tgt = src.to("cuda"), tgt.to("cuda")
                out = self.net(src)
                total, logs = self.compute_loss(src, tgt, out)
                self.opt.zero_grad()
                total.backward()
                self.opt.step()
""")
FIND += [
    Shape("TW207", "float() of a weighted loss term in a trainer's loss method, under its weight option", _TRAINER, 14),
    Shape("TW207", "float() of a second loss term, under two option tests", _TRAINER, 18),
    Shape("TW207", "float() of the summed loss (0.0 plus the terms) at the end of the loss method", _TRAINER, 20),
]

# ------------------------------------------------------------- TW207 float() per sample in a criterion's forward
# An identity or contrastive criterion loops over the batch, takes a dot product of feature rows
# per sample, and keeps `float(sim)` of each for a log list (and a host improvement score); the
# training step builds the criterion and calls it every step. (Seen in two criteria of set 49;
# per-sample logging in a loss also appears in face-recognition and retrieval losses.)
_CRITERION = d("""
    import torch
    import torch.nn as nn
    class FeatureMatchLoss(nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder
        def forward(self, pred, real):
            fp, fr = self.encoder(pred), self.encoder(real).detach()
            total = 0
            records = []
            for i in range(pred.shape[0]):
                sim = fp[i].dot(fr[i])
                records.append({"sim": float(sim)})
                total += 1 - sim
            return total / pred.shape[0], records
    def train(net, enc, loader, opt):
        crit = FeatureMatchLoss(enc).cuda()
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            loss, records = crit(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
FIND += [
    Shape("TW207", "float() of a per-sample dot product of features in a loss module's forward", _CRITERION, 13),
]

# ------------------------------------------------------------- TW207 a batch timer's synchronize before log-interval reads
# A training loop synchronizes after the optimizer step on every pass only to time the batch, and
# reads losses or metrics on the host only every N steps (`if step % 20 == 0:`). The synchronize
# stalls every step; the periodic reads do not excuse it. (Seen in a video-anomaly trainer, set 46,
# and a vision-transformer ImageNet script, set 50.)
FIND += [
    Shape("TW207", "synchronize for a batch timer, host reads only under a log interval after it", d("""
        import time
        import torch
        def train(net, loader, opt, meter):
            end = time.time()
            for step, (x, y) in enumerate(loader):
                loss = torch.nn.functional.cross_entropy(net(x.cuda()), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
                torch.cuda.synchronize()
                meter.update(time.time() - end)
                end = time.time()
                if step % 20 == 0:
                    print(step, loss.item(), meter.avg)
        """), 10),
    Shape("TW207", "synchronize for an iteration time, a tensorboard write under a modulo test after it", d("""
        import time
        import torch
        def run(gen, disc, loader, opt_g, writer):
            for it, batch in enumerate(loader):
                t0 = time.time()
                fake = gen(batch.cuda())
                g_loss = disc(fake).mean()
                opt_g.zero_grad()
                g_loss.backward()
                opt_g.step()
                torch.cuda.synchronize()
                took = time.time() - t0
                if it % 100 == 0:
                    writer.add_scalar("g", g_loss.item(), it)
                    writer.add_scalar("time", took, it)
        """), 11),
]
QUIET += [
    Shape("TW207", "look-alike: synchronize in a benchmark that appends step times, reads at intervals", d("""
        import time
        import torch
        def benchmark_step(net, loader, opt):
            times = []
            for step, (x, y) in enumerate(loader):
                t0 = time.perf_counter()
                loss = torch.nn.functional.cross_entropy(net(x.cuda()), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
                if step % 50 == 0:
                    print(loss.item())
            return times
        """)),
]

# ------------------------------------------------------------- look-alikes of the casts
QUIET += [
    Shape("TW207", "look-alike: float() of host numbers in a loss method (a count, a weight, a running sum of casts)", d("""
        import torch
        import torch.nn.functional as F
        class Trainer:
            def __init__(self, opts, net):
                self.opts = opts
                self.net = net.to("cuda")
                self.opt = torch.optim.Adam(net.parameters())
            def compute_loss(self, out, tgt):
                n_items = len(tgt)
                weight_loss = self.opts.mse_weight * 2
                logged_loss = 0.0
                logged_loss += float(n_items)
                loss = F.mse_loss(out, tgt) * weight_loss
                return loss, {"n": float(n_items), "w": float(weight_loss), "s": float(logged_loss)}
            def fit(self, loader):
                for src, tgt in loader:
                    out = self.net(src.to("cuda"))
                    loss, logs = self.compute_loss(out, tgt.to("cuda"))
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
        """)),
    Shape("TW207", "look-alike: float() of a loss term only under a verbose switch or a debug option", d("""
        import torch
        import torch.nn.functional as F
        class Trainer:
            def __init__(self, opts, net):
                self.opts = opts
                self.net = net.to("cuda")
                self.opt = torch.optim.Adam(net.parameters())
            def compute_loss(self, out, tgt):
                logs = {}
                mse_loss = F.mse_loss(out, tgt)
                if self.opts.verbose:
                    logs["mse"] = float(mse_loss)
                if self.opts.debug_losses:
                    print(float(mse_loss))
                return mse_loss, logs
            def fit(self, loader):
                for src, tgt in loader:
                    out = self.net(src.to("cuda"))
                    loss, logs = self.compute_loss(out, tgt.to("cuda"))
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
        """)),
    Shape("TW207", "look-alike: float() of a score a loss function hands back beside its loss (may be a host number)", d("""
        import torch
        import torch.nn.functional as F
        class Trainer:
            def __init__(self, net, crit):
                self.net = net.to("cuda")
                self.crit = crit
                self.opt = torch.optim.Adam(net.parameters())
            def compute_loss(self, out, tgt):
                main_loss, gain, notes = self.crit(out, tgt)
                return main_loss, {"gain": float(gain)}
            def fit(self, loader):
                for src, tgt in loader:
                    out = self.net(src.to("cuda"))
                    loss, logs = self.compute_loss(out, tgt.to("cuda"))
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
        """)),
    Shape("TW207", "look-alike: float() of a loss in a loss method only the evaluation calls", d("""
        import torch
        import torch.nn.functional as F
        class Trainer:
            def __init__(self, net):
                self.net = net.to("cuda")
                self.opt = torch.optim.Adam(net.parameters())
            def eval_loss(self, out, tgt):
                val_loss = F.mse_loss(out, tgt)
                return {"val": float(val_loss)}
            def validate(self, loader):
                with torch.no_grad():
                    return [self.eval_loss(self.net(x.to("cuda")), y.to("cuda")) for x, y in loader]
            def fit(self, loader):
                for src, tgt in loader:
                    loss = F.mse_loss(self.net(src.to("cuda")), tgt.to("cuda"))
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
        """)),
    Shape("TW207", "look-alike: float() of a NumPy value per sample in a criterion's forward", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class MarginLoss(nn.Module):
            def __init__(self, margins):
                super().__init__()
                self.margins = margins
            def forward(self, pred, real):
                total = 0
                for i in range(pred.shape[0]):
                    m = np.float32(self.margins[i])
                    total += (pred[i] - real[i]).abs().mean() * float(m)
                return total
        def train(net, loader, opt):
            crit = MarginLoss([0.1, 0.2]).cuda()
            for x, y in loader:
                loss = crit(net(x.cuda()), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
        """)),
]
QUIET += [
    Shape("TW207", "look-alike: a loss function divides by float() of the batch size it took from a shape", d("""
        import torch
        import torch.nn.functional as F
        def vae_loss(recon, x, mu, logvar):
            n = x.size(0)
            bce = F.binary_cross_entropy(recon, x, reduction="sum")
            kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
            loss = bce + kl
            loss /= float(n)
            return loss
        def train(net, loader, opt):
            for x, _ in loader:
                x = x.cuda()
                recon, mu, logvar = net(x)
                loss = vae_loss(recon, x, mu, logvar)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """)),
]
