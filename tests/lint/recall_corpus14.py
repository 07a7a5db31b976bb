"""The recall corpus, round 9 part B: classes the ninth set (a tuning set since round 9) showed
in TW207, TW301, TW401, TW203 and TW104 - each written in our own words and reduced to its shape, with look-alikes that must
stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW207 losses nothing builds
# A losses module offers several criteria; the trainer builds one of them. The selections in the
# others never run, so they are not per step. A 0-dim device tensor stored through a mask
# (`weight[pos] = weight.max()`, `1 / pos_num` with `pos_num = pos.sum()`) is not PyTorch's
# masked_fill fast path (a number or a CPU scalar): index_put_ runs nonzero, a host sync.
_LOSSES = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    __all__ = ["WeightedLoss", "HardNegativeLoss"]


    class WeightedLoss(nn.Module):
        def forward(self, logits, labels):
            pos = labels > 0
            weight = torch.zeros_like(labels)
            weight[pos] = weight.max()
            return F.binary_cross_entropy_with_logits(logits, labels, weight)


    class HardNegativeLoss(nn.Module):
        def __init__(self, ratio=3.0):
            super(HardNegativeLoss, self).__init__()
            self.ratio = ratio

        def forward(self, logits, labels):
            pos_logits = logits[labels > 0]
            neg_logits = logits[labels == 0]
            k = int(pos_logits.numel() * self.ratio)
            neg_logits, _ = neg_logits.topk(k)
            ones, zeros = torch.ones_like(pos_logits), torch.zeros_like(neg_logits)
            return F.binary_cross_entropy_with_logits(torch.cat([pos_logits, neg_logits]), torch.cat([ones, zeros]))
""")
_TRAINER = d("""
    import torch
    from losses import {loss}


    def main(model, loader, opt):
        device = torch.device("cuda")
        criterion = {loss}()
        for x, y in loader:
            loss = criterion(model(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW207", "the criterion the trainer builds stores a 0-dim device tensor through a mask; the other loss is unused", {
        "losses.py": _LOSSES,
        "train.py": _TRAINER.format(loss="WeightedLoss"),
    }, (("losses.py", 12),)),
    ProjectShape("TW207", "the hard-negative loss is the criterion: its selections are per step", {
        "losses.py": _LOSSES.replace("weight.max()", "0.5"),
        "train.py": _TRAINER.format(loss="HardNegativeLoss"),
    }, (("losses.py", 22), ("losses.py", 23))),  # (one finding per selection since round 13)
]
_BALANCED = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class BalancedBCELoss(nn.Module):
        def forward(self, logits, target):
            pos = target == 1
            weight = torch.ones_like(target)
            weight[pos] = {value}
            return F.binary_cross_entropy_with_logits(logits, target, weight)
    def fit(model, loader, opt):
        crit = BalancedBCELoss()
        for x, y in loader:
            loss = crit(model(x.cuda()), y.cuda())
            opt.zero_grad(); loss.backward(); opt.step()
""")
FIND += [
    Shape("TW207", "a loss writing the mean score (a 0-dim device tensor) through a mask",
          _BALANCED.format(value="logits.sigmoid().mean()"), 8),
]
QUIET += [
    Shape("TW207", "look-alike: a Python number stored through a mask (.item() of a host value): masked_fill, no sync "
          "(.item() of a tensor made from the loss's inputs is a read of its own since recall_corpus19)",
          _BALANCED.format(value="self.ratio.item()")),
    Shape("TW207", "look-alike: a constant stored through the negated mask", _BALANCED.format(value="0.25").replace("weight[pos]", "weight[~pos]")),
]

# ----------------------------------------------------------------------------------- TW207 tests of a comparison
# `if (norms == 0).any():` on a gradient norm of a perturbation kept in a pre-0.4 Variable, every
# step of an inner optimisation loop (a PGD-like attack with its own optimizer).
_PERTURB = d("""
    import torch
    import torch.optim as optim
    from torch.autograd import Variable
    def perturb(model, x, steps, eps):
        delta = 0.001 * torch.randn(x.shape).cuda().detach()
        delta = Variable(delta.data, requires_grad=True)
        opt = optim.SGD([delta], lr=eps / steps)
        for _ in range(steps):
            opt.zero_grad()
            loss = -model(x + delta).sum()
            loss.backward()
            norms = delta.grad.view(x.size(0), -1).norm(p=2, dim=1)
            delta.grad.div_(norms.view(-1, 1, 1, 1))
            if {test}:
                delta.grad.zero_()
            opt.step()
        return x + delta
""")
FIND += [
    Shape("TW207", "if (norms == 0).any(): on a gradient norm of a Variable-wrapped device perturbation, every inner step",
          _PERTURB.format(test="(norms == 0).any()"), 14),
    Shape("TW207", "the constant on the left: if (0 == norms).all()", _PERTURB.format(test="(0 == norms).all()"), 14),
]
QUIET += [
    Shape("TW207", "look-alike: the same test on a tensor of host numbers made on the CPU",
          _PERTURB.format(test="(torch.tensor([steps, eps]) == 0).any()")),
]

