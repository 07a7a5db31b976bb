"""The recall corpus, round 10 part B: classes the tenth set (a tuning set since round 10) showed
in TW203, TW105, TW104, TW207, TW202, TW206, TW218, TW502 and TW301 - each written in our own words
and reduced to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these
to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW203 loader settings splatted
# A learner class builds its loaders in each method from a settings dict of the experiment
# (`DataLoader(data, **self.cfg['loader'])`), and moves the batches to `self.device`, chosen in
# the entry script. The dicts are written out elsewhere and nothing in the project names
# pin_memory, so the splat cannot be pinning.
_LEARNER = d("""
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader
    class Learner:
        def __init__(self, build, cfg, device):
            self.build, self.cfg, self.device = build, cfg, device
        def fit(self, data):
            self.model = self.build().to(self.device)
            opt = torch.optim.SGD(self.model.parameters(), **self.cfg['opt'])
            loader = DataLoader(data, shuffle=True, **self.cfg['fit_loader'])
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                opt.zero_grad()
                F.cross_entropy(self.model(x), y).backward()
                opt.step()
        def scores(self, data):
            out = []
            loader = DataLoader(data, shuffle=False, **self.cfg['eval_loader'])
            with torch.no_grad():
                for x, y in loader:
                    out.append(self.model(x.to(self.device)).softmax(1).cpu())
            return torch.cat(out)
""")
_SETTINGS = d("""
    SETTINGS = {'fit_loader': {'batch_size': 64, 'num_workers': 2},
                'eval_loader': {'batch_size': 500, 'num_workers': 2},
                'opt': {'lr': 0.01}}
""")
_ENTRY = d("""
    import torch
    from learner import Learner
    from settings import SETTINGS
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    learner = Learner(make_net, SETTINGS, device)
    learner.fit(labelled)
    ranking = learner.scores(pool)
""")
PROJECTS += [
    ProjectShape("TW203", "an active learner's methods: DataLoader(data, **self.cfg['...']), batches to self.device", {
        "learner.py": _LEARNER, "settings.py": _SETTINGS, "main.py": _ENTRY,
    }, (("learner.py", 10), ("learner.py", 18))),
    ProjectShape("TW203", "look-alike: the settings dicts pin (the project names pin_memory)", {
        "learner.py": _LEARNER,
        "settings.py": _SETTINGS.replace("'num_workers': 2}", "'num_workers': 2, 'pin_memory': True}"),
        "main.py": _ENTRY,
    }),
]
FIND += [
    Shape("TW203", "a local dict of loader settings without pin_memory, splatted; batches .cuda()'d", d("""
        import torch
        from torch.utils.data import DataLoader
        def train(model, train_set):
            settings = {'batch_size': 32, 'num_workers': 4}
            loader = DataLoader(train_set, shuffle=True, **settings)
            for x, y in loader:
                loss = model(x.cuda(), y.cuda())
    """), 5),
    Shape("TW203", "settings as dict(...) in a method, batches to self.device set from cuda", d("""
        import torch
        from torch.utils.data import DataLoader
        class Runner:
            def __init__(self, model):
                self.device = torch.device("cuda")
                self.model = model.to(self.device)
            def run(self, data):
                kw = dict(batch_size=16, num_workers=2)
                for x in DataLoader(data, **kw):
                    self.model(x.to(self.device))
    """), 9),
]
QUIET += [
    Shape("TW203", "a helper forwarding its own **kwargs: the callers may pass pin_memory", d("""
        import torch
        from torch.utils.data import DataLoader
        def run(model, data, **kwargs):
            for x in DataLoader(data, **kwargs):
                model(x.cuda())
    """)),
    Shape("TW203", "a local settings dict that gets pin_memory later", d("""
        import torch
        from torch.utils.data import DataLoader
        def train(model, train_set):
            settings = {'batch_size': 32}
            settings.update(pin_memory=torch.cuda.is_available())
            for x, y in DataLoader(train_set, **settings):
                model(x.cuda())
    """)),
    Shape("TW203", "a local dict that pins, splatted", d("""
        import torch
        from torch.utils.data import DataLoader
        def train(model, train_set):
            settings = {'batch_size': 32, 'pin_memory': True}
            for x, y in DataLoader(train_set, **settings):
                model(x.cuda())
    """)),
]

# ----------------------------------------------------------------------------------- TW105 probabilities from elsewhere
# The probabilities come back from another function or method (the model's softmax is inside a
# predict method, or inside a decoder that mixes two distributions with zero-padded slots), and
# the log is taken without a floor: an entropy score p * log(p) is NaN where p underflowed to 0.
_STRATEGY = d("""
    import torch
    from .base import Query
    class MaxEntropy(Query):
        def pick(self, n):
            idxs, pool = self.unlabeled()
            probs = self.class_probabilities(pool)
            logs = torch.log(probs)
            return idxs[(probs * logs).sum(1).argsort()[:n]]
