"""The recall corpus, round 23 part B: classes the sets 35 and 36 missed for TW207 (what a project
function hands back: tensors it computes from the step's device tensors, or host numbers, whatever
its name; NumPy's old ``np.float`` alias read as ``float()``) and TW105 (probabilities unpacked from
a tuple, padded with ``torch.where``, or averaged with softmax weights before the log) - each
written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 tensors a statistics helper returns
# A top-k accuracy helper (named calc_/compute_/get_, in another module) that builds its results
# with torch operations on the logits and labels it is handed; the training loop unpacks them and
# reads each with .item() every step.
_TOPK_APPEND = d("""
    def calc_topk(output, target, topk=(1,)):
        _, pred = output.topk(max(topk), 1, True, True)
        pred = pred.t()
        hit = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            res.append(hit[:k].reshape(-1).float().sum(0).mul_(100.0 / target.size(0)))
        return res
""")
_TOPK_HOST = d("""
    def calc_topk(output, target, topk=(1,)):
        _, pred = output.topk(max(topk), 1, True, True)
        hit = pred.t().eq(target.view(1, -1))
        return [hit[:k].float().sum().item() / target.size(0) for k in topk]
""")
_TOPK_LOOP = d("""
    import torch.nn.functional as F
    from metrics import calc_topk

    def train(net, loader, opt, meters):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            out = net(x)
            loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            a1, a5 = calc_topk(out, y, (1, 5))
            meters["top1"].update(a1.item(), x.size(0))
            meters["top5"].update(float(a5), x.size(0))
