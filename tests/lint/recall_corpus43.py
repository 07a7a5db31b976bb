"""The recall corpus, round 17 part A: TW104 and TW101 classes the sets 21-24 showed - each
written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.

TW104: every run of an evaluation pass is reported (not only the first); a ``test*`` function the
project's own code calls is evaluation whatever it asserts; the receiver of ``.eval()`` that the
function also calls, or the modules a loop puts in eval mode, are models; a shared loop called with
``training=False`` after ``.eval()`` in a script, reported in its evaluation branches; speed tests
running a global model the script put in eval mode. TW101: named parts of a backpropagated loss
summed per epoch; an evaluator's loss total that takes a reduction of the network's output.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW104 every run of one evaluation pass
# A few-shot validation embeds the support and the query set and runs a head on both: each network
# run records a graph (and a per-kind branch of an evaluator each runs its own).
_EPISODES = d("""
    import torch


    def validate(encoder, head, episodes):
        for m in (encoder, head):
            m.eval()
        accs = []
        for support, labels, query in episodes:
            s = encoder(support.cuda())
            q = encoder(query.cuda())
            if head.kind == "svm":
                logits = head(q, s, labels, iters=3)
            else:
                logits = head(q, s, labels)
            accs.append((logits.argmax(-1) == 0).float().mean().item())
        return sum(accs) / len(accs)
""")
_BRANCHES = d("""
    import torch
    import torch.nn.functional as F


    class Scorer:
        def __init__(self, model, loader, criterion):
            self.model, self.loader, self.criterion = model, loader, criterion

        def scores(self):
            self.model.eval()
            total = 0.0
            for batch in self.loader:
                if self.model.with_lengths:
                    out = self.model(batch.x, lengths=batch.n)
                else:
                    out = self.model(batch.x)
                total += self.criterion(out, batch.y).item()
            return total
""")
PROJECTS += [
    ProjectShape("TW104", "support, query and head runs of one validation loop after a loop of .eval() calls",
                 {"fewshot.py": _EPISODES}, (("fewshot.py", 9), ("fewshot.py", 10), ("fewshot.py", 12), ("fewshot.py", 14))),
    ProjectShape("TW104", "both branches of an evaluator's model call (the loss module is no run of its own)",
                 {"scorer.py": _BRANCHES}, (("scorer.py", 14), ("scorer.py", 16))),
    ProjectShape("TW104", "look-alike: the same validation under no_grad",
                 {"fewshot.py": _EPISODES.replace("    accs = []\n", "    accs = []\n    torch.set_grad_enabled(False)\n")}),
]

# ------------------------------------------------------------- TW104 a test function the project calls
# A recommender's `test(model, users)` in a utility module (asserting that every item got a score)
# that the training script imports with `*` and calls every few epochs; a speaker model's
# `test(path)` that asserts a config value and that the `__main__` block calls.
_RANKING = d("""
    import numpy as np


    def test(model, users, n_items, batch=256):
        out = []
        for start in range(0, len(users), batch):
            part = users[start:start + batch]
            got = model(part, range(n_items))
            assert got.shape[1] == n_items
            out.append(got.detach().cpu().numpy())
        return np.concatenate(out)
""")
_RANKING_MAIN = d("""
    import torch
    from evaluation.ranking import *


    def main(model, data, opt, epochs):
        for epoch in range(epochs):
            for users, pos, neg in data:
                opt.zero_grad()
                loss = model.bpr(users, pos, neg)
                loss.backward()
                opt.step()
            if epoch % 10 == 0:
                print(test(model, data.test_users, data.n_items))