""")
FIND += [
    Shape("TW105", "an entropy acquisition score: probs from a predict method, torch.log(probs)", _STRATEGY, 7,
          path="strategies/entropy.py"),
    Shape("TW105", "mutual information over dropout draws: the mean of returned probabilities, then its log", d("""
        import torch
        def disagreement(model, pool, draws):
            probs = model.mc_probs(pool, draws)
            mean = probs.mean(0)
            h_mean = (-mean * torch.log(mean)).sum(1)
            h_each = (-probs * probs.log()).sum(2).mean(0)
            return h_mean - h_each
    """), 5),
    Shape("TW105", "beam search: a decoder returns a mixed distribution, stored as log_probs = torch.log(dist)", d("""
        import torch
        def step(decoder, y, state, memory, beam):
            dist, state, attn = decoder(y, state, memory)
            log_probs = torch.log(dist)
            return torch.topk(log_probs, beam * 2), state
    """), 4),
]
QUIET += [
    Shape("TW105", "the same entropy with a floor before the log", _STRATEGY.replace("torch.log(probs)", "torch.log(probs.clamp_min(1e-12))")),
    Shape("TW105", "floored where the probabilities are bound", _STRATEGY.replace(
        "self.class_probabilities(pool)", "self.class_probabilities(pool).clamp(min=1e-12)")),
    Shape("TW105", "the top-k probabilities of a beam (the largest values), then their log", d("""
        import torch
        def expand(out, beam):
            best_probs, best_idx = out[:, -1, :].topk(beam)
            scores = torch.log(best_probs)
            return scores, best_idx
    """)),
    Shape("TW105", "the log of a returned value that is no probability (a distance, a count)", d("""
        import torch
        def score(model, x):
            dist = model.distance(x)
            return torch.log(dist)
    """)),
    Shape("TW105", "a keep probability from the config", d("""
        import torch
        def rate(cfg):
            keep_prob = cfg.get("keep_prob")
            return torch.log(keep_prob)
    """)),
]

# ----------------------------------------------------------------------------------- TW104 eval mode set elsewhere
# Evaluation mode is chosen where the model is built (`Model(path, is_eval=True)`, whose
# constructor calls `.eval()` on its parts) and an evaluator/decoder class runs it per batch; or
# a resume path calls `model.eval()` and hands the model to an evaluation helper of another
# module that calls `model.forward(...)`. Neither switches autograd off.
_EVALUATOR = d("""
    import torch
    from model import Seq2Seq
    class Scorer:
        def __init__(self, path):
            self.model = Seq2Seq(path, is_eval=True)
        def score_batch(self, batch):
            memory, hidden = self.model.encoder(batch.src, batch.lens)
            out = self.model.decoder(batch.tgt, hidden, memory)
            return out.mean().item()
        def run(self, batches):
            return sum(self.score_batch(b) for b in batches)
