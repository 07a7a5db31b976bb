"""The recall corpus, round 17 part B: TW207 classes the sets 23 and 24 (tuning sets of round 17)
showed, and what sets 21 and 22 still missed - each written in our own words and reduced to its
shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 a loop of repeated steps per batch
# Free adversarial training (and other "replay" schemes) repeats the update a few times on each
# batch: `for _ in range(replays)` inside the loop over the loader. The loop over the data runs
# steps on every pass, so its per-batch reads after the repeat loop wait for the GPU every batch.
FIND += [
    Shape("TW207", ".item() of the loss after a repeat loop of updates on the batch", d("""
        import torch
        import torch.nn.functional as F
        def fit(model, loader, opt, replays):
            total = 0.0
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                for _ in range(replays):
                    loss = F.cross_entropy(model(x), y)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                total += loss.item()
            return total
    """), 12),
    Shape("TW207", "an accuracy count read per batch of enumerate(loader) around a repeat loop", d("""
        import torch
        def train_epoch(net, train_loader, optimizer, crit, k):
            hits = 0
            for step, (images, labels) in enumerate(train_loader):
                images, labels = images.cuda(), labels.cuda()
                for _ in range(k):
                    out = net(images)
                    loss = crit(out, labels)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                hits += (out.argmax(1) == labels).sum().item()
            return hits
    """), 12),
]
QUIET += [
    Shape("TW207", "look-alike: an epoch loop around a loop of steps, read once per epoch", d("""
        import torch
        import torch.nn.functional as F
        def fit(model, batches, opt, epochs, iters):
            for epoch in range(epochs):
                for _ in range(iters):
                    x, y = next(batches)
                    loss = F.cross_entropy(model(x.cuda()), y.cuda())
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                print(epoch, loss.item())
    """)),
    Shape("TW207", "look-alike: an attack's gradient loop over a test loader (no optimizer step)", d("""
        import torch
        import torch.nn.functional as F
        def robust_accuracy(model, test_loader, eps, iters):
            correct = 0
            for x, y in test_loader:
                x, y = x.cuda(), y.cuda()
                delta = torch.zeros_like(x, requires_grad=True)
                for _ in range(iters):
                    loss = F.cross_entropy(model(x + delta), y)
                    loss.backward()
                    delta.data = (delta + eps * delta.grad.sign()).clamp(-eps, eps)
                    delta.grad.zero_()
                correct += (model(x + delta).argmax(1) == y).sum().item()
            return correct
    """)),
]

# ------------------------------------------------------------- TW207 set-up before a function's training loop
# A training function parses the GPU list from its config (`[int(i) for i in gpus]` over the
# pieces of a string) before its loop, and calls `net.train(True)` in the loop: that method call
# is no call of the module's function `train`, so the set-up runs once, and strings are no tensors.
QUIET += [
    Shape("TW207", "look-alike: int() over the pieces of a GPU-list string before the training loop", d("""
        import torch
        import torch.nn as nn
        def train(config, net, loader, opt):
            net = net.cuda()
            gpus = config["gpu"].split(",")
            if len(gpus) > 1:
                net = nn.DataParallel(net, device_ids=[int(i) for i in gpus])
            for it in range(config["iterations"]):
                net.train(True)
                x, y = next(loader)
                loss = nn.functional.cross_entropy(net(x.cuda()), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
]