""")
FIND += [
    Shape("TW104", "test(path) the __main__ block calls: restores the model, asserts a config value, loops", d("""
        import torch
        from nets import Embedder
        def test(path, loader, cfg):
            net = Embedder()
            net.load_state_dict(torch.load(path, map_location="cpu"))
            net.eval()
            for batch in loader:
                assert cfg.utterances % 2 == 0
                emb = net(batch)
                print(emb.norm())
        if __name__ == "__main__":
            test("ckpt.pt", [], None)
    """), 9),
    Shape("TW104", "test_img(net_g, data, args): .eval() on a parameter not named like a model, then the loop runs it", d("""
        import torch
        import torch.nn.functional as F
        from torch.utils.data import DataLoader
        def test_img(net_g, data, args):
            net_g.eval()
            correct = 0
            for x, y in DataLoader(data, batch_size=args.bs):
                logp = net_g(x.cuda())
                correct += (logp.argmax(1) == y.cuda()).sum().item()
            return correct
    """), 8),
]
PROJECTS += [
    ProjectShape("TW104", "a test() with an assert that the training script calls through import *",
                 {"evaluation/ranking.py": _RANKING, "train.py": _RANKING_MAIN}, (("evaluation/ranking.py", 8),)),
    ProjectShape("TW104", "look-alike: the same test() called only by a pytest test",
                 {"evaluation/ranking.py": _RANKING,
                  "tests/test_ranking.py": d("""
                      from evaluation.ranking import test
                      def test_shapes(tiny_model):
                          test(tiny_model, [0, 1], 3)
                  """)}),
]
QUIET += [
    Shape("TW104", "look-alike: a unit test that loops and asserts, which nothing calls", d("""
        import torch
        from nets import Net
        def test_sizes():
            net = Net()
            net.eval()
            for n in (1, 2, 4):
                out = net(torch.zeros(n, 3))
                assert out.shape == (n, 10)
    """)),
    Shape("TW104", "look-alike: test_img() whose network is frozen first", d("""
        import torch
        def test_img(net_g, loader):
            net_g.eval()
            for p in net_g.parameters():
                p.requires_grad = False
            for x, y in loader:
                logp = net_g(x)
    """)),
]

# ------------------------------------------------------------- TW104 speed tests of a global model
FIND += [
    Shape("TW104", "timing functions running the global net the __main__ block put in eval mode", d("""
        import time
        import torch
        from model import LaneNet
        def test_latency():
            x = torch.zeros(1, 3, 288, 800).cuda()
            times = []
            for _ in range(100):
                t = time.time()
                y = net(x)
                times.append(time.time() - t)
            print(sum(times) / len(times))
        if __name__ == "__main__":
            net = LaneNet().cuda()
            net.eval()
            test_latency()
    """), 9),
]
QUIET += [
    Shape("TW104", "look-alike: the timing function runs a global net nothing puts in eval mode, and nothing calls it", d("""
        import time
        import torch
        from model import LaneNet
        net = LaneNet()
        def test_latency():
            for _ in range(10):
                y = net(torch.zeros(1, 3, 32, 32))
    """)),
]

# ------------------------------------------------------------- TW104 a shared loop run as evaluation by a script
# An anomaly-detection script trains with `backprop(epoch, model, data, opt)` and, after
# `model.eval()`, scores with `backprop(0, model, data, opt, training=False)`: every forward pass of
# the evaluation branches records a graph.
_SHARED = d("""
    import torch
    import torch.nn as nn


    def backprop(epoch, model, data, opt, training=True):
        mse = nn.MSELoss(reduction="none")
        if model.name == "ae":
            if training:
                for d in data:
                    loss = mse(model(d), d).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                return loss.item()
            else:
                outs = [model(d) for d in data]
                return torch.stack(outs).detach().numpy()
        y = model(data)
        loss = mse(y, data)
        if training:
            opt.zero_grad()
            loss.mean().backward()
            opt.step()
            return loss.mean().item()
        return loss.detach().numpy()


    if __name__ == "__main__":
        from models import Detector
        model = Detector()
        opt = torch.optim.Adam(model.parameters())
        data = torch.randn(100, 8)
        for e in range(5):
            backprop(e, model, data, opt)
        model.eval()
        scores = backprop(0, model, data, opt, training=False)
""")
PROJECTS += [
    ProjectShape("TW104", "backprop(..., training=False) after model.eval(): the evaluation branch and the shared run",
                 {"main.py": _SHARED}, (("main.py", 16), ("main.py", 18))),
    ProjectShape("TW104", "look-alike: the scoring call under no_grad",
                 {"main.py": _SHARED.replace("    scores = backprop(0, model, data, opt, training=False)",
                                             "    with torch.no_grad():\n        scores = backprop(0, model, data, opt, training=False)")}),
]

# ------------------------------------------------------------- TW101 parts of the loss, and an evaluator's loss total
FIND += [
    Shape("TW101", "named parts of the loss unpacked beside the one backpropagated, summed per epoch", d("""
        def train(model, data, opt, epochs):
            for epoch in range(epochs):
                total, rank_loss, reg_loss = 0.0, 0.0, 0.0
                for users, pos, neg in data:
                    loss, part_rank_loss, part_reg_loss = model.bpr_loss(users, pos, neg)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += loss.item()
                    rank_loss += part_rank_loss
                    reg_loss += part_reg_loss.item()
                print(total, rank_loss, reg_loss)
    """), 10),
    Shape("TW101", "an evaluator's total loss takes a hand-written regulariser of the network's output", d("""
        import torch
        import torch.nn.functional as F
        class Evaluator:
            def get_scores(self):
                self.model.eval()
                total_loss = 0
                for batch in self.loader:
                    scores, hidden = self.model(batch.text)
                    total_loss += F.cross_entropy(scores, batch.label).item()
                    total_loss += (hidden[1:] - hidden[:-1]).pow(2).mean()
                return total_loss / len(self.loader)
    """), 10),
]
QUIET += [
    Shape("TW101", "look-alike: an accuracy unpacked beside the loss is no loss", d("""
        def train(model, data, opt):
            acc_sum = 0.0
            for x, y in data:
                loss, acc = model.step(x, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                acc_sum += acc
    """)),
    Shape("TW101", "look-alike: a training helper returns its hand-written loss total for the caller's backward", d("""
        import torch
        def unroll_loss(model, seq):
            total_loss = 0
            for x in seq:
                out = model(x)
                total_loss += (out[1:] - out[:-1]).pow(2).mean()
            return total_loss
    """)),
    Shape("TW101", "look-alike: the evaluator's regulariser total under no_grad", d("""
        import torch
        class Evaluator:
            @torch.no_grad()
            def get_scores(self):
                self.model.eval()
                total_loss = 0
                for batch in self.loader:
                    scores, hidden = self.model(batch.text)
                    with torch.no_grad():
                        total_loss += (hidden[1:] - hidden[:-1]).pow(2).mean()
                return total_loss
    """)),
]
