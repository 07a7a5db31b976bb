"""The recall corpus, round 21 part A: classes sets 31 and 32 showed for TW207 - each written in our
own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 NaN guards on the step's result
# A learner maps a device move over a nested batch, hands it to a step method that returns the
# loss, and checks the loss for NaN every step: the test reads the tensor on the host.
FIND += [
    Shape("TW207", "NaN guard on the loss a step method hands back, batch mapped to the device by a lambda", d("""
        import torch
        def deep_map(obj, fn):
            if isinstance(obj, dict):
                return {k: deep_map(v, fn) for k, v in obj.items()}
            return fn(obj)
        class Learner:
            def fit(self, data):
                dev = torch.device("cuda")
                for batch in data:
                    batch = deep_map(batch, lambda t: t.to(dev) if torch.is_tensor(t) else t)
                    loss = self.train_step(batch)
                    if torch.isnan(loss).any():
                        raise ValueError("diverged")
            def train_step(self, batch):
                self.opt.zero_grad()
                loss = ((self.net(batch["wave"]) - batch["target"]) ** 2).mean()
                loss.backward()
                self.opt.step()
                return loss
    """), 12),
    Shape("TW207", "isfinite/isnan method guard on a penalty a helper computes and the backward pass sums", d("""
        import torch
        def smoothness(model, x):
            return sum(p.pow(2).sum() for p in model.parameters()) * x.new_ones(())
        def train(model, loader, opt, crit):
            model.cuda()
            for x, y in loader:
                x = x.cuda()
                rec = crit(model(x), y.cuda())
                pen = smoothness(model, x)
                total = rec + 0.1 * pen
                if pen.isnan().any() or pen.isinf().any():
                    print("bad penalty")
                opt.zero_grad()
                total.backward()
                opt.step()
    """), 11),
    Shape("TW207", "input check: NaN test of a batch field every step after a tree-map to the GPU", d("""
        import torch
        from torch.utils._pytree import tree_map
        def run(model, loader, opt):
            for batch in loader:
                batch = tree_map(lambda t: t.cuda(), batch)
                if torch.isnan(batch["feats"]).any():
                    raise RuntimeError("nan in inputs")
                loss = model(batch["feats"]).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 6),
]
QUIET += [
    Shape("TW207", "look-alike: the NaN guard only every log interval", d("""
        import torch
        class Learner:
            def fit(self, data):
                for i, batch in enumerate(data):
                    batch = {k: v.cuda() for k, v in batch.items()}
                    loss = self.train_step(batch)
                    if i % 200 == 0 and torch.isnan(loss).any():
                        raise ValueError("diverged")
            def train_step(self, batch):
                self.opt.zero_grad()
                loss = self.net(batch["x"]).mean()
                loss.backward()
                self.opt.step()
                return loss
    """)),
    Shape("TW207", "look-alike: math.isnan of a float the step already hands back (read once, where it is made)", d("""
        import math
        def train_epoch(model, loader, opt, losses):
            for x in loader:
                value = one_step(model, x.cuda(), opt, losses)
                if math.isnan(value):
                    break
        def one_step(model, x, opt, losses):
            loss = model(x).mean()
            opt.zero_grad(); loss.backward(); opt.step()
            losses.append(loss.detach())
            return 0.0
    """)),
    Shape("TW207", "look-alike: a lambda map that moves the batch to the CPU, then a NaN test (a CPU tensor)", d("""
        import torch
        def apply(obj, fn):
            return {k: fn(v) for k, v in obj.items()}
        def train(model, loader, opt):
            for batch in loader:
                batch = apply(batch, lambda t: t.to("cpu"))
                if torch.isnan(batch["x"]).any():
                    continue
                loss = model(batch["x"]).mean()
                opt.zero_grad(); loss.backward(); opt.step()
    """)),
]

# ------------------------------------------------------------- TW207 tensorboard_logger's log_value
# tensorboard_logger.log_value(name, value, step) turns its value into a float: a 0-dim CUDA
# statistic of the step handed to it every step is a host read.
FIND += [
    Shape("TW207", "log_value of a mean of a model output every step (function form)", d("""
        import torch
        from tensorboard_logger import configure, log_value
        def train(vae, loader, opt, step=0):
            configure("runs/x")
            for x in loader:
                x = x.cuda()
                recon, mu, logvar = vae(x)
                loss = ((recon - x) ** 2).mean() - 0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
                opt.zero_grad(); loss.backward(); opt.step()
                spread = torch.mean(logvar.mul(0.5).exp_().data)
                log_value("latent_spread", spread, step)
                step += 1
    """), 11),
    Shape("TW207", "Logger(...).log_value of the loss every step (method form)", d("""
        from tensorboard_logger import Logger
        def train(net, loader, opt, crit):
            board = Logger("runs/y")
            for i, (x, y) in enumerate(loader):
                loss = crit(net(x.cuda()), y.cuda())
                opt.zero_grad(); loss.backward(); opt.step()
                board.log_value("loss", loss, i)
    """), 7),
]
QUIET += [
    Shape("TW207", "look-alike: a project's own log_value that keeps the tensors in a list", d("""
        history = []
        def log_value(name, value, step):
            history.append((name, value, step))
        def train(net, loader, opt, crit):
            for i, (x, y) in enumerate(loader):
                loss = crit(net(x.cuda()), y.cuda())
                opt.zero_grad(); loss.backward(); opt.step()
                log_value("loss", loss.detach(), i)
    """)),
    Shape("TW207", "look-alike: log_value of the learning rate (a Python number) every step", d("""
        from tensorboard_logger import log_value
        def train(net, loader, opt, crit):
            for i, (x, y) in enumerate(loader):
                loss = crit(net(x.cuda()), y.cuda())
                opt.zero_grad(); loss.backward(); opt.step()
                log_value("lr", opt.param_groups[0]["lr"], i)
    """)),
]