# ------------------------------------------------------------- TW207 reads under a parameter the call leaves off
# A loss function of a module of losses weights its terms only when it is handed weights
# (`if weights is not None:` ... `.item()`). The training step calls it with the weights in one
# mode and with `None` (or nothing) in another: the reads are found in the loss, for the call that
# hands the weights; the call that hands `None` never runs them.
_ADV_LOSS = d("""
    import torch
    import torch.nn.functional as F


    def domain_adv(features, disc, weights=None):
        logits = disc(features)
        target = torch.zeros_like(logits)
        if weights is not None:
            w = weights / torch.sum(weights).detach().item()
            return (w * F.binary_cross_entropy_with_logits(logits, target, reduction="none")).sum()
        return F.binary_cross_entropy_with_logits(logits, target)
""")
_ADV_TRAIN = d("""
    import torch
    import losses


    def run(net, disc, loader, opt, use_weights):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            feats, out = net(x)
            w = torch.softmax(out, 1).max(1)[0]
            if use_weights:
                adv = losses.domain_adv(feats, disc, WEIGHTED)
            else:
                adv = losses.domain_adv(feats, disc, None)
            loss = torch.nn.functional.cross_entropy(out, y) + adv
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW207", "a loss of losses.py reads its weights under `if weights is not None:`; one call hands them",
                 {"losses.py": _ADV_LOSS, "train.py": _ADV_TRAIN.replace("WEIGHTED", "w")},
                 (("losses.py", 9), ("train.py", 11))),
    ProjectShape("TW207", "the same with the weights passed by keyword",
                 {"losses.py": _ADV_LOSS, "train.py": _ADV_TRAIN.replace("WEIGHTED", "weights=w")},
                 (("losses.py", 9), ("train.py", 11))),
    ProjectShape("TW207", "look-alike: every call hands None or leaves the weights to their default",
                 {"losses.py": _ADV_LOSS, "train.py": _ADV_TRAIN.replace("feats, disc, WEIGHTED", "feats, disc")}),
    ProjectShape("TW207", "look-alike: weights=None passed by keyword",
                 {"losses.py": _ADV_LOSS, "train.py": _ADV_TRAIN.replace("WEIGHTED", "weights=None")}),
]

# ------------------------------------------------------------- TW207 the branch opposite to the step
# One function serves training, validation and inference: `if phase != "inference":` runs the
# forward, the losses and (for training) the step; the `else` branch runs the network for
# inference and copies its outputs to the host. That branch never runs on a training step.
_PHASES = d("""
    import torch
    def make_step(net, optimizer, phase, imgs, heatmaps):
        imgs, heatmaps = imgs.cuda(), heatmaps.cuda()
        if phase != "inference":
            loss = ((net(imgs) - heatmaps) ** 2).mean()
            if phase == "train":
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            LOSSREAD
        else:
            preds = net(imgs)
            return preds.detach().cpu().numpy()
""")
QUIET += [
    Shape("TW207", "look-alike: the inference branch (the `else` of the branch that steps) copies outputs to the host",
          _PHASES.replace("LOSSREAD", "return loss.detach()")),
]

# ------------------------------------------------------------- TW207 a tensor another module puts on the device at import
# A utilities module builds its normalisation constants on the GPU at import (`std =
# torch.tensor(...).view(3, 1, 1).cuda()`); the training script imports them by name, scales its
# attack radius by them and reads one entry per channel with `.item()` every step.
_CONSTANTS = d("""
    import torch
    cifar_std = (0.247, 0.243, 0.261)
    std = torch.tensor(cifar_std).view(3, 1, 1)MOVE
""")
_FGSM = d("""
    import torch
    import torch.nn.functional as F
    from utils import std
    def train(model, loader, opt, args):
        epsilon = (args.epsilon / 255.) / std
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            delta = torch.zeros_like(x)
            for j in range(len(epsilon)):
                delta[:, j, :, :].uniform_(-epsilon[j][0][0].item(), epsilon[j][0][0].item())
            loss = F.cross_entropy(model(x + delta), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW207", "per-channel .item() of a radius scaled by a CUDA constant imported from utils",
                 {"utils.py": _CONSTANTS.replace("MOVE", ".cuda()"), "train.py": _FGSM}, (("train.py", 10), ("train.py", 10))),
    ProjectShape("TW207", "look-alike: the imported constant stays on the CPU",
                 {"utils.py": _CONSTANTS.replace("MOVE", ""), "train.py": _FGSM}),
]

# ------------------------------------------------------------- TW207 a loss function a model's training forward calls
# A distiller (an nn.Module) computes its losses in `forward_train` with a loss function of its
# file; that function normalises distances by the mean of the positive ones (`d[d > 0].mean()`).
# A triplet loss's `__call__` mines hard examples with boolean masks (`dist[is_pos]`), and only
# under `if return_inds:` - which its call leaves to the default False - selects indices too.
_DISTILL = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    def relation_loss(f_s, f_t, eps=1e-12):
        with torch.no_grad():
            t_d = torch.cdist(f_t, f_t).clamp(min=eps)
            t_d = t_d / t_d[t_d > 0].mean()
        d = torch.cdist(f_s, f_s).clamp(min=eps)
        d = d / d[d > 0].mean()
        return F.smooth_l1_loss(d, t_d)


    class Relational(nn.Module):
        def __init__(self, student, teacher):
            super().__init__()
            self.student, self.teacher = student, teacher

        def forward_train(self, image, target):
            logits, feat = self.student(image)
            with torch.no_grad():
                _, feat_t = self.teacher(image)
            return logits, F.cross_entropy(logits, target) + relation_loss(feat, feat_t)

        def forward_test(self, image):
            return self.student(image)[0]

        def forward(self, **kwargs):
            if self.training:
                return self.forward_train(**kwargs)
            return self.forward_test(kwargs["image"])
