"""The recall corpus, round 28 part A: classes sets 45 and 46 showed for TW207 - `.nonzero()` of a
mask in a loss or mining helper the step calls every step, a helper's `.item()` of a number made
only from tensor shapes, and a host copy under an opt-in switch whose branch writes a picture -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 .nonzero() of a mask in a per-step helper
# A depth/segmentation trainer whose loss divides by the count of valid pixels, a metric-learning
# trainer that mines positives, a multi-task trainer that picks each task's rows: `.nonzero()` has
# to size its output on the host, once per call, every step.
FIND += [
    Shape("TW207", "torch.nonzero(mask).size(0) as the divisor of a masked loss the step calls", d("""
        import torch
        def masked_l1_loss(pred, target):
            valid = target != 0
            return ((pred - target).abs() * valid).sum() / torch.nonzero(valid).size(0)
        def train(model, loader, opt, device):
            for x, depth in loader:
                x, depth = x.to(device), depth.to(device)
                loss = masked_l1_loss(model(x), depth)
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 4),
    Shape("TW207", "a mining helper takes the indices of the positive pairs with .nonzero()", d("""
        import torch
        def mine_pairs(dist, labels):
            same = labels.unsqueeze(0) == labels.unsqueeze(1)
            pairs = same.nonzero()
            return dist[pairs[:, 0], pairs[:, 1]].max()
        def fit(net, batches, optimizer):
            for images, labels in batches:
                images, labels = images.cuda(), labels.cuda()
                emb = net(images)
                loss = mine_pairs(torch.cdist(emb, emb), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """), 4),
    Shape("TW207", "a trainer method picks each task's rows with (tasks == t).data.nonzero()", d("""
        import torch
        class Joint:
            def __init__(self, model, tasks):
                self.model, self.tasks = model, tasks
                self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
                self.ce = torch.nn.CrossEntropyLoss()
            def crit(self, task_ids, outputs, targets):
                loss = 0
                for t in range(self.tasks):
                    rows = (task_ids == t).data.nonzero().view(-1)
                    loss = loss + self.ce(outputs[t][rows], targets[rows])
                return loss
            def train_epoch(self, loader):
                for x, y, task_ids in loader:
                    x, y, task_ids = x.cuda(), y.cuda(), task_ids.cuda()
                    loss = self.crit(task_ids, self.model(x), y)
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
    """), 10),
]
QUIET += [
    Shape("TW207", "look-alike: the helper with .nonzero() runs only at a log interval", d("""
        import torch
        def coverage(pred, target):
            return torch.nonzero(pred == target).size(0) / target.numel()
        def train(model, loader, opt, device, log):
            for step, (x, y) in enumerate(loader):
                x, y = x.to(device), y.to(device)
                out = model(x)
                loss = torch.nn.functional.cross_entropy(out, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 200 == 0:
                    log(coverage(out.argmax(1), y))
    """)),
    Shape("TW207", "look-alike: a target-assignment helper sizes its matches with .nonzero() by design", d("""
        import torch
        def build_targets(anchors, boxes):
            iou = anchors @ boxes.t()
            matched = (iou > 0.5).nonzero()
            return matched
        def train(model, loader, opt, anchors):
            for x, boxes in loader:
                x, boxes = x.cuda(), boxes.cuda()
                idx = build_targets(anchors, boxes)
                loss = model(x)[idx[:, 0]].mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
    Shape("TW207", "look-alike: .nonzero() of a mask made from the host batch before it is moved", d("""
        import torch
        def weighted_loss(pred, target, weights):
            return (torch.nn.functional.mse_loss(pred, target, reduction="none") * weights).mean()
        def train(model, loader, opt):
            for x, y, flags in loader:
                keep = (flags > 0).nonzero().view(-1)
                x, y = x[keep].cuda(), y[keep].cuda()
                loss = weighted_loss(model(x), y, 1.0)
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
]

# ------------------------------------------------------------- TW207 .item() of a number made from shapes
# A continual-learning trainer whose criterion normalises a mask penalty by the number of mask
# entries: `np.prod(m.size()).item()` is a NumPy scalar of host ints, no device read.
QUIET += [
    Shape("TW207", "look-alike: a criterion's .item() of np.prod over a tensor's size", d("""
        import numpy as np
        import torch
        class Appr:
            def __init__(self, model):
                self.model = model
                self.opt = torch.optim.SGD(model.parameters(), lr=0.05)
                self.ce = torch.nn.CrossEntropyLoss()
            def criterion(self, outputs, targets, masks):
                reg, count = 0, 0
                for m in masks:
                    reg += m.sum()
                    count += np.prod(m.size()).item()
                return self.ce(outputs, targets) + 0.75 * reg / count
            def train_epoch(self, loader):
                for x, y in loader:
                    x, y = x.cuda(), y.cuda()
                    out, masks = self.model(x)
                    loss = self.criterion(out, y, masks)
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
    """)),
    Shape("TW207", "look-alike: a helper's .item() of the element count of a shape tuple", d("""
        import torch
        def per_element(loss, x):
            n = torch.tensor(x.shape).prod().item()
            return loss / n
        def train(model, loader, opt, device):
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                loss = per_element(torch.nn.functional.mse_loss(model(x), y, reduction="sum"), x)
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
]
# ------------------------------------------------------------- TW207 a host copy for a picture behind an opt-in switch
# A video-prediction trainer with `--show_flow` (store_true): when asked, it copies the step's
# optical flow to the host and writes it as an image; in a run with the defaults the branch never runs.
_PICTURE = d("""
    import argparse
    import cv2
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument('--show_maps', OPTION)
    args = parser.parse_args()
    def train(model, loader, opt):
        for step, (x, y) in enumerate(loader):
            x, y = x.cuda(), y.cuda()
            out = model(x)
            if args.show_maps:
                maps = out.detach().cpu().numpy()
                for i in range(maps.shape[0]):
                    cv2.imwrite(f"maps/{step}_{i}.png", maps[i, 0] * 255)
            loss = torch.nn.functional.l1_loss(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
QUIET += [
    Shape("TW207", "look-alike: store_true switch around a copy written as a picture", _PICTURE.replace("OPTION", "action='store_true'")),
    Shape("TW207", "look-alike: default=False switch around a copy written as a picture", _PICTURE.replace("OPTION", "default=False, type=bool")),
]