""")
_RANKING = d("""
    import torch
    def rank_all(model, batches, name):
        hits = []
        for e1, rel, e2 in batches:
            scores = model.forward(e1, rel)
            hits.append((scores.argsort(1, descending=True)[:, :10] == e2).any(1).float().mean())
        print(name, sum(hits) / len(hits))
""")
_RESUME = d("""
    import torch
    from ranking import rank_all
    from nets import Embedder
    def main(args, test_batches):
        model = Embedder()
        if args.resume:
            model.load_state_dict(torch.load(args.path))
            model.eval()
            rank_all(model, test_batches, 'test')
""")
FIND += [
    Shape("TW104", "an evaluator class: self.model = Model(path, is_eval=True), its method runs encoder/decoder per batch",
          _EVALUATOR, 7),
    Shape("TW104", "a beam decoder built with training=False, run through self.net(...)", d("""
        import torch
        from nets import Translator
        class BeamDecoder:
            def __init__(self, ckpt):
                self.net = Translator(ckpt, training=False)
            def decode(self, batch):
                out = self.net(batch.src)
                return out.argmax(-1).tolist()
    """), 7),
]
QUIET += [
    Shape("TW104", "the same evaluator with the method under no_grad", _EVALUATOR.replace(
        "    def score_batch", "    @torch.no_grad()\n    def score_batch")),
    Shape("TW104", "the same evaluator, called only under no_grad", _EVALUATOR.replace(
        "return sum(self.score_batch(b) for b in batches)",
        "with torch.no_grad():\n            return sum(self.score_batch(b) for b in batches)")),
    Shape("TW104", "a trainer built with is_eval=False that backpropagates", d("""
        import torch
        from model import Seq2Seq
        class Trainer:
            def __init__(self, path):
                self.model = Seq2Seq(path, is_eval=False)
                self.opt = torch.optim.Adam(self.model.parameters())
            def step(self, batch):
                loss = self.model(batch.src, batch.tgt)
                loss.backward()
                self.opt.step()
    """)),
]
PROJECTS += [
    ProjectShape("TW104", "resume path: model.eval(), then a ranking helper of another module calling model.forward", {
        "ranking.py": _RANKING, "main.py": _RESUME,
    }, (("main.py", 9),)),
    ProjectShape("TW104", "look-alike: the ranking helper runs under no_grad itself", {
        "ranking.py": _RANKING.replace("    hits = []\n", "    hits = []\n    torch.set_grad_enabled(False)\n"),
        "main.py": _RESUME,
    }),
]

# ----------------------------------------------------------------------------------- TW207 loop over optimizers
# A speed-run script trains at module level: gradient accumulation in an inner loop, then each of
# several optimizers stepped in `for opt, sched in zip(optimizers, schedulers):`. The step loop
# is the outer one; the loss it prints every step (in an f-string) is a host read per step.
_SPEEDRUN = d("""
    import torch
    model = build().cuda()
    optimizers = [torch.optim.AdamW(model.head.parameters()), torch.optim.SGD(model.body.parameters(), lr=0.1)]
    schedulers = [torch.optim.lr_scheduler.LambdaLR(o, warmup) for o in optimizers]
    for step in range(steps + 1):
        for micro in range(accum):
            loss = model(x, y)
            train_loss = loss.detach()
            x, y = loader.next_batch()
            loss.backward()
        for opt, sched in zip(optimizers, schedulers):
            opt.step()
            sched.step()
        model.zero_grad(set_to_none=True)
        if rank == 0:
            print(f"step {step} loss {train_loss.item():.4f}")
