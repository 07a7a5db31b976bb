"""The recall corpus, round 7 part C: boolean-mask selection in the loss of every training step
(TW207, the ground truths' tag ``bool-mask``) - each written in our own words and reduced to its
shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW207 bool-mask in the loss
# ``x[mask]``, ``x[mask, :]``, ``x.masked_select(mask)`` on device tensors in a loss that runs every
# step: the result's size depends on the data, so the host waits for the GPU (a nonzero) each time.
# Seen in detection losses (matched priors, positive anchors per image), token-classification heads
# (the active tokens of the attention mask) and label-smoothed sequence losses (the non-pad tokens).
_TRAIN = d("""
    import torch
    from losses import {loss}
    def train(model, loader, optimizer):
        criterion = {loss}()
        model = model.cuda()
        for images, targets in loader:
            images, targets = images.cuda(), targets.cuda()
            loss = criterion(model(images), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")
_MATCHED_PRIORS = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class PriorMatchLoss(nn.Module):
        def forward(self, predictions, matched):
            boxes, scores = predictions
            labels = matched[..., 4].long()
            positive = labels > 0
            spread = positive.unsqueeze(positive.dim()).expand_as(boxes)
            box_loss = F.smooth_l1_loss(boxes[spread].view(-1, 4), matched[..., :4][spread].view(-1, 4))
            scores = scores.view(-1, scores.size(-1))
            return box_loss + F.cross_entropy(scores, labels.view(-1))
""")
_PER_IMAGE = d("""
    import torch
    import torch.nn as nn
    class AnchorFocalLoss(nn.Module):
        def forward(self, classes, shifts, anchors, annotations):
            total = []
            for j in range(classes.shape[0]):
                boxes = annotations[j]
                boxes = boxes[boxes[:, 4] != -1]
                overlap, _ = torch.max(anchors[0] @ boxes[:, :4].t(), dim=1)
                chosen = torch.ge(overlap, 0.5)
                total.append((shifts[j][chosen, :] ** 2).mean())
            return torch.stack(total).mean()
""")
PROJECTS += [
    ProjectShape("TW207", "a detection loss module: positives of the matched priors spread over the boxes, boxes[spread]", {
        "losses.py": _MATCHED_PRIORS, "train.py": _TRAIN.format(loss="PriorMatchLoss"),
    }, (("losses.py", 10),)),
    ProjectShape("TW207", "a focal loss per image: the valid annotations boxes[boxes[:, 4] != -1], then shifts[j][torch.ge(...), :]", {
        "losses.py": _PER_IMAGE, "train.py": _TRAIN.format(loss="AnchorFocalLoss"),
    }, (("losses.py", 8), ("losses.py", 11))),  # (one finding per selection since round 13)
]
FIND += [
    Shape("TW207", "a token-classification model of a library base: logits.view(-1, n)[active] handed to its loss in forward", d("""
        import torch
        import torch.nn as nn
        from transformers import BertForTokenClassification
        class Tagger(BertForTokenClassification):
            def forward(self, ids, attention_mask, tags=None):
                hidden = self.bert(ids, attention_mask=attention_mask)[0]
                logits = self.classifier(self.dropout(hidden))
                if tags is None:
                    return logits
                loss_fct = nn.CrossEntropyLoss()
                active = attention_mask.view(-1) == 1
                chosen = logits.view(-1, self.num_labels)[active]
                return loss_fct(chosen, tags.view(-1)[active])
        def fit(model, loader, optimizer):
            model.to("cuda")
            for ids, mask, tags in loader:
                loss = model(ids.to("cuda"), mask.to("cuda"), tags.to("cuda"))
                loss.backward()
                optimizer.step()
    """), 12),
    Shape("TW207", "a label-smoothed loss reached through a metrics helper: loss.masked_select(gold.ne(pad))", d("""
        import torch
        import torch.nn.functional as F
        def smoothed_loss(pred, gold, pad, eps=0.1):
            gold = gold.view(-1)
            one_hot = torch.zeros_like(pred).scatter(1, gold.view(-1, 1), 1)
            one_hot = one_hot * (1 - eps) + (1 - one_hot) * eps / (pred.size(1) - 1)
            keep = gold.ne(pad)
            loss = -(one_hot * F.log_softmax(pred, dim=1)).sum(dim=1)
            return loss.masked_select(keep).sum()
        def loss_and_accuracy(pred, gold, pad):
            loss = smoothed_loss(pred, gold, pad)
            return loss, pred.argmax(1)
        def train_epoch(model, loader, optimizer, device, pad):
            for src, gold in loader:
                src, gold = src.to(device), gold.to(device)
                loss, _ = loss_and_accuracy(model(src), gold, pad)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """), 9),
]

QUIET += [
    Shape("TW207", "look-alike: a single value filled through the mask (x[mask] = 0 runs as masked_fill_, no sync)", d("""
        import torch
        import torch.nn as nn
        class MinedLoss(nn.Module):
            def forward(self, scores, labels):
                labels = labels.cuda()
                positive = labels > 0
                hard = scores.clone()
                hard[positive] = 0
                hard[~positive, :] = -1.0
                scores[labels < 0] = float("-inf")
                return (hard * scores).sum()
    """)),
    Shape("TW207", "look-alike: an augmentation's NumPy boxes filtered with a mask in __call__", d("""
        import numpy as np
        import torch
        class DropTinyBoxes:
            def __call__(self, image, boxes):
                widths = boxes[:, 2] - boxes[:, 0]
                keep_mask = (widths > 1) & (boxes[:, 3] - boxes[:, 1] > 1)
                return torch.from_numpy(image).cuda(), boxes[keep_mask]
    """)),
    Shape("TW207", "look-alike: a detector's inference forward keeps the confident boxes (no loss)", d("""
        import torch
        import torch.nn as nn
        class Detector(nn.Module):
            def __init__(self, backbone):
                super().__init__()
                self.backbone = backbone.cuda()
            def forward(self, images):
                boxes, scores = self.backbone(images.cuda())
                confident_mask = scores > 0.5
                return boxes[confident_mask], scores[confident_mask]
    """)),
    Shape("TW207", "look-alike: a loss module that selects from the labels after taking them to NumPy", d("""
        import torch
        import torch.nn as nn
        class WeightedLoss(nn.Module):
            def forward(self, logits, labels):
                logits = logits.cuda()
                counts = labels.cpu().numpy()
                present = counts[counts > 0]
                weights = torch.tensor(1.0 / len(present)).cuda()
                return nn.functional.cross_entropy(logits, labels.cuda()) * weights
    """)),
    Shape("TW207", "look-alike: the masked loss only reached from an evaluation function", d("""
        import torch
        def masked_loss(pred, gold, pad):
            return pred.masked_select(gold.ne(pad)).sum()
        def loss_and_accuracy(pred, gold, pad):
            return masked_loss(pred, gold, pad), pred.argmax(1)
        def evaluate(model, loader, device, pad):
            with torch.no_grad():
                for src, gold in loader:
                    loss, _ = loss_and_accuracy(model(src.to(device)), gold.to(device), pad)
    """)),
]

# ----------------------------------------------------------------------------------- TW207 random masks
# Dropout by selection in a model's method on the forward path: the edges of a sparse graph (or the
# tokens of a sequence) kept by a mask drawn at random each call; the kept count differs every time.
_GRAPH_TRAIN = d("""
    import torch
    from model import GraphRecommender
    def train(dataset, loader, optimizer, device):
        model = GraphRecommender(dataset.graph().to(device)).to(device)
        for users, items in loader:
            loss = model(users.to(device), items.to(device)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")
PROJECTS += [
    ProjectShape("TW207", "edge dropout of a sparse graph: values[(torch.rand(n) + keep).int().bool()] in a helper of forward", {
        "model.py": d("""
            import torch
            import torch.nn as nn
            class GraphRecommender(nn.Module):
                def __init__(self, graph, keep=0.8):
                    super().__init__()
                    self.graph, self.keep = graph, keep
                    self.table = nn.Embedding(1000, 64)
                def _drop_edges(self, adj):
                    kept = (torch.rand(len(adj.values())) + self.keep).int().bool()
                    edges = adj.indices().t()[kept]
                    return torch.sparse_coo_tensor(edges.t(), adj.values()[kept] / self.keep, adj.size())
                def forward(self, users, items):
                    adj = self._drop_edges(self.graph) if self.training else self.graph
                    rows = torch.sparse.mm(adj, self.table.weight)
                    return (rows[users] * rows[items]).sum(-1)
        """),
        "train.py": _GRAPH_TRAIN,
    }, (("model.py", 10), ("model.py", 11))),
    ProjectShape("TW207", "look-alike: points thinned with a NumPy random mask in a dataset's __getitem__", {
        "model.py": d("""
            import numpy as np
            import torch
            import torch.nn as nn
            class PointSet(torch.utils.data.Dataset):
                def __getitem__(self, i):
                    points = self.clouds[i]
                    return torch.from_numpy(points[np.random.rand(len(points)) < 0.9])
            class GraphRecommender(nn.Module):
                def __init__(self, graph):
                    super().__init__()
                    self.graph = graph
                    self.table = nn.Embedding(1000, 64)
                def forward(self, users, items):
                    rows = torch.sparse.mm(self.graph, self.table.weight)
                    return (rows[users] * rows[items]).sum(-1)
        """),
        "train.py": _GRAPH_TRAIN,
    }),
]