# ----------------------------------------------------------------------------------- TW301 per-worker reseeds
# A sampler starts worker processes, each handed a seed drawn from the parent's unseeded generator
# and reseeding NumPy with it (distinct streams per worker). That is no seed of the run: a file
# using Python's random is not "beside a seeded numpy", and another module's NumPy is not seeded.
_SAMPLER = d("""
    import random
    import numpy as np
    from multiprocessing import Process, Queue


    def draw_batches(users, batch_size, queue, seed):
        def one(uid):
            return uid, users[uid]
        np.random.seed(seed)
        while True:
            queue.put([one(np.random.randint(len(users))) for _ in range(batch_size)])


    class Sampler:
        def __init__(self, users, batch_size=64, n_workers=2):
            self.queue = Queue(maxsize=n_workers * 10)
            self.workers = [Process(target=draw_batches, args=(users, batch_size, self.queue, np.random.randint(2e9)))
                            for _ in range(n_workers)]
            for w in self.workers:
                w.start()


    def evaluate(model, users):
        picked = random.sample(range(len(users)), min(len(users), 1000))
        return sum(model(users[u]) for u in picked)
""")
QUIET += [
    Shape("TW301", "look-alike: a worker process reseeding NumPy with the seed it is handed; Python's random used beside it",
          _SAMPLER, path="utils.py"),
]
FIND += [
    Shape("TW301", "the same file seeding NumPy for the run at its top: Python's random is used unseeded",
          _SAMPLER.replace("from multiprocessing import Process, Queue\n",
                           "from multiprocessing import Process, Queue\nnp.random.seed(7)\n"), 25, path="utils.py"),
]
PROJECTS += [
    ProjectShape("TW301", "another module seeds torch and draws from NumPy: the workers' reseed does not seed it", {
        "utils.py": _SAMPLER,
        "main.py": d("""
            import numpy as np
            import torch
            torch.manual_seed(0)
            order = np.random.permutation(100)
        """),
    }, (("main.py", 4),)),
]

# ----------------------------------------------------------------------------------- TW401 scripts named test_*
# An evaluation script named like a test (`test_video.py`): argparse at the top, asserts on its
# arguments, a `test_transform(size, crop)` helper that builds a transform. It is no test file, so
# its torch.load gets the advice every script gets; a plain-assert test module stays a test.
_EVAL_SCRIPT = d("""
    import argparse
    import torch
    import torch.nn as nn

    def test_transform(size, crop):
        steps = [size] if size else []
        if crop:
            steps.append(crop)
        return steps

    parser = argparse.ArgumentParser()
    parser.add_argument("--decoder", default="decoder.pth")
    parser.add_argument("--video", default="")
    args = parser.parse_args()
    assert args.video
    decoder = nn.Linear(4, 4)
    decoder.load_state_dict(torch.load(args.decoder))
""")
FIND += [
    Shape("TW401", "an evaluation script named test_video.py (argparse, asserts on its arguments, a test_transform helper)",
          _EVAL_SCRIPT, 17, path="test_video.py"),
]
QUIET += [
    Shape("TW401", "look-alike: a plain-assert test module (no pytest import) loading a checkpoint it wrote", d("""
        import torch
        import torch.nn as nn

        def test_round_trip(tmp_path):
            net = nn.Linear(2, 2)
            torch.save(net.state_dict(), tmp_path / "w.pt")
            state = torch.load(tmp_path / "w.pt")
            assert state.keys() == net.state_dict().keys()
    """), path="test_checkpoint.py"),
]