""")
FIND += [
    Shape("TW207", "a module-level speed-run loop: optimizers stepped in an inner zip loop, loss.item() in an f-string per step",
          _SPEEDRUN, 16),
    Shape("TW207", "the same with `for opt in optimizers:` and a print helper", _SPEEDRUN.replace(
        "for opt, sched in zip(optimizers, schedulers):", "for opt in optimizers:").replace(
        "    if rank == 0:\n        print(", "    log0("), 15),
]
QUIET += [
    Shape("TW207", "the same loop reading the loss every 100 steps", _SPEEDRUN.replace("if rank == 0:", "if step % 100 == 0:")),
    Shape("TW207", "a loop over optimizers only (no outer step loop): nothing per step", d("""
        import torch
        model = build().cuda()
        loss = model(x, y)
        loss.backward()
        for opt in optimizers:
            opt.step()
        print(f"loss {loss.item():.4f}")
    """)),
]

# ----------------------------------------------------------------------------------- TW502 scheduler.step(epoch)
# The epoch argument of an lr_scheduler's step() is deprecated; ReduceLROnPlateau's argument is
# the metric it watches, and step() alone is the current form.
_SCHEDULED = d("""
    import torch.optim as optim
    def fit(net, loader, epochs, warm):
        opt = optim.SGD(net.parameters(), lr=0.1)
        sched = optim.lr_scheduler.MultiStepLR(opt, milestones=[60, 120], gamma=0.2)
        for epoch in range(1, epochs + 1):
            if epoch > warm:
                sched.step(epoch)
            train_one_epoch(net, loader, opt)
""")
FIND += [
    Shape("TW502", "a multi-step schedule stepped with the epoch number after warm-up", _SCHEDULED, 7),
    Shape("TW502", "an exponential schedule on self, stepped with epoch=epoch", d("""
        from torch.optim.lr_scheduler import ExponentialLR
        class Tracker:
            def __init__(self, opt, gamma):
                self.sched = ExponentialLR(opt, gamma)
            def fit(self, epochs):
                for epoch in range(epochs):
                    self.sched.step(epoch=epoch)
                    self.one_epoch()
    """), 7),
]
QUIET += [
    Shape("TW502", "the same schedule stepped without an argument", _SCHEDULED.replace("sched.step(epoch)", "sched.step()")),
    Shape("TW502", "ReduceLROnPlateau stepped with the validation loss", _SCHEDULED.replace(
        "MultiStepLR(opt, milestones=[60, 120], gamma=0.2)", "ReduceLROnPlateau(opt)").replace("sched.step(epoch)", "sched.step(val_loss)")),
    Shape("TW502", "a project's own scheduler class with step(epoch)", _SCHEDULED.replace(
        "optim.lr_scheduler.MultiStepLR(opt, milestones=[60, 120], gamma=0.2)", "WarmupCosine(opt, warm)")),
]

# ----------------------------------------------------------------------------------- TW301 drawing the seed
# When no seed is given, Python's random draws one, which then seeds NumPy: random itself is used
# for nothing else, so it needs no seed. A later real draw from it still counts.
_DRAWN_SEED = d("""
    import random
    import numpy as np
    if args.manual_seed is None:
        args.manual_seed = random.randint(1, 10000)
    np.random.seed(args.manual_seed)
    order = np.random.permutation(n)
""")
QUIET += [
    Shape("TW301", "random draws only the seed that then seeds NumPy", _DRAWN_SEED),
    Shape("TW301", "a seed drawn into a plain name", _DRAWN_SEED.replace("args.manual_seed", "seed")),
]
FIND += [
    Shape("TW301", "the same, with a later shuffle from the unseeded random", _DRAWN_SEED + "random.shuffle(files)\n", 7),
]

# ----------------------------------------------------------------------------------- TW218 half() in a builder
# A builder function converts the network to fp16 and returns it; the caller trains it.
_BUILDER = d("""
    import torch
    import torch.nn as nn
    def make_net(width):
        net = nn.Sequential(nn.Conv2d(3, width, 3), nn.BatchNorm2d(width), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))
        net = net.to("cuda")
        net.half()
        return net
    def main():
        net = make_net(64)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x, y in batches():
            loss = nn.functional.cross_entropy(net(x.half()), y)
            loss.backward()
            opt.step()
