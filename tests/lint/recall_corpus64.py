"""The recall corpus, round 22 part A: TW207 classes sets 33 and 34 missed for the mechanism, not the
shape - a model's method that copies what it is handed to the host to build a tensor it moves back to
the device, and a full-batch loop that "evaluates" host copies of the training forward's output
(no model pass of its own, so no wait that would make the copy free). Written in our own words and
reduced to the shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------- TW207 host-built weights in a model's helper method
# Aspect-sentiment models: the forward computes lengths or index pairs from its token ids, hands them
# to a method that copies them to NumPy, builds position weights in Python loops and moves the
# result to the device (or the forward moves what the method returns). The move back says the
# inputs live on the device: the copy waits for the GPU every forward pass.
_TRAIN = d("""
    import torch
    from nets import MODELS
    def main(opt):
        opt.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = MODELS[opt.name](opt).to(opt.device)
        optimizer = torch.optim.Adam(model.parameters())
        for batch in opt.loader:
            inputs = [batch[k].to(opt.device) for k in opt.cols]
            loss = torch.nn.functional.cross_entropy(model(inputs), batch["y"].to(opt.device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")
_WEIGHTED = d("""
    import torch
    import torch.nn as nn
    class Weighted(nn.Module):
        def __init__(self, opt):
            super().__init__()
            self.opt = opt
            self.embed = nn.Embedding(100, 8)
        def weights(self, x, span, lens):
            span = span.cpu().numpy()
            lens = lens.cpu().numpy()
            rows = []
            for i in range(x.shape[0]):
                rows.append([1.0 if span[i, 0] <= j <= span[i, 1] else 0.5 for j in range(lens[i])] + [0.0] * (x.shape[1] - lens[i]))
            return torch.tensor(rows, dtype=torch.float).unsqueeze(2).to(self.opt.device) * x
        def forward(self, inputs):
            tokens, left = inputs
            lens = torch.sum(tokens != 0, dim=-1)
            start = torch.sum(left != 0, dim=-1)
            span = torch.stack([start, start + 1], dim=1)
            return self.weights(self.embed(tokens), span, lens).sum(1)
""")
_RETURNED = d("""
    import numpy as np
    import torch
    import torch.nn as nn
    class Position(nn.Module):
        def __init__(self, opt):
            super().__init__()
            self.opt = opt
        def table(self, where, n, length):
            where = where.cpu().numpy()
            out = np.ones((n, length), dtype=np.float32)
            for i in range(n):
                out[i, : where[i][0]] = 0.3
            return torch.from_numpy(out)
        def forward(self, x, where):
            w = self.table(where, x.size(0), x.size(1)).to(self.opt.device)
            return w.unsqueeze(2) * x
""")
PROJECTS += [
    ProjectShape("TW207", "ABSA-like model: lengths computed in forward, copied to NumPy in a helper that moves its weights "
                 "back to the device", {"train.py": _TRAIN, "nets.py": _WEIGHTED + "MODELS = {'w': Weighted}\n"},
                 (("nets.py", 9), ("nets.py", 10))),
    ProjectShape("TW207", "a sub-module's helper builds a NumPy table from what forward hands it; forward moves the table",
                 {"train.py": _TRAIN, "nets.py": _RETURNED + "MODELS = {'p': Position}\n"}, (("nets.py", 9),)),
    ProjectShape("TW207", "look-alike: the helper keeps its weights on the host (no move back): the input may be on the host",
                 {"train.py": _TRAIN, "nets.py": _WEIGHTED.replace(".to(self.opt.device) * x", " * x.cpu()")
                  + "MODELS = {'w': Weighted}\n"}),
    ProjectShape("TW207", "look-alike: the helper is only named in a comment (nothing calls it)",
                 {"train.py": _TRAIN, "nets.py": _WEIGHTED.replace("return self.weights(self.embed(tokens), span, lens).sum(1)",
                                                                   "# x = self.weights(x, span, lens)\n        return self.embed(tokens).sum(1)")
                  + "MODELS = {'w': Weighted}\n"}),
    ProjectShape("TW207", "look-alike: the method changes the dtype of what it built (.to(torch.float)), no device move",
                 {"train.py": _TRAIN, "nets.py": _RETURNED.replace(".to(self.opt.device)", ".to(torch.float)").replace(
                     "return w.unsqueeze(2) * x", "return w.unsqueeze(2).to(x.device) * x") + "MODELS = {'p': Position}\n"}),
    ProjectShape("TW207", "look-alike: lengths handed to pack_padded_sequence on the host (no NumPy build moved back)", {
        "train.py": _TRAIN, "nets.py": d("""
            import torch
            import torch.nn as nn
            class Packed(nn.Module):
                def __init__(self, opt):
                    super().__init__()
                    self.rnn = nn.LSTM(8, 8, batch_first=True)
                def forward(self, inputs):
                    x, lens = inputs
                    packed = nn.utils.rnn.pack_padded_sequence(x, lens.cpu(), batch_first=True, enforce_sorted=False)
                    return self.rnn(packed)[1][0].sum(0)
            MODELS = {'k': Packed}
        """)}),
]

# ------------------------------------------------------- TW207 a full-batch loop scoring host copies
# Node classification: one step per epoch over the whole graph, then the training forward's output
# copied to the host and scored with scikit-learn by an `evaluate_*` helper. The helper runs no model
# pass of its own, so the copy is the loop's wait, and the writer's read of the loss another one.
_FULL_BATCH = d("""
    import torch
    from sklearn.metrics import accuracy_score
    def evaluate_node(pred, labels, idx):
        return accuracy_score(labels[idx], pred.argmax(-1).numpy()[idx])
    def train(model, x, adj, labels, idx, args, writer):
        opt = torch.optim.Adam(model.parameters())
        for epoch in range(args.epochs):
            opt.zero_grad()
            pred = model(x.cuda(), adj.cuda())
            loss = torch.nn.functional.cross_entropy(pred[idx], torch.as_tensor(labels[idx]).cuda())
            loss.backward()
            opt.step()
            acc = evaluate_node(pred.cpu(), labels, idx)
            writer.add_scalar("loss", loss, epoch)
""")
PROJECTS += [
    ProjectShape("TW207", "full-batch GNN: evaluate_node(pred.cpu(), ...) each epoch is no model evaluation; the copy and the "
                 "writer's read wait every step", {"train.py": _FULL_BATCH}, (("train.py", 13), ("train.py", 14))),
    ProjectShape("TW207", "look-alike: the loop evaluates the model itself every pass (its own wait): the reads add none", {
        "train.py": _FULL_BATCH.replace("acc = evaluate_node(pred.cpu(), labels, idx)", "acc = evaluate(model, x, adj, labels)")
        .replace("def train(", "def evaluate(model, x, adj, labels):\n    with torch.no_grad():\n"
                 "        return (model(x.cuda(), adj.cuda()).argmax(-1).cpu() == torch.as_tensor(labels)).float().mean()\n"
                 "def train(")}),
]