""")
PROJECTS += [
    ProjectShape("TW207", "top-k accuracies built in a list by a calc_ helper of another module, read with .item()/float() every step",
                 {"metrics.py": _TOPK_APPEND, "train.py": _TOPK_LOOP}, (("train.py", 13), ("train.py", 14))),
    ProjectShape("TW207", "look-alike: the same helper reads each accuracy on the host itself: the call is reported, not its numbers",
                 {"metrics.py": _TOPK_HOST, "train.py": _TOPK_LOOP.replace("a1.item()", "a1")}, (('metrics.py', 4), ('train.py', 12),)),
]
FIND += [
    Shape("TW207", "accuracy pair returned as a tuple of torch reductions by a compute_ helper of the file", d("""
        import torch
        def compute_scores(logits, labels):
            pred = torch.argmax(logits, dim=1)
            correct = (pred == labels).float()
            return correct.sum() / labels.size(0), (1 - correct).sum() / len(labels)
        def fit(model, loader, opt, log):
            for xb, yb in loader:
                xb, yb = xb.to("cuda"), yb.to("cuda")
                logits = model(xb)
                loss = torch.nn.functional.cross_entropy(logits, yb)
                opt.zero_grad(); loss.backward(); opt.step()
                acc, wrong = compute_scores(logits, yb)
                log.append((acc.item(), wrong.item()))
    """), 13),
    Shape("TW207", "NumPy's old float alias of a device accuracy every step (np.float(t) calls t.__float__)", d("""
        import numpy as np
        import torch.nn.functional as F
        def run(net, loader, opt, hist):
            for step, (img, lab) in enumerate(loader):
                img, lab = img.cuda(), lab.cuda()
                out = net(img)
                loss = F.cross_entropy(out, lab)
                opt.zero_grad(); loss.backward(); opt.step()
                err = (out.argmax(1) != lab).float().mean()
                hist[step % 100] = np.float(err)
    """), 10),
]
PROJECTS += [
    ProjectShape("TW207", "a helper (not named for statistics) returns NumPy values: reported at its call, its results are no tensors", {"train.py": d("""
        import torch
        def topk_hits(logits, labels, ks):
            pred = logits.topk(max(ks), 1)[1].t()
            hit = pred.eq(labels.view(1, -1))
            return [hit[:k].float().sum().cpu().numpy() for k in ks]
        def fit(model, loader, opt, log):
            for xb, yb in loader:
                xb, yb = xb.cuda(), yb.cuda()
                logits = model(xb)
                loss = torch.nn.functional.cross_entropy(logits, yb)
                opt.zero_grad(); loss.backward(); opt.step()
                h1, h5 = topk_hits(logits, yb, (1, 5))
                if step_due(): print(float(h1), float(h5))
        def step_due():
            return False
    """)}, (("train.py", 12),)),
]
QUIET += [
    Shape("TW207", "look-alike: np.float of a host number (a learning rate) every step", d("""
        import numpy as np
        import torch.nn.functional as F
        def run(net, loader, opt, hist):
            for img, lab in loader:
                img, lab = img.cuda(), lab.cuda()
                loss = F.cross_entropy(net(img), lab)
                opt.zero_grad(); loss.backward(); opt.step()
                hist.append(np.float(opt.param_groups[0]["lr"]))
    """)),
]

# ------------------------------------------------------------- TW105 probabilities combined before the log
# Recommendation and learning-to-rank losses written by hand: BCE over sigmoid scores split into the
# positive and negative columns by a tuple assignment, ListNet/softmax cross-entropy whose padding is
# filled with ones by torch.where before the log, and a BPR-style loss averaging sigmoid pair
# probabilities with softmax weights - each with .log() as a method.
FIND += [
    Shape("TW105", "hand-written BCE: sigmoid scores unpacked into positive/negative columns, pos.log() and (1 - neg).log()", d("""
        def bce(out):
            probs = out["score"].sigmoid()
            pos, neg = probs[:, 0], probs[:, 1:]
            return -(pos.log() + (1 - neg).log().sum(dim=1)).mean()
    """), 4),
    Shape("TW105", "listnet: softmax probabilities padded with ones by torch.where, then .log()", d("""
        import torch
        def listnet(pred, target, mask):
            t = (target - target.max()).softmax(dim=1)
            p = (pred - pred.max()).softmax(dim=1)
            p = torch.where(mask == 1, p, torch.ones_like(p))
            return -(t * p.log()).sum(dim=1).mean()
    """), 6),
    Shape("TW105", "softmax CE over the first k candidates, sliced then padded with ones, then .log()", d("""
        import torch
        def soft_ce(pred, mask, k):
            s = torch.softmax(pred, dim=1)
            top = s[:, :k]
            top = torch.where(mask[:, :k] == 1, top, torch.ones_like(top))
            return -top.log().sum(1).mean()
    """), 6),
    Shape("TW105", "sigmoid pair probabilities averaged with softmax weights of the negatives, then .log()", d("""
        def weighted_bpr(out):
            pos, neg = out[:, 0], out[:, 1:]
            w = (neg - neg.max()).softmax(dim=1)
            return -((pos[:, None] - neg).sigmoid() * w).sum(dim=1).log().mean()
    """), 4),
]
QUIET += [
    Shape("TW105", "look-alike: the probabilities are guarded by a where on themselves before log(1 - p)", d("""
        import torch
        def neg_term(pred):
            p = pred.softmax(dim=1)
            p = torch.where(p != 1, p, torch.zeros_like(p))
            return (1 - p).log()
    """)),
    Shape("TW105", "look-alike: unpacked sigmoid columns with an epsilon in the log", d("""
        def bce(out):
            probs = out.sigmoid()
            pos, neg = probs[:, 0], probs[:, 1:]
            return -((pos + 1e-8).log() + (1 - neg + 1e-8).log().sum(1)).mean()
    """)),
    Shape("TW105", "look-alike: the weighted average is clamped before the log", d("""
        def weighted_bpr(pos, neg):
            w = (neg - neg.max()).softmax(dim=1)
            return -((pos[:, None] - neg).sigmoid() * w).sum(dim=1).clamp(min=1e-8).log().mean()
    """)),
    Shape("TW105", "look-alike: columns of raw scores (no probabilities) unpacked and logged", d("""
        def rates(x, y):
            a, b = x[:, 0], y[:, 1:]
            return a.log() + (1 - b).log()
    """)),
    Shape("TW105", "look-alike: torch.where fills logits (not probabilities) before the log", d("""
        import torch
        def masked(pred, mask):
            z = torch.where(mask, pred, torch.zeros_like(pred))
            return z.log()
    """)),
]