# ------------------------------------------------------------- TW207 a reshaped mask as the index
FIND += [
    Shape("TW207", "flattened logits selected by a flattened padding mask every step", d("""
        def train(model, loader, opt, crit, pad, device):
            for seq in loader:
                seq = seq.to(device)
                inp, tgt = seq[:-1], seq[1:]
                logits = model(inp)
                keep = tgt != pad
                loss = crit(logits.flatten(0, 1)[keep.reshape(-1)], tgt.reshape(-1)[keep.reshape(-1)])
                opt.zero_grad(); loss.backward(); opt.step()
    """), 7),
]
QUIET += [
    Shape("TW207", "look-alike: a reshaped mask over host labels, before anything is moved", d("""
        def train(model, loader, opt, crit, pad, device):
            for seq, labels in loader:
                keep = labels != pad
                labels = labels.reshape(-1)[keep.view(-1)]
                loss = crit(model(seq.to(device)), labels.to(device))
                opt.zero_grad(); loss.backward(); opt.step()
    """)),
]

# ------------------------------------------------------------- TW207 a forward-pass helper's reads
# A module-level helper runs the forward and the loss and hands the loss back first; the training
# loop backpropagates it. Its .item() of a count runs every step, like a loss function's.
FIND += [
    Shape("TW207", "count of correct answers read with .item() in a forward helper that moves the batch itself; "
          "the loop backpropagates the loss it hands back", d("""
        import torch.nn.functional as F
        def forward_pass(model, batch, device):
            batch = {k: v.to(device) for k, v in batch.items()}
            q, c = model(batch["q"], batch["c"])
            scores = q @ c.t()
            loss = F.cross_entropy(scores, batch["pos"])
            hits = (scores.argmax(1) == batch["pos"]).sum().item()
            return loss, hits
        def train(model, loader, opt, device):
            for batch in loader:
                loss, hits = forward_pass(model, batch, device)
                loss.backward()
                opt.step(); opt.zero_grad()
    """), 7),
]
QUIET += [
    Shape("TW207", "look-alike: the same helper called only by an evaluation loop under no_grad", d("""
        import torch
        import torch.nn.functional as F
        def forward_pass(model, batch):
            q, c = model(batch["q"], batch["c"])
            scores = q @ c.t()
            loss = F.cross_entropy(scores, batch["pos"])
            hits = (scores.argmax(1) == batch["pos"]).sum().item()
            return loss, hits
        def validate(model, loader, device):
            total = 0
            with torch.no_grad():
                for batch in loader:
                    batch = {k: v.to(device) for k, v in batch.items()}
                    loss, hits = forward_pass(model, batch)
                    total += hits
            return total
    """)),
]

# ------------------------------------------------------------- TW207 a host transform feeding a metric
# Copying the output to the host to un-normalise it for an error meter every step: the normaliser's
# method only transforms, the metric consumes it - no algorithm needs the value on the host.
FIND += [
    Shape("TW207", "output copied to the host, denormalised by a scaler object and handed to an error metric", d("""
        import torch
        def abs_err(pred, y):
            return torch.mean(torch.abs(pred - y))
        def train(model, loader, opt, crit, scaler, meter):
            for x, y in loader:
                out = model(x.cuda())
                loss = crit(out, scaler.norm(y).cuda())
                err = abs_err(scaler.denorm(out.detach().cpu()), y)
                meter.update(err, y.size(0))
                opt.zero_grad(); loss.backward(); opt.step()
    """), 8),
]
QUIET += [
    Shape("TW207", "look-alike: TD errors copied to the host, transformed, then handed to a replay tree's priorities", d("""
        def learn(q_net, memory, opt, device, steps):
            for _ in range(steps):
                idx, obs, target = memory.sample(32)
                td = q_net(obs.to(device)) - target.to(device)
                loss = (td ** 2).mean()
                opt.zero_grad(); loss.backward(); opt.step()
                memory.update_priorities(idx, memory.shape_priorities(td.detach().abs().cpu().numpy()))
    """)),
]