""")
_DISTILL_TRAIN = d("""
    import torch
    from distillers.relational import Relational
    def train(student, teacher, loader):
        distiller = Relational(student, teacher).cuda()
        opt = torch.optim.SGD(student.parameters(), lr=0.1)
        for image, target in loader:
            logits, loss = distiller(image=image.cuda(), target=target.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW207", "mean of the positive distances selected by mask in a loss a distiller's forward_train calls",
                 {"distillers/relational.py": _DISTILL, "train.py": _DISTILL_TRAIN},
                 (("distillers/relational.py", 9), ("distillers/relational.py", 11))),
    ProjectShape("TW207", "look-alike: the forward_train computes the cross-entropy only; the relation loss is unused",
                 {"distillers/relational.py": _DISTILL.replace(
                     "F.cross_entropy(logits, target) + relation_loss(feat, feat_t)", "F.cross_entropy(logits, target)"),
                  "train.py": _DISTILL_TRAIN}),
]
_MINING = d("""
    import torch
    import torch.nn as nn


    def hard_mining(dist, labels, return_inds=False):
        n = dist.size(0)
        is_pos = labels.expand(n, n).eq(labels.expand(n, n).t())
        dist_ap, p_rel = torch.max(dist[is_pos].contiguous().view(n, -1), 1)
        if return_inds:
            ind = torch.arange(n, device=dist.device).unsqueeze(0).expand(n, n)
            return dist_ap, torch.gather(ind[is_pos].contiguous().view(n, -1), 1, p_rel.unsqueeze(1))
        return dist_ap


    class Triplet(object):
        def __init__(self, margin):
            self.ranking = nn.MarginRankingLoss(margin=margin)

        def __call__(self, feats, labels):
            dist = torch.cdist(feats, feats)
            dist_ap = hard_mining(dist, labels)
            return self.ranking(dist_ap, dist_ap * 0, torch.ones_like(dist_ap))
""")
_MINING_TRAIN = d("""
    import torch
    from triplet import Triplet
    def fit(model, loader, opt):
        crit = Triplet(0.3)
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            loss = crit(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
QUIET += [
    Shape("TW207", "look-alike: a random keep mask of a sparse dropout made on the host by NumPy", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class GraphConv(nn.Module):
            def edge_drop(self, adj, rate):
                keep = np.floor(1 - rate + np.random.rand(adj._nnz())).astype(bool)
                i, v = adj._indices(), adj._values()
                return torch.sparse_coo_tensor(i[:, keep], v[keep], adj.shape)
            def forward(self, adj, x):
                return torch.sparse.mm(self.edge_drop(adj, 0.1), x)
    """)),
]
FIND += [
    Shape("TW207", "a sparse edge dropout whose keep mask is floor(keep + rand).type(torch.bool) on the device", d("""
        import torch
        import torch.nn as nn
        class GraphConv(nn.Module):
            def edge_drop(self, adj, rate, n):
                keep = 1 - rate
                keep += torch.rand(n).to(adj.device)
                mask = torch.floor(keep).type(torch.bool)
                i, v = adj._indices(), adj._values()
                return torch.sparse.FloatTensor(i[:, mask], v[mask], adj.shape).to(adj.device)
            def forward(self, adj, x):
                return torch.sparse.mm(self.edge_drop(adj, 0.1, adj._nnz()), x)
        def fit(adj, x, y, opt):
            model = GraphConv().cuda()
            for epoch in range(100):
                loss = ((model(adj.cuda(), x.cuda()) - y.cuda()) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 9),
]
PROJECTS += [
    ProjectShape("TW207", "hard-example mining by mask in a triplet criterion's __call__; the index branch is left off",
                 {"triplet.py": _MINING, "train.py": _MINING_TRAIN}, (("triplet.py", 8),)),
]