""")
FIND += [Shape("TW218", "a speed-run builder: net.half() inside make_net(), which main() trains", _BUILDER, 6)]
QUIET += [
    Shape("TW218", "the same builder used only for inference", _BUILDER.replace(
        "        loss.backward()\n        opt.step()\n", "        print(loss)\n")),
    Shape("TW218", "a builder that converts a copy it does not return", _BUILDER.replace(
        "    net.half()\n", "    export = make_copy(net)\n    export.half()\n")),
]

# ----------------------------------------------------------------------------------- TW206 astype, then torch.tensor
# A token loader slices its shard, casts with astype (a copy), and hands that to torch.tensor (a
# second copy, with another dtype change) for every batch.
_TOKENS = d("""
    import numpy as np
    import torch
    class ShardLoader:
        def __init__(self, path, B, T):
            self.tokens, self.B, self.T, self.pos = np.memmap(path, dtype=np.uint16, mode="r"), B, T, 0
        def next_batch(self):
            buf = self.tokens[self.pos:self.pos + self.B * self.T + 1]
            buf = torch.tensor(buf.astype(np.int32), dtype=torch.long)
            self.pos += self.B * self.T
            return buf[:-1].view(self.B, self.T), buf[1:].view(self.B, self.T)
""")
FIND += [
    Shape("TW206", "a token loader's next_batch(): torch.tensor(buf.astype(np.int32), dtype=torch.long)", _TOKENS, 8),
    Shape("TW206", "per item in a loop, astype by dtype name", d("""
        import numpy as np
        import torch
        for frame in frames:
            x = torch.tensor(frame.astype("float32"))
            model(x)
    """), 4),
]
QUIET += [
    Shape("TW206", "one copy: torch.from_numpy(buf.astype(np.int64))", _TOKENS.replace(
        "torch.tensor(buf.astype(np.int32), dtype=torch.long)", "torch.from_numpy(buf.astype(np.int64))")),
    Shape("TW206", "pretrained embeddings loaded once in a config's constructor", d("""
        import numpy as np
        import torch
        class Config:
            def __init__(self, path):
                self.embedding = torch.tensor(np.load(path)["embeddings"].astype("float32"))
    """)),
]

# ----------------------------------------------------------------------------------- TW207 host copy in forward
# A module's forward copies a device tensor to the host with .cpu() ... .numpy() (to draw a flow
# image, or to score pairs for a metric) on every forward pass of the training step. A tensor
# handed to forward as it is (labels, lengths) may already be on the host: left alone.
_FLOW = d("""
    import torch
    import torch.nn as nn
    from vis import flow_to_image
    class Attend(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Conv2d(8, 8, 3, padding=1)
        def forward(self, x):
            y = self.proj(x)
            offsets = y.argmax(1, keepdim=True)
            flow = torch.from_numpy(flow_to_image(offsets.permute(0, 2, 3, 1).cpu().data.numpy()))
            return y, flow.to(x.device)
    model = Attend().cuda()
    opt = torch.optim.Adam(model.parameters())
    for x in loader:
        y, flow = model(x.cuda())
        y.mean().backward()
        opt.step()
""")
FIND += [Shape("TW207", "a module's forward draws a flow image from .cpu().data.numpy() every pass", _FLOW, 11)]
QUIET += [
    Shape("TW207", "the same copy only when a flag asks for the image", _FLOW.replace(
        "        flow = torch.from_numpy(", "        if self.visualize:\n            flow = torch.from_numpy(").replace(
        "        return y, flow.to(x.device)", "            return y, flow\n        return y, None")),
    Shape("TW207", "lengths handed to forward, copied for pack_padded_sequence (they may be on the host already)", d("""
        import torch
        import torch.nn as nn
        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.LSTM(8, 8, batch_first=True)
            def forward(self, x, lengths):
                lengths = lengths.cpu().numpy()
                packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
                return self.rnn(packed)[0]
        model = Encoder().cuda()
        opt = torch.optim.Adam(model.parameters())
        for x, n in loader:
            out, _ = nn.utils.rnn.pad_packed_sequence(model(x.cuda(), n.cuda()), batch_first=True)
            out.mean().backward()
            opt.step()
    """)),
]