# ----------------------------------------------------------------------------------- TW203 pin_memory=False written out
# Lead's decision (round 9): an explicit pin_memory=False on a loader whose batches go to the GPU
# is reported (the message says so); a comment naming pin_memory next to it is the author's reason.
_FETCH = d("""
    from torch.utils import data


    def fetch_loader(args, dataset):
        return data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                               pin_memory=False, num_workers=4, drop_last=True)
""")
_RUN = d("""
    import torch
    from datasets import fetch_loader


    def train(args, model, dataset, opt):
        model.cuda()
        for blob in fetch_loader(args, dataset):
            image, flow = [x.cuda() for x in blob]
            loss = (model(image) - flow).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW203", "a loader helper of another module returning DataLoader(..., pin_memory=False); batches .cuda()'d", {
        "datasets.py": _FETCH,
        "train.py": _RUN,
    }, (("datasets.py", 5),)),
    ProjectShape("TW203", "look-alike: the same helper with a comment giving the reason for pin_memory=False", {
        "datasets.py": _FETCH.replace("pin_memory=False,", "pin_memory=False,  # pin_memory off: items are CUDA IPC handles\n                              "),
        "train.py": _RUN,
    }),
]
FIND += [
    Shape("TW203", "a speaker-model trainer: DataLoader(..., pin_memory=False, ...) in the script, batches moved with .cuda()", d("""
        import torch
        def main(args, model, train_dataset, sampler, opt):
            model = model.cuda()
            train_loader = torch.utils.data.DataLoader(
                train_dataset,
                batch_size=args.batch_size,
                num_workers=args.workers,
                sampler=sampler,
                pin_memory=False,
                drop_last=True,
            )
            for data, label in train_loader:
                loss = model(data.cuda(), label.cuda())
                opt.zero_grad(); loss.backward(); opt.step()
    """), 4),
]
QUIET += [
    Shape("TW203", "look-alike: pin_memory=False in a CPU-only script (nothing goes to a GPU)", d("""
        import torch
        def main(args, model, train_dataset, opt):
            loader = torch.utils.data.DataLoader(train_dataset, batch_size=32, pin_memory=False)
            for data, label in loader:
                loss = model(data, label)
                opt.zero_grad(); loss.backward(); opt.step()
    """)),
]

# ----------------------------------------------------------------------------------- TW104 model methods, flagged loops
# An evaluation function of a utilities module runs a method of the model it is handed
# (`model.predict(...)`, every user) with autograd on; a solver validates through its training
# loop with an evaluation flag (`cross_valid=True`) after `model.eval()`, and the loop only skips
# backward() under the flag.
_RANKING = d("""
    import numpy as np

    def evaluate(model, users, items, k=10):
        hits = 0.0
        for u in users:
            candidates = np.random.randint(1, items, 100)
            scores = -model.predict(np.array([u]), candidates)
            hits += float((scores.argsort().argsort()[0] < k).item())
        return hits / len(users)
""")
FIND += [
    Shape("TW104", "evaluate(model, ...) of a utilities module runs model.predict(...) per user, no no_grad",
          _RANKING, 7, path="utils.py"),
]
QUIET += [
    Shape("TW104", "look-alike: the same evaluation decorated with @torch.no_grad()",
          "import torch\n" + _RANKING.replace("def evaluate(", "@torch.no_grad()\ndef evaluate("), path="utils.py"),
    Shape("TW104", "look-alike: a web handler predict() calling a wrapper object built at the top (not handed in)", d("""
        from ner import Tagger
        model = Tagger("out")
        def predict(text):
            return model.predict(text)
    """), path="api.py"),
    Shape("TW104", "look-alike: a scoring method of a plain class running self.net.embed(...) (also used in training)", d("""
        import torch
        class Scorer(object):
            def __init__(self, dim):
                self.net = torch.nn.Linear(dim, dim)
            def predict_neg_score(self, heads, negatives):
                return self.net.embed(heads) @ negatives.t()
    """), path="models.py"),
    Shape("TW104", "look-alike: an evaluation that decodes with a tokenizer (no model run)", d("""
        def evaluate(tokenizer, outputs):
            texts = []
            for ids in outputs:
                texts.append(tokenizer.decode(ids, skip_special_tokens=True))
            return texts
    """), path="utils.py"),
]
_SOLVER = d("""
    import torch


    class Solver:
        def __init__(self, model, tr_loader, cv_loader, optimizer, epochs):
            self.model, self.optimizer, self.epochs = model, optimizer, epochs
            self.tr_loader, self.cv_loader = tr_loader, cv_loader

        def train(self):
            for epoch in range(self.epochs):
                self.model.train()
                self._run_one_epoch(epoch)
                self.model.eval()
                val_loss = self._run_one_epoch(epoch, cross_valid=True)
                print(epoch, val_loss)

        def _run_one_epoch(self, epoch, cross_valid=False):
            total = 0.0
            loader = self.cv_loader if cross_valid else self.tr_loader
            for mixture, sources in loader:
                {grad}estimate = self.model(mixture.cuda())
                loss = ((estimate - sources.cuda()) ** 2).mean()
                if not cross_valid:
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                total += loss.item()
            return total / len(loader)
""")
FIND += [
    Shape("TW104", "self.model.eval() then self._run_one_epoch(epoch, cross_valid=True): the shared loop records autograd",
          _SOLVER.format(grad=""), 21, path="solver.py"),
]
QUIET += [
    Shape("TW104", "look-alike: the shared loop switches autograd off under the flag itself",
          _SOLVER.format(grad="with torch.set_grad_enabled(not cross_valid):\n                    ").replace(
              "                loss = ((estimate", "                    loss = ((estimate"), path="solver.py"),
]
