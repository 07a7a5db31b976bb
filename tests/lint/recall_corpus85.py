"""The recall corpus, round 26 part B (TW207): classes the tuning sets of round 26 (sets 41 and 42)
showed - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 tests of NumPy values in a loss's forward
# An online-hard-example loss copies its inputs to NumPy first and then does its bookkeeping
# there: sums and comparisons of those arrays are host numbers, no device read. The copies
# themselves are still reported.
QUIET += [
    Shape("TW207", "look-alike: a loss module testing the sum of a NumPy array made from .cpu().numpy()", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class HardPixelLoss(nn.Module):
            def __init__(self, ignore=255, keep=1000):
                super().__init__()
                self.ignore, self.keep = ignore, keep
            def forward(self, logits, labels):
                flat = labels.detach().cpu().numpy().reshape(-1)
                usable = flat != self.ignore
                count = usable.sum()
                if count < self.keep:
                    return nn.functional.cross_entropy(logits, labels, ignore_index=self.ignore)
                return nn.functional.cross_entropy(logits, labels)
        def fit(net, data, opt):
            crit = HardPixelLoss()
            for x, y in data:
                x, y = x.cuda(), y.cuda()
                loss = crit(net(x), y)
                opt.zero_grad(); loss.backward(); opt.step()
    """)),
    Shape("TW207", "look-alike: a NumPy function's result tested in a module's forward", d("""
        import numpy as np
        import torch.nn as nn
        class Picker(nn.Module):
            def forward(self, scores, target):
                arr = np.asarray(target.detach().cpu().numpy())
                picked = np.where(arr > 0)[0]
                if len(picked) > 0 and arr.max() > 3:
                    return scores.mean() * 2
                return scores.mean()
        def fit(net, data, opt):
            head = Picker()
            for x, y in data:
                loss = head(net(x.cuda()), y.cuda())
                opt.zero_grad(); loss.backward(); opt.step()
    """)),
]

# ------------------------------------------------------------- TW207 outputs unpacked from a name bound to the model call
# A training loop keeps the model's whole output first (`out = model(x)`) and unpacks it on the
# next line: the parts are the model's outputs all the same.
FIND += [
    Shape("TW207", "a loss term of a dict unpacked from a name bound to the model call, read with .item()", d("""
        import torch
        def fit(vae, data, opt, dev):
            history = []
            for img in data:
                img = img.to(dev)
                result = vae(img)
                recon, latent, terms = result
                loss = ((recon - img) ** 2).mean() + terms["commit"]
                history.append(terms["commit"].item())
                opt.zero_grad(); loss.backward(); opt.step()
    """), 9),
    Shape("TW207", "the mean of an output unpacked from a kept forward result, read every step", d("""
        import torch
        def train_epoch(net, batches, optim, device):
            for xb, yb in batches:
                xb, yb = xb.to(device), yb.to(device)
                outputs = net(xb)
                logits, feats = outputs
                loss = torch.nn.functional.cross_entropy(logits, yb)
                optim.zero_grad(); loss.backward(); optim.step()
                print("feature norm", feats.norm().item())
    """), 9),
]
QUIET += [
    Shape("TW207", "look-alike: a kept result of a helper handed the host labels, unpacked and read", d("""
        import torch
        def class_counts(labels):
            return (labels == 1).sum(), (labels == 0).sum()
        def fit(net, data, opt, dev):
            for x, y in data:
                res = class_counts(y)
                pos, neg = res
                xd, yd = x.to(dev), y.to(dev)
                loss = torch.nn.functional.cross_entropy(net(xd), yd)
                opt.zero_grad(); loss.backward(); opt.step()
                print(pos.item(), neg.item())
    """)),
    Shape("TW207", "look-alike: the parts of a kept model output read under a logging interval", d("""
        import torch
        def fit(net, data, opt, dev):
            for step, (x, y) in enumerate(data):
                x, y = x.to(dev), y.to(dev)
                out = net(x)
                logits, aux = out
                loss = torch.nn.functional.cross_entropy(logits, y) + aux.mean()
                opt.zero_grad(); loss.backward(); opt.step()
                if step % 200 == 0:
                    print(aux.mean().item())
    """)),
]

# ------------------------------------------------------------- TW207 a mask named for what it marks, cast to bool
# A masked-autoencoder loop moves the patch mask to the device and casts it with .to(torch.bool)
# (or .bool()); its name says nothing of a mask, the cast does. Selecting with it sizes the result
# on the host. Also the einops reshapes of device images stay on the device.
FIND += [
    Shape("TW207", "an einops-reshaped target selected with a mask cast by .to(torch.bool)", d("""
        import torch
        from einops import rearrange
        def pretrain(model, loader, opt, device):
            for imgs, hidden in loader:
                imgs = imgs.to(device, non_blocking=True)
                hidden = hidden.to(device, non_blocking=True).flatten(1).to(torch.bool)
                with torch.no_grad():
                    patches = rearrange(imgs, "b c (h p) (w q) -> b (h w) (p q c)", p=16, q=16)
                    target = patches[hidden]
                loss = ((model(imgs, hidden) - target) ** 2).mean()
                opt.zero_grad(); loss.backward(); opt.step()
    """), 9),
    Shape("TW207", "a device tensor selected with a keep-list cast by .bool()", d("""
        import torch
        def fit(net, loader, opt, dev):
            for x, keep in loader:
                x = x.to(dev)
                keep = keep.to(dev).bool()
                emb = net(x)
                loss = emb[keep].pow(2).mean()
                opt.zero_grad(); loss.backward(); opt.step()
    """), 7),
]
QUIET += [
    Shape("TW207", "look-alike: a host batch selected with a host mask cast to bool before the move", d("""
        import torch
        def fit(net, loader, opt, dev):
            for x, keep in loader:
                chosen = keep.flatten(1).to(torch.bool)
                part = x[chosen]
                loss = net(part.to(dev)).mean()
                opt.zero_grad(); loss.backward(); opt.step()
    """)),
    Shape("TW207", "look-alike: a bool-cast device mask used only as weights (no selection)", d("""
        import torch
        def fit(net, loader, opt, dev):
            for x, keep in loader:
                x = x.to(dev)
                keep = keep.to(dev).to(torch.bool)
                loss = (net(x) * keep.float()).sum() / keep.numel()
                opt.zero_grad(); loss.backward(); opt.step()
    """)),
]
